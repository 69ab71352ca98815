"""Peak table: the bundled numbers, upstream compatibility, lookup order and fallbacks."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline_tui.core.peaks import (
    Peaks,
    PeakSection,
    derive_peaks_from_props,
    load_peak_table,
    match_product,
    normalize_arch,
    parse_peaks_md,
    peak_flops_for,
    resolve_peaks,
)
from tests.paths import REPO_ROOT, SHARED

UPSTREAM = SHARED / "upstream-samples" / "peaks.md"
REAL = SHARED / "real-formats"

needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="shared reference files absent")


@pytest.fixture(scope="module")
def bundled() -> list[PeakSection]:
    sections, problems = load_peak_table()
    assert problems == []
    return sections


@pytest.fixture(scope="module")
def upstream() -> list[PeakSection]:
    if not UPSTREAM.is_file():
        pytest.skip("upstream peaks.md absent")
    sections, problems = load_peak_table(UPSTREAM)
    assert problems == []
    return sections


# --- the bundled table ----------------------------------------------------------------------


def test_bundled_table_sections_are_sound(bundled):
    keys = {(s.gfx, s.product) for s in bundled}
    assert keys == {
        ("gfx90a", "mi250x"),
        ("gfx942", "mi300x"),
        ("gfx942", "mi325x"),
        ("gfx950", "mi355x"),
        ("gfx950", "mi350x"),
        ("sm_80", "a100"),
        ("sm_90", "h100"),
        ("sm_90", "h200"),
        ("sm_100", "b200"),
        # products people run (issue 12 item 7)
        ("gfx90a", "mi250x package"),
        ("gfx90a", "mi210"),
        ("gfx942", "mi300a"),
        ("sm_80", "a100-sxm4-40gb"),
        ("sm_80", "a100-pcie-40gb"),
        ("sm_80", "a100 80gb pcie"),
        ("sm_89", "l40s"),
        ("sm_90", "h100 pcie"),
        ("sm_90", "h100 nvl"),
        ("sm_90", "h800"),
        ("sm_90", "h20"),
        ("sm_90", "gh200 480gb"),
        ("sm_90", "gh200 144g hbm3e"),
        ("sm_100", "gb200"),
        # consumer and workstation GPUs (issue 35)
        ("sm_89", "GeForce RTX 4090"),
        ("sm_89", "RTX 6000 Ada Generation"),
        ("sm_89", "L4"),
        ("sm_86", "GeForce RTX 3090"),
        ("sm_86", "A10G"),
        ("sm_75", "T4"),
        ("sm_120", "GeForce RTX 5090"),
        ("sm_120", "RTX PRO 6000 Blackwell"),
        ("gfx1100", "RX 7900 XTX"),
        ("gfx1100", "W7900"),
        ("gfx1151", "Radeon 8060S"),
    }
    for sec in bundled:
        # Turing (T4) has no bf16 path; the A10G section carries its memory roof only
        if "bf16" in sec.flops:
            assert sec.flops["bf16"] == sec.flops["fp16"], sec.title
        assert sec.source and len(sec.source) > 20, sec.title
        assert sec.title.startswith(sec.gfx)
        assert sec.hbm_bw_bytes_s > 1e11
        assert all(v >= 1e12 for v in sec.flops.values())  # FLOP/s, not TFLOP/s
    defaults = sorted(s.gfx for s in bundled if s.default)
    assert defaults == sorted({s.gfx for s in bundled})  # exactly one default per arch


def test_repo_root_symlink_points_at_bundled_table():
    link = REPO_ROOT / "peaks.md"
    assert link.is_symlink()
    assert not Path(link.readlink()).is_absolute()
    assert link.resolve() == (REPO_ROOT / "roofline_tui" / "data" / "peaks.md").resolve()


@pytest.mark.parametrize(
    ("kwargs", "gfx", "product", "hbm", "expected_flops"),
    [
        ({"gfx": "gfx90a"}, "gfx90a", "mi250x", 1.6384e12, {"bf16": 1.915e14, "fp64": 4.79e13}),
        ({"gfx": "gfx942"}, "gfx942", "mi300x", 5.3e12, {"bf16": 1.3074e15, "fp8": 2.6149e15}),
        (
            {"gfx": "gfx942", "product": "MI325X"},
            "gfx942",
            "mi325x",
            6.0e12,
            {"bf16": 1.3074e15, "fp8": 2.6149e15},
        ),
        ({"gfx": "gfx950"}, "gfx950", "mi355x", 8.0e12, {"fp8": 5.0332e15, "fp4": 1.00663e16}),
        (
            {"gfx": "gfx950", "device": "mi350x"},
            "gfx950",
            "mi350x",
            8.0e12,
            {"bf16": 2.3069e15, "fp8": 4.6137e15},
        ),
        ({"gfx": "sm_80"}, "sm_80", "a100", 2.039e12, {"bf16": 3.12e14, "tf32": 1.56e14}),
        ({"gfx": "sm_90"}, "sm_90", "h100", 3.35e12, {"bf16": 9.894e14, "fp8": 1.9789e15}),
        ({"gfx": "sm_90", "product": "H200"}, "sm_90", "h200", 4.8e12, {"fp8": 1.9789e15}),
        ({"gfx": "sm_100"}, "sm_100", "b200", 8.0e12, {"bf16": 2.25e15, "fp4": 9.0e15}),
    ],
)
def test_bundled_lookups(bundled, kwargs, gfx, product, hbm, expected_flops):
    peaks = resolve_peaks(bundled, **kwargs)
    assert (peaks.gfx, peaks.product) == (gfx, product)
    assert peaks.hbm_bw_bytes_s == pytest.approx(hbm)
    for dtype, value in expected_flops.items():
        # the data-sheet figures; ``flops`` is the roof in use (a measured ceiling where the
        # table has one: tests/core/test_measured_ceilings.py)
        assert peaks.flops_data_sheet[dtype] == pytest.approx(value)
        assert peaks.flops[dtype] == peaks.flops_measured.get(dtype, value)
    assert peaks.source == "table"
    assert peaks.confidence == "high"
    # §8.2: equal data-sheet bf16/fp16 figures prove nothing and no section has both measured,
    # so the check is not made (None), which is neither validated nor vetoed
    assert peaks.compute_validated is None
    assert peaks.problems == []
    assert peaks.citation and product.upper()[:4] in peaks.citation.upper()


def test_gfx950_default_and_fp8_ridge(bundled):
    peaks = resolve_peaks(bundled, gfx="gfx950")
    assert peaks.hbm_bw_bytes_s == 8.0e12
    assert peaks.flops["fp8"] == pytest.approx(5.03e15, rel=1e-3)
    assert peaks.flops["fp8"] / peaks.hbm_bw_bytes_s == pytest.approx(629, abs=0.5)
    assert "tf32" not in peaks.flops  # CDNA 4 has no native XF32 matrix path
    assert peaks.l2_bytes == 4194304 and peaks.cu == 256


def test_device_and_product_spellings(bundled):
    cases = {
        "H200": "h200",
        "NVIDIA H200": "h200",
        "h100 sxm": "h100",
        "NVIDIA H100 80GB HBM3": "h100",
        "A100-SXM4-80GB": "a100",
        "MI325X": "mi325x",
        "AMD Instinct MI325X": "mi325x",
        "mi355x": "mi355x",
        "MI-355X OAM": "mi355x",
    }
    for name, product in cases.items():
        assert resolve_peaks(bundled, gfx=None, device=name).product == product, name
        assert resolve_peaks(bundled, gfx=None, product=name).product == product, name


def test_device_flag_beats_env_product(bundled):
    peaks = resolve_peaks(bundled, gfx="gfx942", product="MI300X", device="MI325X")
    assert peaks.product == "mi325x" and peaks.hbm_bw_bytes_s == 6.0e12


def test_device_overriding_profile_arch_is_reported(bundled):
    peaks = resolve_peaks(bundled, gfx="gfx950", device="H200")
    assert peaks.product == "h200"
    assert any("overrides" in p for p in peaks.problems)


def test_product_of_another_arch_is_not_applied(bundled):
    peaks = resolve_peaks(bundled, gfx="gfx950", product="H200")
    assert peaks.product == "mi355x"
    assert any("disagrees" in p for p in peaks.problems)


def test_variant_with_other_bandwidth_gets_its_own_section(bundled):
    # an H100 PCIe has 2.0 TB/s; it must not be treated as the H100 SXM default
    pcie = match_product("H100 PCIe", bundled)
    assert pcie is not None and pcie.product == "h100 pcie"
    peaks = resolve_peaks(bundled, gfx="sm_90", product="NVIDIA H100 PCIe")
    assert (peaks.product, peaks.hbm_bw_bytes_s, peaks.confidence) == ("h100 pcie", 2.0e12, "high")


def test_unrecognised_product_of_a_known_arch_is_medium_with_a_note(bundled):
    # H200 NVL has no section: the sm_90 default answers, but no longer at confidence high
    peaks = resolve_peaks(bundled, gfx="sm_90", product="NVIDIA H200 NVL")
    assert (peaks.product, peaks.source, peaks.confidence) == ("h100", "table", "medium")
    assert any("'NVIDIA H200 NVL' not in the peak table" in p and "medium" in p
               for p in peaks.problems)


def test_unknown_device_flag_is_reported(bundled):
    peaks = resolve_peaks(bundled, gfx="gfx942", device="quantum-9000")
    assert peaks.product == "mi300x" and peaks.confidence == "medium"
    assert any("quantum-9000" in p for p in peaks.problems)


@pytest.mark.parametrize(
    ("raw", "arch"),
    [
        ("gfx950", "gfx950"),
        ("gfx950:sramecc+:xnack-", "gfx950"),
        ("GFX942", "gfx942"),
        ("amdgcn-amd-amdhsa--gfx90a:xnack+", "gfx90a"),
        ("sm_90", "sm_90"),
        ("sm90", "sm_90"),
        ("sm_90a", "sm_90"),
        ("compute_80", "sm_80"),
        ("9.0", "sm_90"),
        ("10.0", "sm_100"),
        (90500, "gfx950"),
        ("90402", "gfx942"),
        (90010, "gfx90a"),
        ("hopper", "sm_90"),
        ("  ", None),
        (None, None),
    ],
)
def test_normalize_arch(raw, arch):
    assert normalize_arch(raw) == arch


@pytest.mark.parametrize("gfx", ["gfx950:sramecc+:xnack-", "9.0", "sm90", "sm_100a"])
def test_arch_spellings_resolve_to_table(bundled, gfx):
    peaks = resolve_peaks(bundled, gfx=gfx)
    assert peaks.source == "table" and peaks.confidence == "high"


# --- upstream table -------------------------------------------------------------------------


def test_upstream_table_loads(upstream):
    assert {(s.gfx, s.product) for s in upstream} == {
        ("gfx1201", "r9700"),
        ("gfx950", None),
        ("gfx942", None),
        ("gfx1151", None),
    }
    gfx950 = resolve_peaks(upstream, gfx="gfx950")
    assert gfx950.source == "table"
    assert gfx950.hbm_bw_bytes_s == 8.0e12
    assert gfx950.flops["fp8"] == 5.0e15
    assert gfx950.flops["fp8"] / gfx950.hbm_bw_bytes_s == pytest.approx(625)
    # the upstream table holds data-sheet figures only: nothing measured, nothing validated
    assert gfx950.compute_validated is None and gfx950.flops_basis["bf16"] == "data sheet"
    strix = resolve_peaks(upstream, gfx="gfx1151")
    assert strix.hbm_bw_bytes_s == 256.0e9
    assert strix.l2_bytes == 2097152
    assert [s.mall_bytes for s in upstream if s.gfx == "gfx1151"] == [33554432]


def test_upstream_r9700_never_answers_bare_gfx1201(upstream):
    bare = resolve_peaks(upstream, gfx="gfx1201")
    assert bare.source == "none"
    assert bare.hbm_bw_bytes_s is None and bare.flops == {}
    assert bare.product is None
    assert any("r9700" in p for p in bare.problems)
    # ... nor when the device properties say gfx1201 but cannot be used to derive anything
    bare_props = resolve_peaks(upstream, gfx=None, device_props={"gcnArchName": "gfx1201"})
    assert bare_props.hbm_bw_bytes_s != 6.4e11
    named = resolve_peaks(upstream, gfx="gfx1201", product="Radeon AI PRO R9700")
    assert named.product == "r9700" and named.hbm_bw_bytes_s == 6.4e11
    assert resolve_peaks(upstream, gfx=None, device="r9700").flops["fp8"] == 3.83e14


# --- bf16/fp16 validation -------------------------------------------------------------------

_MISMATCH = """
# test part
## gfx999 — microbenched peaks
```yaml
gfx: gfx999
hbm_bw_bytes_s: 5.0e12
flops:
  bf16: 6.5e14   # reads ~2x low
  fp16: 1.3e15
```
"""


def test_bf16_fp16_mismatch_invalidates_compute_axis_only():
    sections, problems = parse_peaks_md(_MISMATCH)
    assert problems == [] and len(sections) == 1
    peaks = resolve_peaks(sections, gfx="gfx999")
    assert peaks.source == "table"
    assert peaks.compute_validated is False
    assert peaks.hbm_bw_bytes_s == 5.0e12  # memory axis still usable
    assert any("bf16" in p and "fp16" in p for p in peaks.problems)


def test_missing_fp16_cannot_be_validated():
    sections, _ = parse_peaks_md(
        "```yaml\ngfx: gfx998\nhbm_bw_bytes_s: 1e12\nflops: {fp32: 1.0e13}\n```"
    )
    peaks = resolve_peaks(sections, gfx="gfx998")
    # an incomplete pair is a check that cannot be made (None), not a failed one (False):
    # nothing disagrees, so the compute axis is not vetoed; its data-sheet roof lowers the
    # confidence of a compute-axis verdict instead
    assert peaks.compute_validated is None
    assert peaks.compute_check and "incomplete" in peaks.compute_check
    assert peaks.hbm_bw_bytes_s == 1e12


# --- derived and unknown --------------------------------------------------------------------


def test_derived_from_torch_style_props():
    props = {
        "name": "Some Future GPU",
        "gcnArchName": "gfx941:sramecc+:xnack-",
        "multi_processor_count": 228,
        "clock_rate_hz": 2.1e9,
        "memory_clock_rate_hz": 2.6e9,
        "memory_bus_width_bits": 8192,
    }
    peaks = resolve_peaks([], gfx=None, device_props=props)
    assert peaks.source == "derived" and peaks.confidence == "low"
    assert peaks.gfx == "gfx941"
    assert peaks.hbm_bw_bytes_s == pytest.approx(2.6e9 * 8192 / 8 * 2)
    assert peaks.flops["bf16"] == pytest.approx(228 * 2.1e9 * 2048)  # CDNA 3 rate
    assert peaks.flops["fp8"] == pytest.approx(228 * 2.1e9 * 4096)
    assert peaks.flops["bf16"] == peaks.flops["fp16"]
    assert any("derived" in p for p in peaks.problems)


def test_cuda_unit_conventions_khz():
    # CUDA deviceProp reports clockRate / memoryClockRate in kHz
    props = {"memoryClockRate": 1_215_000, "memoryBusWidth": 5120, "numSms": 100}
    peaks = derive_peaks_from_props(props, gfx="sm_70")
    assert peaks.hbm_bw_bytes_s == pytest.approx(1.215e9 * 5120 / 8 * 2)
    assert peaks.flops == {}
    assert any("compute peaks not derivable" in p for p in peaks.problems)


@needs_shared
def test_derived_from_real_rocprofv3_agent_info():
    path = REAL / "rocprofv3" / "hipkittens_gfx950_bank_test_agent_info.csv"
    rows = list(csv.DictReader(path.open()))
    # against an empty table the GPU row is picked from the CPU+GPU list and derived
    peaks = resolve_peaks([], gfx=None, device_props=rows)
    assert peaks.source == "derived" and peaks.confidence == "low"
    assert peaks.gfx == "gfx950" and peaks.cu == 256
    assert peaks.flops["fp8"] == pytest.approx(256 * 2.4e9 * 8192)  # ≈ the MI355X table value
    assert peaks.hbm_bw_bytes_s is None  # agent_info carries no memory clock
    # with the bundled table, the arch in the props finds the real section
    table = resolve_peaks(load_peak_table()[0], gfx=None, device_props=rows)
    assert table.source == "table" and table.product == "mi355x"


@needs_shared
def test_derived_from_real_rocprof_compute_sysinfo():
    path = REAL / "rocprofv3" / "hipkittens_MI325X_gfx942_rocprof-compute_sysinfo.csv"
    row = next(csv.DictReader(path.open()))
    peaks = resolve_peaks([], gfx="gfx942", device_props=row)
    assert peaks.source == "derived"
    assert peaks.flops["bf16"] == pytest.approx(304 * 2.1e9 * 2048)
    assert peaks.flops["bf16"] == pytest.approx(1.3074e15, rel=1e-3)


@needs_shared
def test_real_torch_device_properties(bundled):
    a100 = json.loads((REAL / "torch" / "hta_A100_simple_add_trace_trimmed.json").read_text())
    peaks = resolve_peaks(bundled, gfx=None, device_props=a100["deviceProperties"][0])
    assert peaks.gfx == "sm_80" and peaks.source == "table"

    mi250 = json.loads(
        (REAL / "torch" / "hta_MI250_rocm6.2_minitoy_train_kineto.json").read_text()
    )["deviceProperties"][0]
    # ROCm reports computeMajor 9 / minor 0 for gfx90a: that must not become sm_90 (H100)
    wrong = resolve_peaks(bundled, gfx="9.0", device_props=mi250)
    assert wrong.gfx != "sm_90" and wrong.product != "h100"
    assert wrong.source == "none" and wrong.confidence == "low"
    # the 104-CU part differs from the 110-CU MI250X section: flagged, numbers still given
    gcd = resolve_peaks(bundled, gfx="gfx90a", device_props=mi250)
    assert gcd.product == "mi250x"
    assert any("104" in p for p in gcd.problems)


def test_nothing_known_gives_source_none(bundled):
    peaks = resolve_peaks(bundled, gfx="gfx1030")  # RDNA 2: not in the table
    assert isinstance(peaks, Peaks)
    assert peaks.source == "none" and peaks.confidence == "low"
    assert peaks.hbm_bw_bytes_s is None and peaks.flops == {}
    assert peaks.compute_validated is False
    assert peaks.problems and "gfx1030" in peaks.problems[0]
    nothing = resolve_peaks(bundled, gfx=None)
    assert nothing.source == "none" and "unknown" in nothing.problems[0]


# --- peak_flops_for -------------------------------------------------------------------------


def test_peak_flops_for_dtypes(bundled):
    mi300x = resolve_peaks(bundled, gfx="gfx942")
    # bf16: the measured MAMF ceiling (668.4) replaces the 1307.4 data sheet; the note now
    # always names the roof and its source
    value, used, note = peak_flops_for(mi300x, "c10::BFloat16")
    assert (value, used) == (6.684e14, "bf16") and note and "measured" in note
    value, used, note = peak_flops_for(mi300x, "float8_e4m3fnuz")
    assert (value, used) == (2.6149e15, "fp8") and note and "data sheet" in note
    # no fp4 matrix cores on CDNA 3: a kernel with fp4 operands dequantises them, so the roof
    # is bf16's measured 668.4 TFLOP/s, never the 4x faster fp8 data sheet (2614.9) it fell to
    value, used, note = peak_flops_for(mi300x, "mxfp4")
    assert (value, used) == (6.684e14, "bf16") and note and "no fp4 matrix cores" in note

    a100 = resolve_peaks(bundled, gfx="sm_80")
    value, used, note = peak_flops_for(a100, "fp8")
    assert (value, used) == (2.712e14, "bf16")  # the measured bf16 ceiling (MAMF), not 312
    assert note and "fp8" in note

    value, used, note = peak_flops_for(a100, "quux")
    assert (value, used) == (2.712e14, "bf16") and note and "quux" in note
    value, used, note = peak_flops_for(a100, None)
    assert used == "bf16" and note

    none = resolve_peaks(bundled, gfx="gfx1030")
    value, used, note = peak_flops_for(none, "bf16")
    assert value is None and used is None and note


# --- robustness -----------------------------------------------------------------------------


def test_broken_blocks_are_reported_not_raised():
    text = """
