"""Issue 32 item 2, the look-up: without `--model`/`--model-config`, `import` and `ingest` find
the served model from what the trace records (a field naming it, the nn.Module classes of the
Top-N and the capture traces, the GEMM weight dims) in the local Hugging Face cache, offline,
and copy it into the round only when exactly one cached config agrees with that evidence."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.core.model_config import normalize_config
from roofline_tui.importers.model_search import (
    Evidence,
    Weight,
    agreement,
    arch_seen,
    look_up,
    module_classes,
    named_model,
)
from tests.core.test_model_lookup import make_cache
from tests.paths import REAL_FORMATS, REPO_ROOT, need

from .conftest import run_cli

WILD = REAL_FORMATS / "wild"
CONFIGS = REAL_FORMATS / "configs"
VLLM = WILD / "tracelens_vllm_decode_full_graph_execution.json.gz"
VLLM_CAPTURE = WILD / "tracelens_vllm_decode_full_graph_capture.pt.trace.json.gz"
SGLANG = WILD / "tracelens_sglang_qwen3-8b_decode.json.gz"
SGLANG_CAPTURE = WILD / "tracelens_sglang_MI300X_decode_graph_capture_bs32_rank0.json.gz"
H100 = WILD / "tracelens_h100_qwen1.5-0.5b.json.gz"
GPT_OSS = CONFIGS / "gpt-oss-20b" / "config.json"
QWEN3 = CONFIGS / "Qwen3-8B" / "config.json"
QWEN15 = CONFIGS / "Qwen1.5-0.5B-Chat" / "config.json"


def edited(path: Path, **changes: Any) -> bytes:
    raw = json.loads(need(path).read_text())
    raw.update(changes)
    return json.dumps(raw, indent=2).encode()


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "hf"
    root.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    return root


def analyze(round_dir: Path) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(round_dir)],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=180)
    assert done.returncode == 0, done.stderr
    loaded: dict[str, Any] = json.loads((round_dir / "profile_roofline.json").read_text())
    return loaded


def moe_entries(art: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in art["entries"] if e["short_name"].startswith("_matmul_ogs_")]


def note_of(stdout: str) -> str:
    return next(line for line in stdout.splitlines() if "no model config.json" in line)


# --------------------------------------------------------------------------- the commands


def test_the_vllm_gpt_oss_trace_finds_its_config_and_not_the_decoy(
        tmp_path: Path, cache: Path) -> None:
    """The architecture comes from the capture trace (GptOssForCausalLM), the dims from the
    GEMM weights: a decoy of the same architecture with another hidden size is not taken, and
    both MoE kernels get verdicts from the round alone."""
    raw = need(GPT_OSS).read_bytes()
    make_cache(cache, "openai/gpt-oss-20b", raw)
    make_cache(cache, "openai/gpt-oss-120b", edited(GPT_OSS, hidden_size=4096))
    out = tmp_path / "round_1"
    done = run_cli("torch", need(VLLM), "--capture", need(VLLM_CAPTURE), "--out", out)
    assert done.returncode == 0, done.stderr
    assert "copied the model config into" in done.stdout
    assert "no model config.json" not in done.stdout
    assert (out / "config.json").read_bytes() == raw
    source = json.loads((out / "config.source.json").read_text())
    assert source["how"].startswith("looked up in the Hugging Face cache: openai/gpt-oss-20b")
    assert "hidden_size 2880" in source["how"]
    evidence = "\n".join(source["evidence"])
    assert "GptOssForCausalLM in capture trace " + VLLM_CAPTURE.name in evidence
    assert "qkv projection 5120" in evidence and "vocab_size 201088" in evidence
    assert "not taken: openai/gpt-oss-120b (hidden_size 4096, the trace's is 2880)" in evidence
    art = analyze(out)
    moe = moe_entries(art)
    assert len(moe) == 2
    for e in moe:
        assert e["roofline_pct"] is not None and e["attainable_speedup"] is not None, e
        assert not e["suspect"], e
    assert "looked up" in art["inputs"]["model_config_from"]


def test_two_configs_that_both_agree_copy_nothing_and_are_named(tmp_path: Path,
                                                                cache: Path) -> None:
    raw = need(GPT_OSS).read_bytes()
    make_cache(cache, "openai/gpt-oss-20b", raw)
    make_cache(cache, "someone/gpt-oss-20b-copy", edited(GPT_OSS, _name_or_path="copy"))
    out = tmp_path / "r"
    done = run_cli("torch", need(VLLM), "--capture", need(VLLM_CAPTURE), "--out", out)
    assert done.returncode == 0, done.stderr
    assert not (out / "config.json").exists() and not (out / "config.source.json").exists()
    note = note_of(done.stdout)
    assert "openai/gpt-oss-20b" in note and "someone/gpt-oss-20b-copy" in note
    assert "2 cached GptOssForCausalLM configs agree" in note
    assert "--model ORG/NAME" in note and "--model-config FILE" in note


def test_no_config_of_the_architecture_says_so(tmp_path: Path, cache: Path) -> None:
    make_cache(cache, "Qwen/Qwen3-8B", need(QWEN3).read_bytes())
    out = tmp_path / "r"
    done = run_cli("torch", need(VLLM), "--capture", need(VLLM_CAPTURE), "--out", out)
    assert done.returncode == 0, done.stderr
    assert not (out / "config.json").exists()
    note = note_of(done.stdout)
    assert "(1 model(s))" in note and "GptOssForCausalLM" in note
    # the same class but dims that disagree: named with the first conflict
    make_cache(cache, "openai/gpt-oss-120b", edited(GPT_OSS, num_local_experts=128))
    done = run_cli("torch", need(VLLM), "--capture", need(VLLM_CAPTURE), "--out", out,
                   "--force")
    assert done.returncode == 0, done.stderr
    assert not (out / "config.json").exists()
    note = note_of(done.stdout)
    assert "no cached GptOssForCausalLM config agrees" in note
    assert "openai/gpt-oss-120b: aten::addmm weight K=2880 N=32" in note


def test_the_h100_trace_names_its_model_and_shows_its_class(
        tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The trace's metadata.experiment.repo_id names Qwen/Qwen1.5-0.5B-Chat: taken first.
    Without that repo in the cache, the module paths (Qwen2Model/Qwen2DecoderLayer/...) and
    the GEMM weights find the same dims under another name, and say the named one was not
    there."""
    raw = need(QWEN15).read_bytes()
    make_cache(cache, "Qwen/Qwen1.5-0.5B-Chat", raw)
    out = tmp_path / "named"
    done = run_cli("torch", need(H100), "--out", out)
    assert done.returncode == 0, done.stderr
    assert (out / "config.json").read_bytes() == raw
    source = json.loads((out / "config.source.json").read_text())
    assert source["how"].startswith("looked up: the trace's metadata.experiment.repo_id of "
                                    f"{H100.name} names Qwen/Qwen1.5-0.5B-Chat")
    assert "intermediate_size 2816" in source["how"]

    other = tmp_path / "hf2"
    other.mkdir()
    make_cache(other, "Qwen/Qwen1.5-0.5B", raw)
    make_cache(other, "Qwen/Qwen3-8B", need(QWEN3).read_bytes())
    monkeypatch.setenv("HF_HUB_CACHE", str(other))
    out = tmp_path / "by_class"
    done = run_cli("torch", H100, "--out", out)
    assert done.returncode == 0, done.stderr
    assert (out / "config.json").read_bytes() == raw
    source = json.loads((out / "config.source.json").read_text())
    assert source["how"].startswith("looked up in the Hugging Face cache: Qwen/Qwen1.5-0.5B,")
    evidence = "\n".join(source["evidence"])
    assert "names Qwen/Qwen1.5-0.5B-Chat: Qwen/Qwen1.5-0.5B-Chat is not in the" in evidence
    assert "architecture Qwen2ForCausalLM: Qwen2Model in the Top-N's module paths" in evidence
    assert "hidden_size 1024: the one dim all 3 GEMM weight shape(s)" in evidence


