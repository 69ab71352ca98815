"""Measured compute ceilings beside the data sheet (issue: data-sheet peaks used as if measured).

The bundled table carries, per product and dtype, the data sheet's figure and, where one is
published, the Maximum Achievable Matmul FLOPS (MAMF) measurement from stas00/ml-engineering
(``compute/accelerator/README.md``, read at 744d01e). A verdict's compute roof is the measured
ceiling when there is one; otherwise the data sheet, one confidence step lower. §8.2
"validated" needs measured bf16 *and* fp16 ceilings that agree within the 3.4 % noise band.
"""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from roofline_tui.core.peaks import (
    Peaks,
    PeakSection,
    compute_axis_veto,
    compute_roof_confidence,
    load_peak_table,
    parse_peaks_md,
    peak_flops_for,
    resolve_peaks,
    roof_for_rate,
)
from tests.paths import MEASURED_FIXTURES, REAL_FORMATS, need

from .helpers import run

TRACE = REAL_FORMATS / "wild" / "tracelens_torch_compile_triton.json.gz"  # MI300X, torch.compile

# The MAMF table as read (TFLOP/s, dense): (product section, dtype) -> (figure, text the
# stack must name, date the figure entered the table per the file's git history)
MAMF = {
    ("mi300x", "bf16"): (668.4, "6.3.42131", "2025-01-06"),
    ("mi325x", "bf16"): (784.9, "6.2.4", "2025-01-05"),
    ("mi355x", "bf16"): (1565.0, "rocm7.0.2", "2025-10-16"),
    ("a100", "bf16"): (271.2, "cu126", "2025-01-04"),
    ("a100-sxm4-40gb", "bf16"): (271.2, "cu126", "2025-01-04"),
    ("a100-pcie-40gb", "bf16"): (252.9, "cu124", "2025-01-04"),
    ("a100 80gb pcie", "bf16"): (252.9, "cu124", "2025-01-04"),
    ("h100", "bf16"): (794.5, "2.7.0+cu126", "2025-01-05"),
    ("h100", "fp8"): (1402.6, "2.7.0+cu126", "2025-01-05"),
    ("h200", "bf16"): (794.5, "2.7.0+cu126", "2025-01-05"),  # the H100 row: "H200 is the same"
    ("h200", "fp8"): (1453.4, "2.7.1+cu128", "2025-07-08"),
    ("gh200 144g hbm3e", "bf16"): (828.6, "cu126", "2025-01-04"),
    ("gh200 144g hbm3e", "fp8"): (1535.0, "cu126", "2025-01-04"),
    ("b200", "bf16"): (1745.0, "cu128", "2025-07-07"),
    ("b200", "fp8"): (3432.5, "cu128", "2025-07-09"),
    ("gb200", "bf16"): (1822.0, "cu130", "2025-09-17"),
    ("gb200", "fp8"): (3615.6, "cu130", "2025-09-17"),
}


@pytest.fixture(scope="module")
def bundled() -> list[PeakSection]:
    sections, problems = load_peak_table()
    assert problems == []
    return sections


def _md(body: str) -> str:
    return f"## gfx999 — test part\n```yaml\ngfx: gfx999\nhbm_bw_bytes_s: 5.0e12\n{body}```\n"


# --- the bundled table ----------------------------------------------------------------------


def test_bundled_measured_ceilings_match_the_mamf_table(bundled) -> None:
    found = {(s.product, d): m for s in bundled for d, m in s.measured_flops.items()}
    assert set(found) == set(MAMF)
    for key, (tflops, stack, date) in MAMF.items():
        m = found[key]
        assert m.flops == pytest.approx(tflops * 1e12), key
        assert "MAMF" in m.source and "stas00/ml-engineering" in m.source, key
        assert m.stack and stack in m.stack, key
        assert m.date == date, key
        assert m.shape and re.fullmatch(r"\d+x\d+x\d+", m.shape), key


def test_every_section_has_a_measurement_or_says_why_not(bundled) -> None:
    for sec in bundled:
        for dtype, m in sec.measured_flops.items():
            assert m.flops <= sec.flops[dtype], (sec.title, dtype)  # below the data sheet
        missing = set(sec.flops) - set(sec.measured_flops)
        if missing:  # every section has data-sheet dtypes MAMF does not measure
            assert sec.unmeasured and "MAMF" in sec.unmeasured, sec.title
    none = {s.product for s in bundled if not s.measured_flops}
    assert {"mi300a", "mi350x", "l40s", "h100 pcie", "gh200 480gb"} <= none
    for sec in bundled:
        if sec.product in none:
            assert sec.unmeasured and sec.unmeasured.startswith("none published"), sec.title


