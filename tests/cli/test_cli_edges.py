"""Issue 22, the command line's edges, each in a subprocess as a user runs it: a reader that
goes away (``| head -1``), an output that cannot hold UTF-8, ``analyze`` pointed at a profile
directory, an unknown ``--device``, paths with a space, and the next target as the last line."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.paths import DEMO, REPO_ROOT, WILD_FIXTURES

from .helpers import one_line, roofline

NON_ASCII = "fused_moe_kernel_é∑漢"


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """The bundled demo (env_report.json, config.json, profile/round_*) under a directory whose
    name has a space; returns its profile/ directory."""
    dst = tmp_path / "my eval"
    shutil.copytree(DEMO, dst, ignore=shutil.ignore_patterns("profile_roofline.*"))
    return dst / "profile"


def closed_pipe_run(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``roofline ARGS`` with stdout a pipe whose reader has already gone: what ``| head -1``
    does to every write after the first line, from the very first write."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "roofline_tui", *map(str, args)],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120,
                              cwd=REPO_ROOT, env=dict(os.environ, COLUMNS="200"))
    finally:
        os.close(write_end)


# -- a reader that goes away --------------------------------------------------------------------

@pytest.mark.parametrize("command", ["analyze", "analyze --json", "rounds", "rounds --json",
                                     "playbook --dry-run", "schema", "schema --topn", "import",
                                     "--help"])
def test_a_closed_stdout_is_a_normal_exit(demo_copy: Path, tmp_path: Path, command: str) -> None:
    name, *flags = command.split()
    if name == "analyze":
        args: list[str | Path] = [name, demo_copy / "round_0", *flags]
    elif name in ("rounds", "playbook"):
        args = [name, demo_copy, *flags]
    elif name == "import":
        args = [name, "nsys", WILD_FIXTURES / "doc_nsys2025.3.2_armv8_cuda_gpu_kern_sum_stdout.csv",
                "--out", tmp_path / "imported round"]
    else:
        args = [name, *flags]
    done = closed_pipe_run(*args)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr
    if name == "analyze":  # the files are still written: only the reader went away
        assert (demo_copy / "round_0" / "profile_roofline.json").is_file()


def test_head_one_reads_the_first_line_and_the_command_exits_0(demo_copy: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "roofline_tui", "schema"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO_ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what head does after its one line
    rc = proc.wait(timeout=120)
    err = proc.stderr.read().decode()
    assert first.strip() == b"{" and rc == 0 and "Traceback" not in err


# -- an output that cannot hold UTF-8 -------------------------------------------------------------

def _rename_first_kernel(round_dir: Path, name: str) -> None:
    path = round_dir / "profile_topN.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["top_kernels"][0]["name"] = data["top_kernels"][0]["short_name"] = name
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


@pytest.mark.parametrize("env", [{"PYTHONIOENCODING": "ascii"},
                                 {"LC_ALL": "C", "LANG": "C", "PYTHONIOENCODING": "",
                                  "PYTHONUTF8": "0"}])
def test_non_ascii_names_on_an_ascii_stdout_are_escaped(demo_copy: Path,
                                                        env: dict[str, str]) -> None:
    r = demo_copy / "round_0"
    _rename_first_kernel(r, NON_ASCII)
    done = roofline("analyze", r, env=env)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "UnicodeEncodeError" not in done.stderr
    stored = json.loads((r / "profile_roofline.json").read_text(encoding="utf-8"))
    assert NON_ASCII in stored["ranking_by_pct"]
    if env.get("PYTHONIOENCODING") == "ascii":  # (a C locale may still read as UTF-8: PEP 538)
        assert "fused_moe_kernel_\\xe9\\u2211\\u6f22" in done.stdout
        assert "·" not in done.stdout and "gfx950 . stage A" in done.stdout  # our glyphs as ASCII
    # --json: still one JSON document, the same value as the file (\\uXXXX escapes)
    as_json = roofline("analyze", r, "--json", env=env)
    assert as_json.returncode == 0 and "Traceback" not in as_json.stderr
    assert json.loads(as_json.stdout) == json.loads(
        (r / "profile_roofline.json").read_text(encoding="utf-8"))


# -- analyze on a profile directory -------------------------------------------------------------

def test_analyze_on_a_profile_directory_names_its_rounds_and_writes_nothing(
        demo_copy: Path) -> None:
    before = sorted(p.relative_to(demo_copy) for p in demo_copy.rglob("*"))
    done = roofline("analyze", demo_copy)
    assert done.returncode == 2
    line = one_line(done)
    assert "is a profile directory (3 rounds: round_0, round_1, round_2), not a round" in line
    # the suggested commands are shell-quoted: the path has a space
    suggested = line.split("`")
    assert shlex.split(suggested[1]) == ["roofline", "analyze", str(demo_copy / "round_2")]
    assert shlex.split(suggested[3]) == ["roofline", "dash", str(demo_copy)]
    assert sorted(p.relative_to(demo_copy) for p in demo_copy.rglob("*")) == before
    assert done.stdout == ""


def test_a_round_directory_is_still_analysed(demo_copy: Path, tmp_path: Path) -> None:
    assert roofline("analyze", demo_copy / "round_1").returncode == 0
    empty = tmp_path / "round_7"  # no Top-N and no rounds inside: the empty artifact, as before
    empty.mkdir()
    assert roofline("analyze", empty).returncode == 0


# -- --device -------------------------------------------------------------------------------------

def test_an_unknown_device_is_a_usage_error_naming_the_near_ones(demo_copy: Path) -> None:
    r = demo_copy / "round_0"
    done = roofline("analyze", r, "--device", "MI355")
    assert done.returncode == 2
    line = one_line(done)
    assert "--device 'MI355' matches no product or arch in the bundled peaks.md" in line
    assert "did you mean mi355x" in line
    assert not (r / "profile_roofline.json").exists()
    far = one_line(roofline("analyze", r, "--device", "zzzz"))
    assert "the table knows the archs" in far and "gfx950" in far and "sm_90" in far
    assert "`roofline devices` lists" in far
    # a product, an alias spelling and an arch all match
    for device in ("MI355X", "AMD Instinct MI355X", "gfx950"):
        assert roofline("analyze", r, "--device", device).returncode == 0, device


def test_every_command_with_sources_refuses_an_unknown_device(demo_copy: Path) -> None:
    """rounds, playbook and dash take the same SOURCES as analyze, so the same refusal (exit 2,
    the near names) before anything is read or written; dash is refused before Textual
    starts."""
    cmds: list[list[str | Path]] = [
        ["rounds", demo_copy], ["playbook", demo_copy, "--dry-run"], ["dash", demo_copy]]
    for cmd in cmds:
        done = roofline(*cmd, "--device", "H2000")
        assert done.returncode == 2, cmd
        assert "did you mean h200" in one_line(done), cmd


# -- the next target: the last line, and in the JSON ----------------------------------------------

def test_the_next_target_is_the_last_line_and_in_the_artifact(demo_copy: Path) -> None:
    r = demo_copy / "round_2"
    done = roofline("analyze", r, "--csv")
    assert done.returncode == 0, done.stderr
    last = done.stdout.splitlines()[-1]
    stored = json.loads((r / "profile_roofline.json").read_text(encoding="utf-8"))
    assert last == stored["next_target"]["line"]
    # the line names the artifact's pick first (the host-side hipBLASLt GEMM); the saturated
    # MoE ranks below it in the gain ranking, so it is neither named nor skipped (issue 31)
    assert last.startswith("Next (advisory, stage A): Cijk_")
    assert "fused_moe_kernel" not in last
    assert stored["next_target"]["short_name"].startswith("Cijk_")
    md = (r / "profile_roofline.md").read_text(encoding="utf-8").splitlines()
    assert md[2].startswith("**Next (advisory, stage A): Cijk_")
    csv_text = (r / "profile_roofline.csv").read_text(encoding="utf-8")
    assert csv_text.splitlines()[0].endswith(",next_target")
    assert ",next (host-side)" in csv_text and ",skipped: saturated" not in csv_text


def test_devices_lists_the_table_with_its_roofs() -> None:
    """`roofline devices` lists what --device accepts: MI300X's bf16 roof is the measured
    668.4 TFLOP/s ceiling (starred), its fp8 the data sheet's 2,614.9 (not starred)."""
    done = roofline("devices")
    assert done.returncode == 0, done.stderr
    row = next(line for line in done.stdout.splitlines() if line.startswith("mi300x "))
    assert "668.4 *" in row and "2,614.9" in row and "2,614.9 *" not in row
    assert "measured matmul ceiling" in done.stdout.splitlines()[-1]


def test_the_summary_names_the_problem_a_user_can_fix_first() -> None:
    from roofline_tui.cli.analyze import actionable_first

    problems = ["fused_recurrent: no byte/FLOP model for this kernel",
                "model config.json not found: MoE/attention heads cannot be modelled",
                "env_report.json not found: gfx and workload unknown"]
    assert actionable_first(problems).startswith("env_report.json")  # the device comes first
    assert actionable_first(problems[:2]).startswith("model config.json")
    assert actionable_first(problems[:1]) == problems[0]
