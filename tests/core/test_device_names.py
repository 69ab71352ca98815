"""Device names without the models: the bundled table's products from its precompiled form."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from roofline_tui.core import device_names, peaks
from roofline_tui.importers.device import identify


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(peaks, "_TABLE_CACHE", {})
    return tmp_path / "roofline_tui"


def test_the_products_come_from_the_compiled_table_once_there_is_one(empty_cache: Path) -> None:
    assert device_names.bundled_products() is None  # nothing compiled yet
    sections, _ = peaks.load_peak_table(None)  # compiles it
    found = device_names.bundled_products()
    assert found == [(s.product, s.gfx) for s in sections]
    assert ("mi300x", "gfx942") in found


def test_a_compiled_table_of_another_shape_is_not_trusted(empty_cache: Path) -> None:
    peaks.load_peak_table(None)
    (compiled,) = empty_cache.glob("peaks-*.json")
    doc = json.loads(compiled.read_text())
    doc["sections"][0]["gfx"] = 950
    compiled.write_text(json.dumps(doc))
    assert device_names.bundled_products() is None
    doc["sections"] = "not a list"
    compiled.write_text(json.dumps(doc))
    assert device_names.bundled_products() is None


@pytest.mark.parametrize("name", ["AMD Instinct MI300X", "NVIDIA H100 80GB HBM3",
                                  "NVIDIA A100-SXM4-80GB", "gfx942", "Some Other GPU"])
def test_identify_names_the_same_product_with_or_without_the_compiled_table(
        empty_cache: Path, name: str) -> None:
    cold = identify(name, source="t")  # no compiled table: the full table (and its models)
    if not name.startswith("gfx"):  # (an arch name needs no product lookup)
        assert list(empty_cache.glob("peaks-*.json")), "the full table wrote its compiled form"
    warm = identify(name, source="t")  # from the compiled table
    assert (warm.product, warm.arch) == (cold.product, cold.arch)
    if name == "AMD Instinct MI300X":
        assert (warm.product, warm.arch) == ("mi300x", "gfx942")


def test_a_trace_import_loads_no_models(tmp_path: Path) -> None:
    """Once the table is compiled, identifying a trace's device needs no pydantic."""
    env_cache = tmp_path / "cache"
    trace = {"deviceProperties": [{"id": 0, "name": "AMD Instinct MI300X", "warpSize": 64}],
             "traceEvents": [
                 {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0,
                  "dur": 5.0, "args": {"device": 0, "correlation": 1, "stream": 7}}]}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(trace))
    code = (
        "import sys\n"
        "from roofline_tui.cli import main\n"
        "rc = main(['import', 'torch', sys.argv[1], '--out', sys.argv[2]])\n"
        "print(rc, 'pydantic' in sys.modules)\n")
    env = {"XDG_CACHE_HOME": str(env_cache), "PATH": "/usr/bin:/bin"}
    runs = [subprocess.run([sys.executable, "-c", code, str(path), str(tmp_path / f"out{i}")],
                           env=env, capture_output=True, text=True, timeout=120)
            for i in range(2)]
    assert [r.stdout.splitlines()[-1].split() for r in runs] == [["0", "True"], ["0", "False"]]
    env_report = json.loads((tmp_path / "out1" / "env_report.json").read_text())
    assert "mi300x" in json.dumps(env_report)