def test_mi300x_resolves_to_its_measured_bf16_ceiling(bundled) -> None:
    p = resolve_peaks(bundled, gfx="gfx942", device="MI300X")
    assert p.flops["bf16"] == pytest.approx(668.4e12)  # the roof in use
    assert p.flops_data_sheet["bf16"] == pytest.approx(1307.4e12)  # kept beside it
    assert p.flops_measured == {"bf16": pytest.approx(668.4e12)}
    assert p.flops_basis["bf16"] == "measured"
    src = p.flops_source["bf16"]
    for part in ("measured", "MAMF", "ROCm 6.3", "PYTORCH_TUNABLEOP_ENABLED=1", "2025-01-06"):
        assert part in src
    # fp8 has no MI300X measurement (the MAMF row is empty): the data sheet, and it says so
    assert p.flops["fp8"] == pytest.approx(2614.9e12)
    assert p.flops_basis["fp8"] == "data sheet"
    assert p.flops_source["fp8"].startswith("data sheet: AMD Instinct MI300X data sheet")
    assert p.hbm_bw_bytes_s == 5.3e12  # the memory roof stays the HBM pin rate
    assert p.problems == []
    assert "MAMF" in (p.citation or "")


# --- §8.2 -----------------------------------------------------------------------------------


def test_equal_data_sheet_figures_prove_nothing(bundled) -> None:
    for product in ("MI300X", "MI300A"):
        p = resolve_peaks(bundled, gfx="gfx942", device=product)
        assert p.compute_validated is None  # not checked: neither validated nor vetoed
        assert p.compute_check and "proves nothing" in p.compute_check
        assert compute_axis_veto(p) is None
    assert "only bf16 has a measured ceiling" in (
        resolve_peaks(bundled, gfx="gfx942").compute_check or "")


@pytest.mark.parametrize(("fp16", "validated"), [(6.50e14, True), (6.40e14, True),
                                                 (6.20e14, False), (1.3e15, False)])
def test_measured_bf16_fp16_pair_within_the_noise_band(fp16: float, validated: bool) -> None:
    """bf16 6.6e14 against fp16: 1.5 % and 3.0 % apart agree (≤ 3.4 %); 6.1 % and 49 % do not."""
    text = _md("flops: {bf16: 1.3e15, fp16: 1.3e15}\nmeasured_flops:\n  source: bench\n"
               f"  bf16: 6.6e14\n  fp16: {fp16}\n")
    sections, problems = parse_peaks_md(text)
    assert problems == []
    p = resolve_peaks(sections, gfx="gfx999")
    assert p.compute_validated is validated
    if validated:
        assert compute_axis_veto(p) is None and p.problems == []
        assert p.compute_check and p.compute_check.startswith("validated")
    else:  # a measured bf16 ≠ fp16 keeps the veto: compute-axis numbers are not usable
        veto = compute_axis_veto(p)
        assert veto and "unvalidated" in veto and "measured" in veto
        assert any("noise band" in x for x in p.problems)
        assert p.hbm_bw_bytes_s == 5.0e12  # memory axis still usable


def test_a_data_sheet_mismatch_still_vetoes() -> None:
    sections, _ = parse_peaks_md(_md("flops: {bf16: 6.5e14, fp16: 1.3e15}\n"))
    p = resolve_peaks(sections, gfx="gfx999")
    assert p.compute_validated is False and compute_axis_veto(p)


# --- the format -----------------------------------------------------------------------------


