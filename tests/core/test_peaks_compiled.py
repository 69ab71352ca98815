"""The bundled peak table read from its precompiled form (issue 26 item 2): the same sections
and the same artifact as a YAML parse, no YAML at start-up once the cache exists, and a cache
that is corrupt or from another table ignored and rebuilt. A user ``--peaks`` file is parsed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roofline_tui.core.peaks import parse_peaks_md
from tests.paths import DEMO, PACKAGE


def _env(cache_home: Path) -> dict[str, str]:
    return dict(os.environ, XDG_CACHE_HOME=str(cache_home))


def _py(code: str, cache_home: Path) -> str:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, env=_env(cache_home))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


LOAD = ("import json, sys\n"
        "from roofline_tui.core.peaks import load_peak_table\n"
        "sections, problems = load_peak_table(None)\n"
        "print(json.dumps({'yaml': 'yaml' in sys.modules, 'problems': problems,\n"
        "                  'sections': [s.model_dump(mode='json') for s in sections]}))\n")


def _parsed() -> list[dict[str, object]]:
    text = (PACKAGE / "data" / "peaks.md").read_text()
    return [s.model_dump(mode="json") for s in parse_peaks_md(text)[0]]


def _cache_files(cache_home: Path) -> list[Path]:
    return sorted((cache_home / "roofline_tui").glob("peaks-*.json"))


def test_first_use_builds_it_and_later_starts_need_no_yaml(tmp_path: Path) -> None:
    first = json.loads(_py(LOAD, tmp_path))
    assert len(_cache_files(tmp_path)) == 1
    second = json.loads(_py(LOAD, tmp_path))
    assert second["yaml"] is False  # read from the JSON: no YAML imported
    assert first["sections"] == second["sections"] == _parsed()
    assert first["problems"] == second["problems"]


@pytest.mark.parametrize("damage", ["", "{not json", '{"format": 1, "sha256": "x"}',
                                    '{"format": 1, "sections": [{"gfx": 3}]}'])
def test_a_damaged_cache_is_ignored_and_rebuilt(tmp_path: Path, damage: str) -> None:
    _py(LOAD, tmp_path)
    [cache] = _cache_files(tmp_path)
    if damage.startswith('{"format": 1, "sections"'):
        doc = json.loads(cache.read_text())
        doc["sections"][0]["hbm_bw_bytes_s"] = "fast"  # right key, invalid content
        damage = json.dumps(doc)
    cache.write_text(damage)
    got = json.loads(_py(LOAD, tmp_path))
    assert got["sections"] == _parsed()
    assert json.loads(cache.read_text())["sections"] == _parsed()  # rebuilt in place


def test_an_unwritable_cache_changes_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    got = json.loads(_py(LOAD, blocker))  # $XDG_CACHE_HOME is a file: nothing can be cached
    assert got["sections"] == _parsed()


def _analyze(round_dir: Path, cache_home: Path, *extra: str) -> bytes:
    proc = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(round_dir),
                           *extra], capture_output=True, text=True, timeout=120,
                          env=_env(cache_home))
    assert proc.returncode == 0, proc.stderr
    return (round_dir / "profile_roofline.json").read_bytes()


def test_the_artifact_is_byte_identical_with_and_without_the_cache(tmp_path: Path) -> None:
    shutil.copytree(DEMO, tmp_path / "demo",
                    ignore=shutil.ignore_patterns("profile_roofline.*", "__pycache__"))
    round_dir = tmp_path / "demo" / "profile" / "round_2"
    blocker = tmp_path / "no-cache"
    blocker.write_text("")
    parsed = _analyze(round_dir, blocker)
    built = _analyze(round_dir, tmp_path / "cache")
    cached = _analyze(round_dir, tmp_path / "cache")
    assert len(_cache_files(tmp_path / "cache")) == 1
    assert parsed == built == cached


def test_a_user_peaks_file_is_still_parsed(tmp_path: Path) -> None:
    shutil.copytree(DEMO, tmp_path / "demo",
                    ignore=shutil.ignore_patterns("profile_roofline.*", "__pycache__"))
    round_dir = tmp_path / "demo" / "profile" / "round_2"
    text = (PACKAGE / "data" / "peaks.md").read_text()
    mine = tmp_path / "peaks.md"
    # the demo's MI355X at half its bandwidth: a parsed --peaks file must change the answer
    bw = next(s for s in parse_peaks_md(text)[0] if s.gfx == "gfx950").hbm_bw_bytes_s
    mine.write_text("# mine\n\n```yaml\ngfx: gfx950\nproduct: MI355X\ndefault: true\n"
                    f"hbm_bw_bytes_s: {bw / 2:.6g}\nflops: {{bf16: 2.3e15}}\n```\n")
    _analyze(round_dir, tmp_path / "cache")
    art = json.loads(_analyze(round_dir, tmp_path / "cache", "--peaks", str(mine)))
    assert art["peaks"]["hbm_bw_bytes_s"] == pytest.approx(bw / 2)
