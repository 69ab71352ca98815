"""``roofline playbook`` / ``roofline rounds`` / ``analyze --priors`` as real subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.core.rounds.conftest import ATTN, MOE, read


def roofline(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "roofline_tui", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_playbook_cli_end_to_end(profile: Path, tmp_path: Path) -> None:
    p = roofline("playbook", str(profile), "--priors-out", "priors.json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    book = tmp_path / "knowledge" / "backend_playbook.md"  # the default --out, under cwd
    text = book.read_text()
    assert text.count("| pv-") == 2 and MOE in text and ATTN in text
    assert "2 row(s) appended" in p.stdout and "moe" in p.stdout
    priors = read(tmp_path / "priors.json")
    assert priors["schema"] == "roofline-priors-v1"
    assert abs(priors["target_eff"]["moe"] - 0.9223) < 1e-3

    again = roofline("playbook", str(profile), cwd=tmp_path)
    assert again.returncode == 0 and "0 row(s) appended, 2 already present" in again.stdout
    assert book.read_text() == text

    a = roofline("analyze", str(profile / "round_0"), "--json", "--priors", "priors.json",
                 cwd=tmp_path)
    assert a.returncode == 0, a.stderr
    art = json.loads(a.stdout)
    assert "priors.json" in art["target_eff_source"]
    moe = next(e for e in art["entries"] if e["name"] == MOE)
    assert abs(moe["target_eff"] - 0.9223) < 1e-3


def test_rounds_cli_json(four_rounds: Path, tmp_path: Path) -> None:
    p = roofline("rounds", str(four_rounds), "--json", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert [r["label"] for r in doc["rounds"]] == [0, 1, 2, 3]
    assert doc["rounds"][3]["contradictions"] == 1
    assert any(k["name"] == MOE and len(k["points"]) == 4 for k in doc["kernels"])
    table = roofline("rounds", str(four_rounds), cwd=tmp_path)
    assert table.returncode == 0 and "CONTRADICTION" in table.stdout
    one = roofline("rounds", str(four_rounds), "--kernel", ATTN, cwd=tmp_path)
    assert one.returncode == 0 and "under_ceiling" in one.stdout


def test_cli_usage_errors(profile: Path, tmp_path: Path) -> None:
    nothing = tmp_path / "empty"
    nothing.mkdir()
    p = roofline("playbook", str(nothing), cwd=tmp_path)
    assert p.returncode == 2 and "no round_* directories" in p.stderr
    p = roofline("playbook", str(profile / "round_0"), cwd=tmp_path)
    assert p.returncode == 2 and "pass its parent" in p.stderr
    p = roofline("rounds", str(tmp_path / "missing"), cwd=tmp_path)
    assert p.returncode == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"moe": "high"}')
    # a bad priors file is not a usage error: the built-in priors, the reason recorded
    # (tests/cli/test_surroundings.py)
    p = roofline("analyze", str(profile / "round_0"), "--priors", str(bad), cwd=tmp_path)
    assert p.returncode == 0 and "--priors bad.json" in p.stderr
    # an unreadable playbook is left alone
    book = tmp_path / "pb.md"
    book.write_bytes(b"\xff\xfe not utf-8")
    p = roofline("playbook", str(profile), "--out", str(book), cwd=tmp_path)
    assert p.returncode == 1 and book.read_bytes() == b"\xff\xfe not utf-8"
