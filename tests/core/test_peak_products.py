"""Product-aware peaks (issue 12 item 7): the names profilers print, their datasheet numbers,
and a medium-confidence fallback for a product the table does not know."""

from __future__ import annotations

import pytest

from roofline_tui.core.peaks import host_link_for, load_peak_table, resolve_peaks


@pytest.fixture(scope="module")
def bundled():
    sections, problems = load_peak_table()
    assert problems == []
    return sections


# (name as printed by nvidia-smi / torch / rocm-smi, arch, product, HBM B/s, bf16 FLOP/s)
PRINTED = [
    ("NVIDIA H100 80GB HBM3", "sm_90", "h100", 3.35e12, 9.894e14),
    ("NVIDIA H100 PCIe", "sm_90", "h100 pcie", 2.0e12, 7.56e14),
    ("NVIDIA H100 NVL", "sm_90", "h100 nvl", 3.9e12, 8.35e14),
    ("NVIDIA H800", "sm_90", "h800", 3.35e12, 9.894e14),
    ("NVIDIA H20", "sm_90", "h20", 4.0e12, 1.48e14),
    ("NVIDIA H200", "sm_90", "h200", 4.8e12, 9.894e14),
    ("NVIDIA GH200 480GB", "sm_90", "gh200 480gb", 4.0e12, 9.894e14),
    ("NVIDIA GH200 144G HBM3e", "sm_90", "gh200 144g hbm3e", 4.9e12, 9.894e14),
    ("NVIDIA A100-SXM4-80GB", "sm_80", "a100", 2.039e12, 3.12e14),
    ("NVIDIA A100-SXM4-40GB", "sm_80", "a100-sxm4-40gb", 1.555e12, 3.12e14),
    ("NVIDIA A100-PCIE-40GB", "sm_80", "a100-pcie-40gb", 1.555e12, 3.12e14),
    ("NVIDIA A100 80GB PCIe", "sm_80", "a100 80gb pcie", 1.935e12, 3.12e14),
    ("NVIDIA L40S", "sm_89", "l40s", 0.864e12, 3.6205e14),
    ("NVIDIA B200", "sm_100", "b200", 8.0e12, 2.25e15),
    ("NVIDIA GB200", "sm_100", "gb200", 8.0e12, 2.5e15),
    ("AMD Instinct MI210", "gfx90a", "mi210", 1.6e12, 1.81e14),
    ("AMD Instinct MI250X", "gfx90a", "mi250x", 1.6384e12, 1.915e14),
    ("MI250X package", "gfx90a", "mi250x package", 3.2768e12, 3.83e14),
    ("AMD Instinct MI300A", "gfx942", "mi300a", 5.3e12, 9.806e14),
    ("AMD Instinct MI300X", "gfx942", "mi300x", 5.3e12, 1.3074e15),
    ("AMD Instinct MI300X VF", "gfx942", "mi300x", 5.3e12, 1.3074e15),
    ("AMD Instinct MI325X", "gfx942", "mi325x", 6.0e12, 1.3074e15),
    ("AMD Instinct MI350X", "gfx950", "mi350x", 8.0e12, 2.3069e15),
    ("AMD Instinct MI355X", "gfx950", "mi355x", 8.0e12, 2.5166e15),
]


@pytest.mark.parametrize(("name", "arch", "product", "hbm", "bf16"), PRINTED)
def test_printed_names_resolve_to_their_own_section(bundled, name, arch, product, hbm, bf16):
    for kwargs in ({"product": name}, {"device": name}, {"device_props": {"name": name}}):
        peaks = resolve_peaks(bundled, gfx=arch, **kwargs)
        assert (peaks.gfx, peaks.product) == (arch, product), kwargs
        assert peaks.hbm_bw_bytes_s == pytest.approx(hbm)
        assert peaks.flops_data_sheet["bf16"] == pytest.approx(bf16)
        # §8.2: no section has measured bf16 *and* fp16 ceilings, so none is validated; equal
        # data-sheet figures prove nothing (None: not checked, not vetoed)
        assert peaks.confidence == "high" and peaks.compute_validated is None
        assert peaks.citation and "hardware-peaks.md" in peaks.citation  # a named source


def test_a100_40gb_no_longer_gets_the_80gb_bandwidth(bundled):
    """The bug: A100-SXM4-40GB matched the 80 GB entry, +31 % bandwidth (2.039/1.555 = 1.311)."""
    peaks = resolve_peaks(bundled, gfx="sm_80", product="NVIDIA A100-SXM4-40GB")
    assert peaks.hbm_bw_bytes_s == 1.555e12


