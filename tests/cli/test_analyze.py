"""`roofline analyze` in a subprocess: the CLI contract and what bad input does (issue 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.helpers import edit_topn, kernel


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "roofline_tui", *args], capture_output=True,
                          text=True, timeout=60, cwd=cwd, env=env)


def artifact(round_dir: Path) -> dict:
    return json.loads((round_dir / "profile_roofline.json").read_text())


def assert_clean_failure(proc: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout


def test_human_run_writes_both_files_and_a_table(worked_example: Path) -> None:
    proc = cli("analyze", str(worked_example))
    assert proc.returncode == 0, proc.stderr
    assert "fused_moe_kernel" in proc.stdout and "saturated" in proc.stdout
    md = (worked_example / "profile_roofline.md").read_text()
    assert "by expected gain" in md and "kernel_paged_attention_2d" in md
    data = artifact(worked_example)
    assert data["skill"] == "roofline" and data["stage"] == "A"
    assert data["ranking_by_expected_gain"][0] == "kernel_paged_attention_2d"
    assert not list(worked_example.glob(".*.tmp")), "no temp files left behind"


def test_json_flag_prints_the_artifact(worked_example: Path) -> None:
    proc = cli("analyze", str(worked_example), "--json")
    assert proc.returncode == 0
    assert json.loads(proc.stdout) == artifact(worked_example)


def test_output_is_byte_identical_across_runs(worked_example: Path) -> None:
    cli("analyze", str(worked_example))
    first = (worked_example / "profile_roofline.json").read_bytes()
    first_md = (worked_example / "profile_roofline.md").read_bytes()
    cli("analyze", str(worked_example))
    assert (worked_example / "profile_roofline.json").read_bytes() == first
    assert (worked_example / "profile_roofline.md").read_bytes() == first_md


def test_head_threshold_and_max_heads(worked_example: Path) -> None:
    assert cli("analyze", str(worked_example), "--head-threshold", "10").returncode == 0
    assert [e["short_name"] for e in artifact(worked_example)["entries"]] == ["fused_moe_kernel"]
    assert cli("analyze", str(worked_example), "--max-heads", "1").returncode == 0
    data = artifact(worked_example)
    assert len(data["entries"]) == 1 and data["degraded"] == []  # below the bar: absent


def test_device_flag_changes_the_peaks(worked_example: Path) -> None:
    assert cli("analyze", str(worked_example), "--device", "MI350X").returncode == 0
    data = artifact(worked_example)
    assert data["peaks"]["flops"]["fp8"] == pytest.approx(4.6137e15, rel=1e-3)


@pytest.mark.parametrize(
    "args",
    [["analyze"], ["analyze", "/definitely/not/here"], ["analyze", ".", "--max-heads", "x"],
     ["analyze", ".", "--peaks", "/no/such/peaks.md"], ["frobnicate"]],
)
def test_usage_errors_exit_2(args: list[str], tmp_path: Path) -> None:
    proc = cli(*args, cwd=tmp_path)
    assert proc.returncode == 2
    assert_clean_failure(proc)


BAD_TOPN = {
    "truncated": '{"top_kernels": [{"name": "fused_moe_kernel", "pct_gpu_',
    "not_json": "this is not json at all",
    "empty": "",
    "wrong_top_type": "[1, 2, 3]",
    "nan": '{"top_kernels": [{"name": "k", "pct_gpu_time": NaN}]}',
    "wrong_types": json.dumps({"top_kernels": [
        {"name": 5, "pct_gpu_time": "lots"}, "junk", None,
        {"name": "fused_moe_kernel", "pct_gpu_time": 30.0, "base_latency_ms": "fast",
         "calls_per_step": [1, 2], "shapes": "big", "editable": "yes", "avg_us": -3}]}),
}


@pytest.mark.parametrize("kind", sorted(BAD_TOPN))
def test_bad_topn_still_writes_an_artifact(worked_example: Path, kind: str) -> None:
    (worked_example / "profile_topN.json").write_text(BAD_TOPN[kind])
    proc = cli("analyze", str(worked_example))
    assert proc.returncode == 0, proc.stderr
    assert_clean_failure(proc)
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "problem" in errors[0]
    data = artifact(worked_example)
    assert data["skill_errors"], "the reason is recorded in the artifact"
    strict = cli("analyze", str(worked_example), "--strict")
    assert strict.returncode == 1


def test_missing_topn_and_env(tmp_path: Path) -> None:
    round_dir = tmp_path / "round_0"
    round_dir.mkdir()
    proc = cli("analyze", str(round_dir))
    assert proc.returncode == 0
    assert "no profile_topN.json" in proc.stderr
    data = artifact(round_dir)
    assert data["entries"] == []
    assert any("env_report.json not found" in e for e in data["skill_errors"])


def test_negative_and_zero_times_do_not_crash(worked_example: Path) -> None:
    def bad_times(d: dict) -> None:
        kernel(d, "fused_moe_kernel")["base_latency_ms"] = {"decode": 0, "prefill": -1}
        kernel(d, "fused_moe_kernel")["avg_us"] = 0
        kernel(d, "fused_moe_kernel")["total_ms"] = None
        kernel(d, "kernel_paged_attention_2d")["base_latency_ms"] = {"decode": float("inf")}

    path = worked_example / "profile_topN.json"
    data = json.loads(path.read_text())
    bad_times(data)
    path.write_text(json.dumps(data).replace("Infinity", "1e999"))
    proc = cli("analyze", str(worked_example))
    assert proc.returncode == 0
    assert_clean_failure(proc)
    out = artifact(worked_example)
    moe = next(e for e in out["entries"] if e["short_name"] == "fused_moe_kernel")
    assert moe["modeled"] is False and moe["headroom_class"] == "unknown"
    assert "per-launch time" in moe["notes"]


def test_unknown_dtype_assumes_two_bytes_with_a_note(worked_example: Path) -> None:
    cfg = worked_example.parent.parent / "config.json"
    data = json.loads(cfg.read_text())
    data.pop("quantization_config")
    data["torch_dtype"] = "float8_weird_e9m9"
    cfg.write_text(json.dumps(data))
    assert cli("analyze", str(worked_example)).returncode == 0
    out = artifact(worked_example)
    moe = next(e for e in out["entries"] if e["short_name"] == "fused_moe_kernel")
    assert moe["modeled"]
    text = json.dumps(moe)
    assert "bf16" in text or "2 B" in text


def test_kernel_names_with_escape_codes_and_markup(worked_example: Path) -> None:
    nasty = "evil_\x1b[31mred\x1b[0m_[bold]kernel[/bold]|pipe"
    edit_topn(worked_example, lambda d: d["top_kernels"].append(
        {"name": nasty, "short_name": nasty, "pct_gpu_time": 9.0, "avg_us": 50.0}))
    proc = cli("analyze", str(worked_example))
    assert proc.returncode == 0
    assert "\x1b[31m" not in proc.stdout and "\x1b" not in proc.stderr
    assert "\\x1b" in proc.stdout  # shown, not executed
    md = (worked_example / "profile_roofline.md").read_text()
    assert "\x1b" not in md and "\\|pipe" in md
    data = artifact(worked_example)
    assert any(e["name"] == nasty for e in data["entries"]), "the artifact keeps the raw name"


def test_core_never_imports_textual() -> None:
    code = (
        "import sys, pkgutil, importlib, roofline_tui.core as c\n"
        "for m in pkgutil.walk_packages(c.__path__, 'roofline_tui.core.'):\n"
        "    importlib.import_module(m.name)\n"
        "import roofline_tui.cli.analyze\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'matplotlib')]\n"
        "print(bad)\n"
        "assert not bad, bad\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