def test_the_sglang_trace_finds_qwen3_from_its_capture(tmp_path: Path, cache: Path) -> None:
    raw = need(QWEN3).read_bytes()
    make_cache(cache, "Qwen/Qwen3-8B", raw)
    make_cache(cache, "Qwen/Qwen3-4B", edited(QWEN3, hidden_size=2560, intermediate_size=9728))
    make_cache(cache, "Qwen/Qwen1.5-0.5B-Chat", need(QWEN15).read_bytes())
    out = tmp_path / "r"
    done = run_cli("torch", need(SGLANG), "--capture", need(SGLANG_CAPTURE), "--out", out)
    assert done.returncode == 0, done.stderr
    assert (out / "config.json").read_bytes() == raw
    source = json.loads((out / "config.source.json").read_text())
    assert "Qwen3Model in capture trace" in "\n".join(source["evidence"])


def test_a_config_already_in_the_round_is_kept_and_nothing_looked_up(
        tmp_path: Path, cache: Path) -> None:
    make_cache(cache, "openai/gpt-oss-20b", need(GPT_OSS).read_bytes())
    out = tmp_path / "r"
    out.mkdir()
    (out / "config.json").write_text('{"mine": true}')
    done = run_cli("torch", need(VLLM), "--capture", need(VLLM_CAPTURE), "--out", out)
    assert done.returncode == 0, done.stderr
    assert (out / "config.json").read_text() == '{"mine": true}'
    assert not (out / "config.source.json").exists()
    # one beside an env_report.json above the round (where analyze finds it) is kept too
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "env_report.json").write_text('{"gfx": "gfx942"}')
    (profile / "config.json").write_bytes(need(GPT_OSS).read_bytes())
    done = run_cli("torch", need(VLLM), "--capture", need(VLLM_CAPTURE), "--out",
                   profile / "round_1")
    assert done.returncode == 0, done.stderr
    assert not (profile / "round_1" / "config.json").exists()
    assert "no model config.json" not in done.stdout


