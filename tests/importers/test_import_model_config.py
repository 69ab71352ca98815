"""Issue 32 item 2: `import` takes the served model's config (`--model-config FILE`, or
`--model ORG/NAME` from the local Hugging Face cache) and copies it into the round with where
it came from, so `analyze` needs no hand step: the vLLM gpt-oss trace's two MoE kernels get
verdicts from the round alone."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from roofline_tui.importers.synth import SynthSpec, synthetic_trace
from tests.core.test_model_lookup import make_cache
from tests.paths import REAL_FORMATS, REPO_ROOT, need

from .conftest import run_cli

WILD = REAL_FORMATS / "wild"
EXECUTION = WILD / "tracelens_vllm_decode_full_graph_execution.json.gz"
CAPTURE = WILD / "tracelens_vllm_decode_full_graph_capture.pt.trace.json.gz"
GPT_OSS = REAL_FORMATS / "configs" / "gpt-oss-20b" / "config.json"
QWEN3 = REAL_FORMATS / "configs" / "Qwen3-8B" / "config.json"


def analyze(round_dir: Path) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(round_dir)],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=180)
    assert done.returncode == 0, done.stderr
    loaded: dict[str, object] = json.loads((round_dir / "profile_roofline.json").read_text())
    return loaded


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(synthetic_trace(SynthSpec())))
    return path


def test_the_gpt_oss_trace_imports_with_its_model_from_the_hf_cache(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    raw = need(GPT_OSS).read_bytes()
    cache = tmp_path / "hf"
    cache.mkdir()
    make_cache(cache, "openai/gpt-oss-20b", raw)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    out = tmp_path / "round_1"
    done = run_cli("torch", need(EXECUTION), "--capture", need(CAPTURE), "--out", out,
                   "--model", "openai/gpt-oss-20b")
    assert done.returncode == 0, done.stderr
    assert "copied the model config into" in done.stdout
    assert "no model config.json found" not in done.stdout
    assert (out / "config.json").read_bytes() == raw
    source = json.loads((out / "config.source.json").read_text())
    assert source["sha256"] == hashlib.sha256(raw).hexdigest()
    assert source["how"].startswith("--model openai/gpt-oss-20b")
    monkeypatch.delenv("HF_HUB_CACHE")  # analyze needs nothing but the round now
    art = analyze(out)
    moe = [e for e in art["entries"]  # type: ignore[attr-defined]
           if e["short_name"].startswith("_matmul_ogs_")]
    assert len(moe) == 2
    for e in moe:
        assert e["roofline_pct"] is not None and e["attainable_speedup"] is not None, e
    assert "--model openai/gpt-oss-20b" in art["inputs"]["model_config_from"]  # type: ignore[index]


def test_model_config_file_is_copied_and_an_existing_one_kept(tmp_path: Path,
                                                              trace: Path) -> None:
    raw = need(QWEN3).read_bytes()
    out = tmp_path / "r"
    done = run_cli("torch", trace, "--out", out, "--model-config", QWEN3)
    assert done.returncode == 0, done.stderr
    assert (out / "config.json").read_bytes() == raw
    assert json.loads((out / "config.source.json").read_text())["copied_from"] == str(QWEN3)
    # a config already in the round is never replaced, even with --force for the Top-N
    (out / "config.json").write_text('{"mine": true}')
    again = run_cli("torch", trace, "--out", out, "--force", "--model-config", QWEN3)
    assert again.returncode == 0, again.stderr
    assert "kept the existing" in again.stdout
    assert (out / "config.json").read_text() == '{"mine": true}'


def test_a_model_not_in_the_cache_or_a_file_that_is_no_config_writes_nothing(
        tmp_path: Path, trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "hf"
    empty.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(empty))
    out = tmp_path / "r"
    done = run_cli("torch", trace, "--out", out, "--model", "org/absent-model")
    assert done.returncode == 1 and len(done.stderr.strip().splitlines()) == 1
    assert "--model org/absent-model" in done.stderr and "--model-config FILE" in done.stderr
    assert not (out / "profile_topN.json").exists()
    junk = tmp_path / "junk.json"
    junk.write_text('{"hello": 1}')
    done = run_cli("torch", trace, "--out", out, "--model-config", junk)
    assert done.returncode == 1 and "junk.json" in done.stderr
    assert not (out / "profile_topN.json").exists()
    both = run_cli("torch", trace, "--out", out, "--model-config", junk, "--model", "a/b")
    assert both.returncode == 2


def test_without_a_model_the_note_says_which_option_to_give(tmp_path: Path,
                                                            trace: Path) -> None:
    done = run_cli("torch", trace, "--out", tmp_path / "r")
    assert done.returncode == 0, done.stderr
    note = next(line for line in done.stdout.splitlines() if "no model config.json" in line)
    assert "--model ORG/NAME" in note and "--model-config FILE" in note
