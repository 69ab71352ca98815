"""Issue 16, the injection sweep: one hostile kernel name (OSC 52 clipboard write, a screen
clear, a bidi override, Rich markup, a table pipe, matplotlib math, a lone surrogate) and a
hostile round directory name go through the whole pipeline as a user runs it —
``import torch`` → ``analyze --plot`` → ``rounds`` / ``rounds --json`` → ``playbook`` — and
no byte a terminal would act on reaches any output raw: stdout, stderr, the Top-N json+md,
the artifact json+md, the svg, the playbook. Rich markup is shown literally, never applied.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from roofline_tui.importers.synth import MOE, SynthSpec, synthetic_trace
from tests.paths import DEMO

HOSTILE = "[bold red]pwn|ed$_$\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202e\ud800\x9b"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def cli(*args: str | os.PathLike) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, COLUMNS="220", TERM="xterm-256color")
    return subprocess.run([sys.executable, "-m", "roofline_tui", *map(os.fsdecode, args)],
                          capture_output=True, timeout=180, env=env)


def assert_clean(what: str, data: bytes) -> str:
    text = data.decode("utf-8")  # every output is valid UTF-8
    bad = RAW.search(text.replace("\n", "").replace("\t", ""))
    assert bad is None, f"{what} holds {bad.group()!r} raw: …{text[max(bad.start() - 40, 0):bad.start() + 40]!r}…"
    assert "Traceback" not in text, f"{what}: {text[-800:]}"
    return text


def assert_run(what: str, proc: subprocess.CompletedProcess[bytes], ok: tuple[int, ...] = (0,)
               ) -> str:
    out = assert_clean(f"{what} stdout", proc.stdout)
    err = assert_clean(f"{what} stderr", proc.stderr)
    assert proc.returncode in ok, f"{what} exit {proc.returncode}: {err[-600:]}"
    return out + err


def hostile_trace(path: Path, scale: float) -> None:
    doc = synthetic_trace(SynthSpec(prefill_steps=1, decode_steps=3, layers=2))
    for ev in doc["traceEvents"]:
        if ev.get("cat") == "kernel" and ev.get("name") == MOE:
            ev["name"] = HOSTILE
            ev["dur"] = ev["dur"] * scale
    path.write_text(json.dumps(doc))  # the lone surrogate travels as a "\ud800" escape


@pytest.mark.slow
def _no_constant(where: Path) -> Callable[[str], object]:
    """A ``parse_constant`` hook: NaN or Infinity in a written JSON file fails the test."""
    def refuse(token: str) -> object:
        pytest.fail(f"{token} in {where}")
    return refuse


def test_one_hostile_name_through_every_output(tmp_path: Path) -> None:
    # runs once the cli/ package (sanitised "wrote" lines, literal rounds labels) is in the tree
    pytest.importorskip("roofline_tui.cli.args")
    ev = tmp_path / "eval"
    (ev / "profile").mkdir(parents=True)
    shutil.copy(DEMO / "env_report.json", ev / "env_report.json")
    shutil.copy(DEMO / "config.json", ev / "config.json")
    rounds = [ev / "profile" / "round_0",
              ev / "profile" / os.fsdecode(b"round_1\xff\x1b]0;title\x07")]
    files: list[Path] = []
    for i, rnd in enumerate(rounds):
        trace = tmp_path / f"trace{i}.json"
        hostile_trace(trace, 1.0 if i == 0 else 0.6)
        text = assert_run(f"import round {i}", cli("import", "torch", trace, "--out", rnd))
        assert "pwn" in text or (rnd / "profile_topN.json").exists()
        files += [rnd / "profile_topN.json", rnd / "profile_topN.md"]
        assert_run(f"analyze round {i}", cli("analyze", rnd, "--plot"), ok=(0,))
        files += [rnd / "profile_roofline.json", rnd / "profile_roofline.md"]
        if (rnd / "profile_roofline.svg").exists():
            files.append(rnd / "profile_roofline.svg")
        art = json.loads((rnd / "profile_roofline.json").read_text(encoding="utf-8"))
        assert any("pwn" in e["short_name"] for e in art["entries"])
    text = assert_run("rounds", cli("rounds", ev / "profile"))
    assert "[bold red]" in text, "Rich markup in a name must be shown, not applied"
    assert_run("rounds --json", cli("rounds", ev / "profile", "--json"))
    book = tmp_path / "playbook.md"
    assert_run("playbook", cli("playbook", ev / "profile", "--out", book), ok=(0, 1))
    if book.exists():
        files.append(book)
    for f in files:
        assert_clean(f.name, f.read_bytes())
        if f.suffix == ".json":
            json.loads(f.read_bytes(), parse_constant=_no_constant(f))