## bad yaml
```yaml
gfx: gfx950
flops: {bf16: [unclosed
```
## no gfx
```yaml
hbm_bw_bytes_s: 1e12
```
## no bandwidth
```yaml
gfx: gfx950
hbm_bw_bytes_s: fast
```
## a list
```yaml
- gfx: gfx950
```
## good one
```yml
gfx: gfx950
hbm_bw_bytes_s: 8.0e12
flops: {bf16: 2.5e15, fp16: 2.5e15, fp8: "5.0e15", nonsense: 1, fp4: -1}
```
"""
    sections, problems = parse_peaks_md(text)
    assert [s.title for s in sections] == ["good one"]
    assert sections[0].flops == {"bf16": 2.5e15, "fp16": 2.5e15, "fp8": 5.0e15}
    assert len(problems) == 6
    assert all("\n" not in p for p in problems)


def test_missing_file_never_raises(tmp_path):
    sections, problems = load_peak_table(tmp_path / "nope.md")
    assert sections == [] and problems and "nope.md" in problems[0]
    peaks = resolve_peaks(sections, gfx="gfx950")
    assert peaks.source == "none"


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_arbitrary_text_never_raises(text):
    sections, problems = parse_peaks_md(text)
    assert isinstance(sections, list) and isinstance(problems, list)


_yamlish = st.text(alphabet="gfx950:{}[]\n -#'\"e.12abhmw_sltp&*!|>", max_size=200)


@settings(max_examples=200, deadline=None)
@given(_yamlish, st.sampled_from(["yaml", "yml", ""]))
def test_arbitrary_fenced_yaml_never_raises(body, lang):
    text = f"## t\n```{lang}\ngfx: gfx950\n{body}\n```\n"
    sections, problems = parse_peaks_md(text)
    for sec in sections:
        assert sec.hbm_bw_bytes_s > 0 and math.isfinite(sec.hbm_bw_bytes_s)
    peaks = resolve_peaks(sections, gfx="gfx950")
    assert isinstance(peaks, Peaks)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(st.none(), st.text(max_size=30)),
    st.one_of(st.none(), st.text(max_size=30)),
    st.one_of(st.none(), st.text(max_size=30)),
    st.one_of(
        st.none(),
        st.dictionaries(st.text(max_size=20), st.one_of(st.text(max_size=10), st.integers())),
    ),
)
def test_resolve_never_raises(gfx, product, device, props):
    sections = load_peak_table()[0]
    peaks = resolve_peaks(sections, gfx=gfx, product=product, device=device, device_props=props)
    assert isinstance(peaks, Peaks)
    assert not any("resolution failed" in p for p in peaks.problems)  # no internal exception
    if peaks.source == "table":
        assert peaks.confidence in ("high", "medium") and peaks.hbm_bw_bytes_s


def test_module_does_not_import_textual():
    import subprocess
    import sys

    code = "import sys, roofline_tui.core.peaks; sys.exit('textual' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
