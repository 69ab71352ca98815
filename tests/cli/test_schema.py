"""``roofline schema`` names every field ``roofline analyze`` writes (issue 11).

The artifact models allow extra keys (upstream files carry their own), so a field the engine
writes without declaring it would pass silently. Here every key path of real artifacts — the
demo with round history, a stage-C round, a bad-input round — is looked up in the schema the
``schema`` command prints; a key the schema does not name fails with its path.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.cli import main
from tests.paths import MEASURED_FIXTURES

MEASURED = MEASURED_FIXTURES
MOE_COUNTERS = MEASURED / "counters" / "worked_example_moe" / "counter_collection.csv"
SHAPES = MEASURED / "eval" / "kernels"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-m", "roofline_tui", "schema"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _branches(node: dict[str, Any], defs: dict[str, Any]) -> list[dict[str, Any]]:
    """The object/array alternatives of a schema node ($ref and anyOf resolved)."""
    if "$ref" in node:
        return _branches(defs[node["$ref"].rsplit("/", 1)[1]], defs)
    if "anyOf" in node:
        return [b for sub in node["anyOf"] for b in _branches(sub, defs)]
    return [node]


def unnamed_keys(value: Any, node: dict[str, Any], defs: dict[str, Any], path: str) -> list[str]:
    """Key paths in ``value`` that the schema ``node`` does not name."""
    missing: list[str] = []
    branches = _branches(node, defs)
    if isinstance(value, dict):
        objects = [b for b in branches if b.get("type") == "object" or "properties" in b]
        named = {k: b["properties"][k] for b in objects for k in b.get("properties", {})}
        maps = [b for b in objects if "properties" not in b]  # dict[str, X]: free keys
        for k, v in value.items():
            if k in named:
                missing += unnamed_keys(v, named[k], defs, f"{path}.{k}")
            elif not maps:
                missing.append(f"{path}.{k}")
    elif isinstance(value, list):
        items = [b["items"] for b in branches if b.get("type") == "array" and "items" in b]
        for i, v in enumerate(value):
            for it in items[:1]:
                missing += unnamed_keys(v, it, defs, f"{path}[{i}]")
    return missing


def check(artifact_path: Path, schema: dict[str, Any]) -> None:
    data = json.loads(artifact_path.read_text())
    assert unnamed_keys(data, schema, schema.get("$defs", {}), "$") == []


def test_demo_rounds_with_history(demo_profile: Path, schema: dict[str, Any]) -> None:
    for r in (0, 1, 2):
        assert main(["analyze", str(demo_profile / f"round_{r}")]) == 0
    data = json.loads((demo_profile / "round_2" / "profile_roofline.json").read_text())
    assert data["round_history"]["predicted_vs_actual"] and data["movement"]["kernels"]
    for r in (0, 1, 2):
        check(demo_profile / f"round_{r}" / "profile_roofline.json", schema)


def test_stage_b_and_c_round(worked_example: Path, schema: dict[str, Any]) -> None:
    assert main(["analyze", str(worked_example), "--shapes", str(SHAPES),
                 "--counters", str(MOE_COUNTERS)]) == 0
    data = json.loads((worked_example / "profile_roofline.json").read_text())
    assert data["stage"] == "C"
    check(worked_example / "profile_roofline.json", schema)


def test_bad_input_rounds(tmp_path: Path, worked_example: Path, schema: dict[str, Any]) -> None:
    broken = tmp_path / "broken" / "round_0"
    broken.mkdir(parents=True)
    (broken / "profile_topN.json").write_text('{"top_kernels": [')
    assert main(["analyze", str(broken)]) == 0
    check(broken / "profile_roofline.json", schema)
    topn = json.loads((worked_example / "profile_topN.json").read_text())
    topn["top_kernels"][0]["base_latency_ms"] = {"decode": "x"}
    topn["top_kernels"].append({"name": "odd_kernel", "pct_gpu_time": 9.0, "avg_us": -1})
    (worked_example / "profile_topN.json").write_text(json.dumps(topn))
    env_path = worked_example.parent.parent / "env_report.json"
    env = json.loads(env_path.read_text())
    env["gfx"] = "gfx0000"  # no peak table entry, no device props: no peak bandwidth
    env.pop("product", None)
    env_path.write_text(json.dumps(env))
    assert main(["analyze", str(worked_example)]) == 0
    data = json.loads((worked_example / "profile_roofline.json").read_text())
    assert data["peaks"]["source"] == "none" and data["degraded"]
    check(worked_example / "profile_roofline.json", schema)


def test_an_undeclared_key_is_caught(schema: dict[str, Any], tmp_path: Path) -> None:
    """The check itself can fail: an extra key at entry level is reported with its path."""
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"entries": [{"name": "k", "short_name": "k", "made_up": 1}]}))
    data = json.loads(path.read_text())
    assert unnamed_keys(data, schema, schema["$defs"], "$") == ["$.entries[0].made_up"]