def test_measured_flops_format_and_its_problems() -> None:
    text = _md(
        "flops: {bf16: 1.0e15, fp16: 1.0e15, fp8: 2.0e15}\n"
        "measured_flops:\n"
        "  source: my bench\n  stack: torch 2.9 + ROCm 7.1\n  date: 2026-01-02\n"
        "  unmeasured: not run for fp16\n"
        "  bf16: 7.0e14\n"
        "  fp8: {flops: 1.5e15, stack: torch 2.10, date: 2026-02-03, note: hipBLASLt}\n"
        "  int8: 3.0e15\n"        # no int8 data-sheet figure to bound it: kept
        "  nonsense: 1.0e15\n"
    )
    sections, problems = parse_peaks_md(text)
    sec = sections[0]
    assert set(sec.measured_flops) == {"bf16", "fp8", "int8"}
    bf16, fp8 = sec.measured_flops["bf16"], sec.measured_flops["fp8"]
    assert (bf16.source, bf16.stack, bf16.date) == ("my bench", "torch 2.9 + ROCm 7.1",
                                                    "2026-01-02")  # an unquoted date too
    assert (fp8.stack, fp8.date, fp8.note) == ("torch 2.10", "2026-02-03", "hipBLASLt")
    assert sec.unmeasured == "not run for fp16"
    assert problems == ["yaml block 1 (line 2, 'gfx999 — test part'): measured_flops entry "
                        "'nonsense' ignored"]
    p = resolve_peaks(sections, gfx="gfx999")
    assert p.flops == {"bf16": 7.0e14, "fp16": 1.0e15, "fp8": 1.5e15, "int8": 3.0e15}
    assert p.flops_basis == {"bf16": "measured", "fp16": "data sheet", "fp8": "measured",
                             "int8": "measured"}
    assert p.flops_source["fp8"] == "measured: my bench; torch 2.10; 2026-02-03; hipBLASLt"


def test_unsourced_or_impossible_measurements_are_dropped() -> None:
    sections, problems = parse_peaks_md(_md(
        "flops: {bf16: 1.0e15, fp16: 1.0e15}\nmeasured_flops: {bf16: 7.0e14, fp16: {flops: "
        "2.0e15, source: x}}\n"))
    assert sections[0].measured_flops == {}
    assert any("no source" in x for x in problems)
    assert any("above the data sheet" in x for x in problems)


def test_a_string_says_no_measurement_exists() -> None:
    sections, problems = parse_peaks_md(_md(
        "flops: {bf16: 1.0e15, fp16: 1.0e15}\nmeasured_flops: \"none published: no row\"\n"))
    assert problems == [] and sections[0].measured_flops == {}
    p = resolve_peaks(sections, gfx="gfx999")
    _, _, note = peak_flops_for(p, "bf16")
    assert note and "none published: no row" in note


@pytest.mark.parametrize("raw", ["[1, 2]", "{bf16: [1]}", "{source: {a: 1}, bf16: 1e15}",
                                 "7", "null", "{}"])
def test_odd_measured_flops_never_raise(raw: str) -> None:
    sections, problems = parse_peaks_md(_md(f"flops: {{bf16: 2.0e15}}\nmeasured_flops: {raw}\n"))
    assert len(sections) == 1
    assert all("\n" not in x for x in problems)


# --- which roof, which source, and what that does to confidence ------------------------------


def test_peak_flops_for_names_the_roof_and_its_source(bundled) -> None:
    mi300x = resolve_peaks(bundled, gfx="gfx942")
    value, dtype, note = peak_flops_for(mi300x, "c10::BFloat16")
    assert (value, dtype) == (668.4e12, "bf16")
    assert note and "measured" in note and "MAMF" in note and "51.1%" in note
    value, dtype, note = peak_flops_for(mi300x, "fp16")
    assert (value, dtype) == (1307.4e12, "fp16")
    assert note and "no public measured fp16 ceiling" in note
    assert "one confidence step lower" in note and "668.4" in note  # the measured twin
    mi300a = resolve_peaks(bundled, gfx="gfx942", device="MI300A")
    _, _, note = peak_flops_for(mi300a, "bf16")
    assert note and "data sheet" in note and "no MI300A row" in note


def test_compute_roof_confidence(bundled) -> None:
    mi300x = resolve_peaks(bundled, gfx="gfx942")
    # a measured roof keeps the confidence; a data-sheet one costs a step, on the compute axis
    assert compute_roof_confidence(mi300x, "compute", "bf16", "high") == "high"
    assert compute_roof_confidence(mi300x, "compute", "fp8", "high") == "medium"
    assert compute_roof_confidence(mi300x, "compute", "fp8", "medium") == "low"
    assert compute_roof_confidence(mi300x, "compute", "fp8", "low") == "low"
    assert compute_roof_confidence(mi300x, "memory", "fp8", "high") == "high"
    assert compute_roof_confidence(mi300x, None, None, "medium") == "medium"