@pytest.mark.parametrize(("arch", "name", "default"), [
    ("sm_90", "NVIDIA H200 NVL", "h100"),
    ("sm_80", "NVIDIA A100-PG509-200", "a100"),
    ("gfx942", "AMD Instinct MI308X", "mi300x"),
])
def test_unrecognised_product_is_the_arch_default_at_medium(bundled, arch, name, default):
    for kwargs in ({"product": name}, {"device_props": {"name": name}}, {"device": name}):
        peaks = resolve_peaks(bundled, gfx=arch, **kwargs)
        assert (peaks.product, peaks.source, peaks.confidence) == (default, "table", "medium")
        assert any(name in p and "medium" in p for p in peaks.problems), peaks.problems


def test_arch_alone_keeps_high_confidence(bundled):
    assert resolve_peaks(bundled, gfx="sm_90").confidence == "high"


@pytest.mark.parametrize(("arch", "product", "bw", "label"), [
    ("gfx942", "MI300X", 32e9 * 16 * 128 / 130 / 8, "PCIe Gen5 x16"),
    ("sm_80", None, 16e9 * 16 * 128 / 130 / 8, "PCIe Gen4 x16"),
    ("sm_90", "NVIDIA GH200 480GB", 450e9, "NVLink-C2C"),
    ("gfx942", "MI300A", 5.3e12, "unified HBM"),
    ("sm_75", "Tesla T4", 8e9 * 16 * 128 / 130 / 8, "PCIe Gen3 x16"),
    ("sm_120", "NVIDIA GeForce RTX 5090", 32e9 * 16 * 128 / 130 / 8, "PCIe Gen5 x16"),
    ("gfx1151", "AMD Radeon 8060S Graphics", 2.56e11, "unified LPDDR5X"),
])
def test_host_link_peaks(bundled, arch, product, bw, label):
    """PCIe Gen5 x16: 32 GT/s × 16 lanes × 128/130 / 8 = 63.0 GB/s per direction; Gen4 half
    that, 31.5 GB/s, Gen3 (T4) half again, 15.8 GB/s; Grace superchips NVLink-C2C 450 GB/s per
    direction; MI300A shares HBM, Strix Halo its LPDDR5X (256 GB/s)."""
    link, note = host_link_for(resolve_peaks(bundled, gfx=arch, product=product))
    assert link is not None and link.bytes_s == pytest.approx(bw)
    assert label in link.name


def test_unknown_host_link_gives_none(bundled):
    link, note = host_link_for(resolve_peaks(bundled, gfx="gfx1030"))
    assert link is None and "unknown" in note


# The board-number name some clouds' A100s print. totalGlobalMem of the real trace
# (hta_A100_simple_add_trace_trimmed.json): 42,297,524,224 B = 42.3 GB -> the 40 GB part, whose
# HBM2 moves 1.555 TB/s, not the 80 GB default's 2.039 TB/s (31 % more).
@pytest.mark.parametrize(("mem_bytes", "product", "hbm"), [
    (42_297_524_224, "a100-sxm4-40gb", 1.555e12),
    (85_198_045_184, "a100", 2.039e12),  # an 80 GB SXM4 board: 85.2 GB
])
def test_a100_board_number_is_told_apart_by_its_memory(bundled, mem_bytes, product, hbm):
    props = {"name": "NVIDIA A100-PG509-200", "totalGlobalMem": mem_bytes,
             "computeMajor": 8, "computeMinor": 0, "numSms": 108}
    p = resolve_peaks(bundled, gfx="sm_80", device_props=props)
    assert (p.product, p.hbm_bw_bytes_s, p.confidence) == (product, hbm, "high")
    assert "board number" in (p.citation or "")
    assert f"{mem_bytes / 1e9:.1f} GB" in (p.citation or "")


def test_a100_board_number_without_memory_is_the_default_at_medium(bundled):
    p = resolve_peaks(bundled, gfx="sm_80",
                      device_props={"name": "NVIDIA A100-PG509-200", "numSms": 108})
    assert (p.product, p.confidence) == ("a100", "medium")
    assert any("A100-PG509-200" in q for q in p.problems)


def test_a100_board_number_with_an_odd_memory_size_is_not_guessed(bundled):
    # 24 GB fits neither part: no board guess, the arch default at medium
    p = resolve_peaks(bundled, gfx="sm_80",
                      device_props={"name": "NVIDIA A100-PG509-200", "totalGlobalMem": 24e9})
    assert (p.product, p.confidence) == ("a100", "medium")