def ingest(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "roofline_tui", "ingest", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)


def test_ingest_looks_the_model_up_for_each_round(
        tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = need(GPT_OSS).read_bytes()
    make_cache(cache, "openai/gpt-oss-20b", raw)
    make_cache(cache, "openai/gpt-oss-120b", edited(GPT_OSS, hidden_size=4096))
    d, prof = tmp_path / "traces", tmp_path / "prof"
    (d / "capture_traces").mkdir(parents=True)
    (d / need(VLLM).name).symlink_to(VLLM)
    # the vLLM layout: capture_traces/graph_capture_rank_<r>.pt.trace.json.gz
    (d / "capture_traces" / "graph_capture_rank_0.pt.trace.json.gz").symlink_to(
        need(VLLM_CAPTURE))
    done = ingest(d, "--out", prof, "--once", "--settle", "0.2")
    assert done.returncode == 0, done.stderr
    (r,) = [p for p in prof.iterdir() if p.name.startswith("round_")]
    assert (r / "config.json").read_bytes() == raw
    assert json.loads((r / "config.source.json").read_text())["how"].startswith(
        "looked up in the Hugging Face cache: openai/gpt-oss-20b")
    art = json.loads((r / "profile_roofline.json").read_text())
    assert all(e["roofline_pct"] is not None for e in moe_entries(art))
    # an empty cache: the round has no config, and one line says what to give
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(empty))
    done = ingest(d, "--out", tmp_path / "prof2", "--once", "--settle", "0.2")
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "no model config.json" in line]
    assert len(lines) == 1 and "--model ORG/NAME" in lines[0], done.stderr


# --------------------------------------------------------------------------- the parts


def test_an_architecture_is_seen_as_itself_or_its_own_stack() -> None:
    classes = {"Qwen2Model": "paths", "Qwen2MLP": "paths", "GraphModule": "capture"}
    assert arch_seen("Qwen2ForCausalLM", classes) == "Qwen2Model in paths"
    assert arch_seen("Qwen3ForCausalLM", {"Qwen2MLP": "x"}) is None  # an MLP names no model
    assert arch_seen("Qwen2MoeForCausalLM", classes) is None
    assert arch_seen("GptOssForCausalLM", {"GptOssForCausalLM": "c"}) == "GptOssForCausalLM in c"
    assert arch_seen("Gemma3ForConditionalGeneration",
                     {"Gemma3ForCausalLM": "c"}) == "Gemma3ForCausalLM in c"