def test_a_rate_at_the_measured_ceiling_is_not_infeasible(bundled) -> None:
    a100 = resolve_peaks(bundled, gfx="sm_80")
    roof = a100.flops["bf16"]  # 271.2 TFLOP/s
    lifted, note = roof_for_rate(a100, "bf16", roof, 275.9e12)  # 1.7 % above: noise
    assert lifted == 275.9e12 and note and "noise band" in note
    kept, note = roof_for_rate(a100, "bf16", roof, 300e12)  # 10.6 % above: not noise
    assert kept == roof and note and "over-counts" in note
    assert roof_for_rate(a100, "bf16", roof, 200e12) == (roof, None)
    sheet = resolve_peaks(bundled, gfx="sm_80").flops["int8"]  # a data-sheet roof never moves
    assert roof_for_rate(a100, "int8", sheet, sheet * 1.01) == (sheet, None)


def test_partition_scales_both_figures(bundled) -> None:
    p = resolve_peaks(bundled, gfx="gfx942", product="MI300X", device_props={"numSms": 38})
    assert p.flops_measured["bf16"] == pytest.approx(668.4e12 / 8)
    assert p.flops_data_sheet["bf16"] == pytest.approx(1307.4e12 / 8)
    assert "scaled by 38/304" in p.flops_source["bf16"]


def test_derived_peaks_say_they_are_derived() -> None:
    p = resolve_peaks([], gfx="gfx942", device_props={
        "multi_processor_count": 304, "clock_rate_hz": 2.1e9})
    assert p.source == "derived" and p.flops_basis["bf16"] == "derived"
    assert "derived" in p.flops_source["bf16"]
    assert p.compute_validated is None  # CU × clock × rate is equal for bf16/fp16 by design


def test_a_peaks_object_without_provenance_counts_as_data_sheet() -> None:
    bare = Peaks(flops={"bf16": 1e15}, source="table", confidence="high")
    assert compute_roof_confidence(bare, "compute", "bf16", "high") == "medium"
    _, _, note = peak_flops_for(bare, "bf16")
    assert note and "data sheet" in note


# --- end to end -----------------------------------------------------------------------------


def _ncu_gemm_round(tmp_path: Path, product: str, gfx: str, avg_us: float) -> Path:
    """A stage-C bf16 GEMM (cutlass, 2·4096³ FLOP and ~134 MB per launch measured by ncu)."""
    name = ("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_256x128_32x3_"
            "tn_align8>(T1::Params)")
    root = tmp_path / product.replace(" ", "_")
    rd = root / "profile" / "round_0"
    (rd / "counters").mkdir(parents=True)
    (root / "env_report.json").write_text(json.dumps({"gfx": gfx, "product": product}))
    (rd / "profile_topN.json").write_text(json.dumps({"top_kernels": [{
        "name": name, "pct_gpu_time": 40.0, "avg_us": avg_us, "calls": 2,
        "shapes": [[[4096, 4096], [4096, 4096]]], "dtypes": ["c10::BFloat16"] * 2,
        "classification": "library_gemm", "editable": False}]}))
    # the fixture was collected on an A100 (CC 8.0): as counters of this H100 round they
    # must say so, or the join withholds them (another arch's counters are never applied)
    csv = (MEASURED_FIXTURES / "counters" / "ncu_gemm_details.csv").read_text()
    (rd / "counters" / "ncu_gemm_details.csv").write_text(csv.replace('"8.0"', '"9.0"'))
    return rd


