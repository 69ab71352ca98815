"""The static image: `analyze --plot` on the worked example, and life without matplotlib."""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from roofline_tui.cli import main
from roofline_tui.core.artifact import Artifact
from roofline_tui.core.markdown import artifact_to_markdown
from roofline_tui.core.plot import PLOT_PNG, PLOT_SVG, PlotUnavailable, write_plot
from roofline_tui.core.rounds.analysis import analyze_round

SVG_NS = "{http://www.w3.org/2000/svg}"
EMBED = "![roofline](profile_roofline.svg)"


def _svg_texts(path: Path) -> str:
    root = ET.fromstring(path.read_bytes())  # parses as XML
    assert root.tag == f"{SVG_NS}svg"
    return "\n".join("".join(t.itertext()) for t in root.iter(f"{SVG_NS}text"))


def test_analyze_plot_writes_a_labelled_svg_for_the_worked_example(
    worked_example: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["analyze", str(worked_example), "--plot"]) == 0
    svg = worked_example / PLOT_SVG
    assert svg.is_file()
    assert not (worked_example / PLOT_PNG).exists()
    texts = _svg_texts(svg)
    artifact = Artifact.model_validate_json((worked_example / "profile_roofline.json").read_text())
    assert len(artifact.entries) == 2
    for rank, short in enumerate(artifact.ranking_by_pct, 1):
        assert f"#{rank} {short}" in texts  # the legend names each numbered dot
    # the bf16 roof drawn is the one verdicts use: MI355X's measured matmul ceiling (MAMF,
    # 1565 TFLOP/s), not the 2.52 PFLOP/s data sheet; fp8 has no measurement, so its roof stays
    for label in ("HBM 8 TB/s", "fp8 5.03 PFLOP/s", "bf16 1.56 PFLOP/s", "ridge fp8 629"):
        assert label in texts
    # the artifact records the image and the markdown embeds it
    assert artifact.plot_file == PLOT_SVG
    assert EMBED in (worked_example / "profile_roofline.md").read_text()
    assert "no roofline image" not in capsys.readouterr().err


def test_svg_is_byte_identical_on_rerun(worked_example: Path) -> None:
    assert main(["analyze", str(worked_example), "--plot", "--json"]) == 0
    first = (worked_example / PLOT_SVG).read_bytes()
    assert main(["analyze", str(worked_example), "--plot", "--json"]) == 0
    assert (worked_example / PLOT_SVG).read_bytes() == first
    assert b"<dc:date>" not in first


def test_png_flag_writes_both_images(worked_example: Path) -> None:
    assert main(["analyze", str(worked_example), "--png", "--json"]) == 0
    png = worked_example / PLOT_PNG
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (worked_example / PLOT_SVG).is_file()
    data = json.loads((worked_example / "profile_roofline.json").read_text())
    assert data["plot_file"] == PLOT_SVG and data["plot_png"] == PLOT_PNG


def test_no_plot_flag_no_image_and_no_embed(worked_example: Path) -> None:
    assert main(["analyze", str(worked_example), "--json"]) == 0
    assert not (worked_example / PLOT_SVG).exists()
    assert EMBED not in (worked_example / "profile_roofline.md").read_text()
    assert "plot_file" not in json.loads((worked_example / "profile_roofline.json").read_text())


def test_without_matplotlib_one_line_and_the_artifact_is_still_written(
    worked_example: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    rc_plain = main(["analyze", str(worked_example), "--json"])
    err_plain = capsys.readouterr().err.splitlines()
    for p in worked_example.glob("profile_roofline.*"):
        p.unlink()

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` -> ImportError
    rc = main(["analyze", str(worked_example), "--plot", "--png", "--json"])
    err = capsys.readouterr().err.splitlines()

    assert rc == rc_plain == 0
    extra = [line for line in err if line not in err_plain]
    assert len(extra) == 1
    assert "matplotlib" in extra[0] and "roofline_tui[plot]" in extra[0]
    assert (worked_example / "profile_roofline.json").is_file()
    md = (worked_example / "profile_roofline.md").read_text()
    assert md.startswith("# Roofline headroom") and EMBED not in md
    assert not (worked_example / PLOT_SVG).exists()
    assert not (worked_example / PLOT_PNG).exists()
    assert not list(worked_example.glob(".profile_roofline.svg.*"))  # no temp files left


def test_write_plot_raises_plot_unavailable_without_matplotlib(
    worked_example: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    artifact = analyze_round(worked_example).artifact
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(PlotUnavailable, match=r"roofline_tui\[plot\]"):
        write_plot(artifact, worked_example)


def test_unwritable_directory_costs_one_line_not_the_run(
    worked_example: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import roofline_tui.core.plot as plot_mod

    def refuse(path: Path, data: bytes) -> Path:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(plot_mod, "atomic_write_bytes", refuse)
    assert main(["analyze", str(worked_example), "--plot", "--json"]) == 0
    err = capsys.readouterr().err
    assert err.count("no roofline image") == 1 and "Permission denied" in err
    assert (worked_example / "profile_roofline.json").is_file()
    assert EMBED not in (worked_example / "profile_roofline.md").read_text()


def test_markdown_embeds_only_a_recorded_plot(worked_example: Path) -> None:
    artifact = analyze_round(worked_example).artifact
    assert EMBED not in artifact_to_markdown(artifact)
    artifact.plot_file = PLOT_SVG
    md = artifact_to_markdown(artifact)
    assert md.count(EMBED) == 1
    assert md.index(EMBED) < md.index("| # | kernel |")
