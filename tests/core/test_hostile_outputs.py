"""Issue 16, outputs: a hostile string from a file never reaches the md, the json or the plot
raw, and a plot label is drawn as text, never parsed as math."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from roofline_tui.core.artifact import Artifact, Degraded, Entry, artifact_to_json
from roofline_tui.core.markdown import artifact_to_markdown
from roofline_tui.core.rounds.analysis import analyze_round
from roofline_tui.core.textsafe import escaped, json_safe, md_cell, printable, valid_unicode
from tests.paths import WORKED_EXAMPLE

EVIL = "\x1b]52;c;ZXZpbA==\x07\x1b[2J\u202e[bold red]x|y$_$\ud800\x9b"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def test_printable_shows_every_active_character_as_an_escape() -> None:
    out = printable(EVIL)
    assert RAW.search(out) is None
    assert out == ("\\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\u202e[bold red]x|y$_$\\ud800\\x9b")
    out.encode("utf-8")  # always encodable
    assert printable("tab\tnew\nline") == "tab new line"
    assert printable("\u2066iso\u2069 \u200b \ufeff") == "\\u2066iso\\u2069 \\u200b \\ufeff"


def test_printable_limit_cuts_before_escaping_and_never_splits_an_escape() -> None:
    assert printable("x" * 10 + "\x1b", limit=12) == "xxxxxxxxxx…"
    assert printable("a" * 1_000_000, limit=5) == "aaaa…"


def test_md_cell_keeps_the_table_shape() -> None:
    cell = md_cell("a|b`c\x1b")
    assert cell == "a\\|b'c\\\\x1b"
    row = f"| {md_cell(EVIL)} | two |"
    assert len(re.findall(r"(?<!\\)\|", row)) == 3


def test_escaped_is_reversible_and_visible() -> None:
    s = "a\\x1b\x1b\nb"
    out = escaped(s)
    assert out == "a\\\\x1b\\x1b\\nb" and RAW.search(out) is None


def test_valid_unicode_keeps_distinct_names_distinct() -> None:
    a, b = valid_unicode("x\ud800"), valid_unicode("x\ud801")
    assert a != b and a == "x\\ud800"
    a.encode("utf-8")


def test_json_safe_escapes_what_json_dumps_leaves_raw() -> None:
    text = json.dumps({"n": "\u202e\x9b\ud800\U000e0041"}, ensure_ascii=False)
    safe = json_safe(text)
    assert RAW.search(safe) is None and "\U000e0041" not in safe
    assert json.loads(safe) == {"n": "\u202e\x9b\ufffd\U000e0041"}


def _force(model, **fields) -> None:
    """Set fields past validation, as a bug or ``model_construct`` could: the writers must
    still escape them (typed fields otherwise refuse these values when a file is read)."""
    for key, value in fields.items():
        if key in type(model).model_fields:
            model.__dict__[key] = value
            model.__pydantic_fields_set__.add(key)
        else:
            model.__pydantic_extra__[key] = value


def hostile_artifact() -> Artifact:
    """Every string field holding the hostile text."""
    entry = Entry(short_name="k", name="full", pct_gpu_time=10.0)
    _force(entry, short_name="k" + EVIL, name="full " + EVIL, regime=EVIL, op_class=EVIL,
           bound_type="|" + EVIL, confidence=EVIL, headroom_class="\x1b[2J" + EVIL,
           notes="n " + EVIL, route="\x1b]0;t\x07|r", route_reason=EVIL, assumptions=[EVIL],
           unit=EVIL, launches_per_unit=3, byte_reduction_levers=[EVIL])
    art = Artifact(entries=[entry])
    _force(art, gfx="gfx" + EVIL, stage=EVIL, ranking_by_pct=[entry.short_name],
           ranking_by_expected_gain=[entry.short_name], skill_errors=[EVIL], round=EVIL,
           head_selection=EVIL, target_eff_source=EVIL, plot_file=EVIL,
           degraded=[Degraded(name="d", reason="r")])
    _force(art.degraded[0], name=EVIL, reason=EVIL)
    _force(art.peaks, source=EVIL, confidence=EVIL, citation=EVIL, product=EVIL)
    return art


def test_no_field_of_a_hostile_artifact_reaches_the_md_raw() -> None:
    md = artifact_to_markdown(hostile_artifact())
    assert RAW.search(md.replace("\n", "")) is None
    md.encode("utf-8")
    table = [line for line in md.splitlines() if line.startswith("| 1 |")][0]
    assert len(re.findall(r"(?<!\\)\|", table)) == 20  # 19 columns: no cell broke out


def test_no_field_of_a_hostile_artifact_reaches_the_json_raw() -> None:
    text = artifact_to_json(hostile_artifact())
    assert RAW.search(text.replace("\n", "")) is None
    text.encode("utf-8")
    json.loads(text)


def test_plot_labels_are_plain_text(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from roofline_tui.core.plot import write_plot

    rnd = tmp_path / "eval"
    shutil.copytree(WORKED_EXAMPLE, rnd)
    topn = rnd / "profile" / "round_0" / "profile_topN.json"
    doc = json.loads(topn.read_text())
    for k in doc["top_kernels"]:
        k["short_name"] = "$_$" + k["name"][:8] + "\x1b[2J"
    topn.write_text(json.dumps(doc))
    art = analyze_round(rnd / "profile" / "round_0").artifact
    art.__dict__["round"] = "$\\frac{1}{0}$\x1b]52;c;QQ==\x07"
    (svg,) = write_plot(art, tmp_path)
    text = svg.read_text(encoding="utf-8")
    assert "$_$" in text and "\x1b" not in text and "\x07" not in text


def test_without_non_finite_names_each_place() -> None:
    from roofline_tui.core.store import strict_json_dumps, without_non_finite

    bad: list[str] = []
    data = without_non_finite({"a": [1.0, float("nan")], "b": {"c": float("-inf")}, "d": "x"},
                              bad)
    assert data == {"a": [1.0, None], "b": {"c": None}, "d": "x"}
    assert bad == ["a[1]", "b.c"]
    assert json.loads(strict_json_dumps(data)) == data
    with pytest.raises(ValueError):
        strict_json_dumps({"a": float("nan")})