def test_a_product_without_a_measured_ceiling_lowers_compute_confidence(tmp_path: Path) -> None:
    """The same counted GEMM at 642.6 TFLOP/s (2·4096³ FLOP in 213.8 µs) on an H100 SXM
    (measured bf16 ceiling 794.5: 0.81 of it) and on an H100 PCIe (no published measurement:
    the 756 data sheet, 0.85 of it). Both are compute-bound; the PCIe verdict is one step
    less sure, and its entry says why."""
    t_us = 2 * 4096**3 / 642.6e12 * 1e6
    sxm = run(_ncu_gemm_round(tmp_path, "H100", "sm_90", t_us)).entries[0]
    pcie_art = run(_ncu_gemm_round(tmp_path, "NVIDIA H100 PCIe", "sm_90", t_us))
    pcie = pcie_art.entries[0]
    assert sxm.stage == pcie.stage == "C"
    assert sxm.roof_axis == pcie.roof_axis == "compute"
    assert sxm.bound_type == pcie.bound_type == "compute"
    assert sxm.compute_util == pytest.approx(642.6 / 794.5, abs=2e-3)
    assert pcie.compute_util == pytest.approx(642.6 / 756.0, abs=2e-3)
    assert sxm.confidence == "high"
    assert pcie.confidence == "medium"
    assert pcie_art.peaks.flops_basis["bf16"] == "data sheet"
    why = [a for a in pcie.assumptions if "compute roof" in a]
    assert why and "no public measured bf16 ceiling" in why[0]
    assert "one confidence step lower" in why[0]


def _hand_rate(trace: Path) -> float:
    """2·M·N·K / t of the 32768×2048 @ 2048×8192 bf16 matmuls, from the raw events: each
    aten::mm with those input dims joins its kernel through the External id."""
    events = json.loads(gzip.open(trace).read())["traceEvents"]
    ids = {e["args"]["External id"] for e in events
           if e.get("cat") == "cpu_op" and e["name"] == "aten::mm"
           and e["args"].get("Input Dims", [])[:2] == [[32768, 2048], [2048, 8192]]}
    durs = [e["dur"] for e in events
            if e.get("cat") == "kernel" and e["args"].get("External id") in ids]
    assert len(durs) == 2  # 1775.035 and 1974.13 µs
    flops = 2 * 32768 * 8192 * 2048
    return len(durs) * flops / (sum(durs) * 1e-6)


def test_mi300x_prefill_gemm_is_compute_bound_and_saturated(tmp_path: Path) -> None:
    """Done-when: the torch.compile trace's 32768×2048×8192 bf16 GEMM runs at 586.5 TFLOP/s,
    0.88 of MI300X's measured 668.4 TFLOP/s bf16 ceiling: compute-bound, saturated, speedup
    0.90 / 0.8775 ≈ 1.03×. Against the 1307.4 data sheet it read 0.45, "latency", 2.0×."""
    from roofline_tui.importers.torch import import_torch

    trace = need(TRACE)
    rate = _hand_rate(trace)
    assert rate == pytest.approx(586.5e12, rel=1e-3)
    imported = import_torch(trace, progress=False)
    rd = tmp_path / "round_0"
    rd.mkdir()
    (rd / "profile_topN.json").write_text(json.dumps(imported.doc))
    proc = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(rd),
                           "--device", "MI300X"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    art = json.loads((rd / "profile_roofline.json").read_text())
    peaks = art["peaks"]
    assert peaks["flops"]["bf16"] == pytest.approx(668.4e12)
    assert peaks["flops_basis"]["bf16"] == "measured"
    assert "MAMF" in peaks["flops_source"]["bf16"] and "ROCm 6.3" in peaks["flops_source"]["bf16"]
    assert peaks["flops_data_sheet"]["bf16"] == pytest.approx(1307.4e12)
    assert peaks["compute_validated"] is None and "proves nothing" in peaks["compute_check"]
    gemms = [e for e in art["entries"]
             if e.get("achieved_flops") and e["achieved_flops"] == pytest.approx(rate, rel=1e-3)]
    assert len(gemms) == 1
    g = gemms[0]
    assert g["op_class"] == "gemm" and g["peak_flops_dtype"] == "bf16"
    assert g["compute_util"] == pytest.approx(rate / 668.4e12, abs=1e-4)  # 0.8775
    assert g["compute_util"] == pytest.approx(0.88, abs=0.005)
    assert rate / peaks["flops_data_sheet"]["bf16"] == pytest.approx(0.45, abs=0.005)  # before
    assert g["roof_axis"] == "compute" and g["bound_type"] == "compute"
    assert g["headroom_class"] == "saturated"
    assert g["attainable_speedup"] == pytest.approx(0.90 / (rate / 668.4e12), rel=1e-3)
    assert g["attainable_speedup"] == pytest.approx(1.03, abs=0.005)
    assert any("bf16 compute roof 668.4 TFLOP/s, measured" in a for a in g["assumptions"])