def test_module_classes_of_a_capture_trace_across_chunk_ends(tmp_path: Path) -> None:
    events = [{"ph": "X", "cat": "python_function", "name": f"nn.Module: {n}_{i}"}
              for i, n in enumerate(["GptOssForCausalLM", "GraphModule", "GraphModule"])]
    pad = [{"name": "x" * 997}] * 3000  # pushes the names across several 1 MiB chunks
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"traceEvents": pad + events[:1] + pad + events[1:]}))
    assert module_classes(path, [1 << 30]) == ["GptOssForCausalLM", "GraphModule"]
    assert module_classes(path, [1000]) == []  # the byte budget is spent before any name
    assert module_classes(tmp_path / "absent.json", [1 << 30]) == []


def test_a_header_field_names_the_model() -> None:
    assert named_model({"metadata": {"experiment": {"repo_id": "Qwen/Qwen1.5-0.5B-Chat"}}}) == (
        "Qwen/Qwen1.5-0.5B-Chat", "metadata.experiment.repo_id")
    assert named_model({"served_model_name": "org/m"}) == ("org/m", "served_model_name")
    assert named_model({"metadata": "not a mapping", "model": ""}) is None


def _gpt_oss_shape(**changes: Any) -> Any:
    raw = json.loads(need(GPT_OSS).read_text())
    raw.update(changes)
    return normalize_config(raw)


def test_the_dims_agree_at_the_tensor_parallel_degree_the_trace_allows() -> None:
    shape = _gpt_oss_shape()
    # rank 0 of TP 2: qkv (64 + 2 * 8) * 64 / 2 = 2560, attention output 2048, vocab / 2
    weights = [Weight(2880, 2560, "aten::addmm"), Weight(2048, 2880, "aten::addmm"),
               Weight(2880, 100544, "aten::mm"), Weight(2880, 32, "aten::addmm")]
    ev = Evidence(hidden=2880, weights=weights, world_size=2)
    got = agreement(shape, ev)
    assert got.ok and got.tp == 2, got
    assert "qkv projection 2560" in got.agreed and "MoE router (num_experts) 32" in got.agreed
    # a world size of 1 allows no split: the same weights are no widths of the config
    one = agreement(shape, Evidence(hidden=2880, weights=weights, world_size=1))
    assert not one.ok and "2560 is no width of this config" in one.conflicts[0]
    # another expert count: the router's width tells the two models apart
    assert not agreement(_gpt_oss_shape(num_local_experts=128), ev).ok
    # the hidden size alone is not enough
    alone = agreement(shape, Evidence(hidden=2880))
    assert not alone.ok and alone.conflicts == ["nothing but the hidden size to compare"]
    assert not agreement(shape, Evidence()).ok


def test_a_named_model_whose_config_disagrees_is_not_taken(tmp_path: Path,
                                                           cache: Path) -> None:
    """A trace field naming a model is evidence of the name, not of the dims: when the cached
    config of that name contradicts the trace's shapes, nothing is chosen."""
    make_cache(cache, "org/named", edited(GPT_OSS, hidden_size=4096))
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"metadata": {"model": "org/named"}, "traceEvents": []}))
    doc = {"top_kernels": [{"x_roofline": {"instances": [
        {"op": "aten::mm", "args": [{"dims": [32, 2880]}, {"dims": [2880, 201088]}]},
        {"op": "aten::linear", "args": [{"dims": [32, 2880]}, {"dims": [5120, 2880]}]}]}}]}
    got = look_up(doc, traces=[trace])
    assert got.choice is None
    assert "the trace's metadata.model of t.json names org/named, but its config disagrees" \
        in got.reason and "hidden_size 4096, the trace's is 2880" in got.reason
    # the same name with dims that agree is taken, and says which field named it
    make_cache(cache, "org/right", need(GPT_OSS).read_bytes())
    trace.write_text(json.dumps({"metadata": {"model": "org/right"}, "traceEvents": []}))
    got = look_up(doc, traces=[trace])
    assert got.choice is not None and got.choice.data == GPT_OSS.read_bytes()
    assert got.choice.how.startswith("looked up: the trace's metadata.model of t.json names "
                                     "org/right; its dims agree (hidden_size 2880, vocab_size")


def test_a_top_n_without_evidence_looks_up_nothing(cache: Path) -> None:
    make_cache(cache, "openai/gpt-oss-20b", need(GPT_OSS).read_bytes())
    got = look_up({"top_kernels": [{"name": "k"}]})
    assert got.choice is None and "records no nn.Module class" in got.reason
    assert look_up({}).choice is None
