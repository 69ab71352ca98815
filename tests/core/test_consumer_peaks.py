"""Issue 35: consumer and workstation GPUs in the bundled peak table. Each device string is
written as the profiler prints it (torch ``deviceProperties.name``, ``nvidia-smi``, rocminfo's
marketing name); each figure is the section's cited data-sheet number, dense:

* GeForce parts accumulate FP16/BF16 in FP32 at half the FP16-accumulate rate: RTX 4090
  330.3 / 2 = 165.15 ≈ 165.2 TFLOP/s, RTX 3090 142 / 2 = 71, RTX 5090 419 / 2 = 209.5;
* workstation parts keep the full rate: RTX 6000 Ada 1,457 sparse FP8 / 2 = 728.5 dense FP8,
  / 2 again = 364.25 FP16; RTX PRO 6000 Blackwell 4,000 sparse FP4 / 2 / 4 = 500 FP16;
* RDNA 3 WMMA: 96 CUs × 2.5 GHz × 512 FLOP/clock = 122.88 ≈ 122.8 TFLOP/s (RX 7900 XTX);
  Strix Halo 40 × 2.9 GHz × 512 = 59.39 ≈ 59.4, its LPDDR5X-8000 × 256 bit / 8 = 256 GB/s.
"""

from __future__ import annotations

import pytest

from roofline_tui.core.peaks import load_peak_table, resolve_peaks

CASES = [
    # (device string, arch, section product, bandwidth B/s, bf16 FLOP/s or None)
    ("NVIDIA GeForce RTX 4090", "sm_89", "GeForce RTX 4090", 1.008e12, 1.652e14),
    ("NVIDIA GeForce RTX 3090", "sm_86", "GeForce RTX 3090", 9.36e11, 7.1e13),
    ("NVIDIA GeForce RTX 5090", "sm_120", "GeForce RTX 5090", 1.792e12, 2.095e14),
    ("NVIDIA RTX 6000 Ada Generation", "sm_89", "RTX 6000 Ada Generation", 9.6e11, 3.6425e14),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "sm_120", "RTX PRO 6000 Blackwell",
     1.792e12, 5.0e14),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "sm_120", "RTX PRO 6000 Blackwell",
     1.792e12, 5.0e14),
    ("NVIDIA L4", "sm_89", "L4", 3.0e11, 1.21e14),
    ("NVIDIA L40S", "sm_89", "l40s", 8.64e11, 3.6205e14),
    ("Tesla T4", "sm_75", "T4", 3.2e11, None),
    ("NVIDIA A10G", "sm_86", "A10G", 6.0e11, None),
    ("AMD Radeon RX 7900 XTX", "gfx1100", "RX 7900 XTX", 9.6e11, 1.228e14),
    ("AMD Radeon PRO W7900", "gfx1100", "W7900", 8.64e11, 1.226e14),
    ("AMD Radeon 8060S Graphics", "gfx1151", "Radeon 8060S", 2.56e11, 5.94e13),
]


@pytest.mark.parametrize(("device", "arch", "product", "bw", "bf16"), CASES)
def test_device_string_resolves_to_its_section(device: str, arch: str, product: str,
                                               bw: float, bf16: float | None) -> None:
    sections, problems = load_peak_table()
    assert problems == []
    peaks = resolve_peaks(sections, gfx=arch, device=device)
    assert (peaks.product, peaks.source, peaks.confidence) == (product, "table", "high")
    assert peaks.hbm_bw_bytes_s == bw
    assert peaks.flops.get("bf16") == bf16
    if bf16 is not None:
        assert peaks.flops["fp16"] == bf16  # the table's bf16 == fp16 rule holds


def test_geforce_rates_are_the_fp32_accumulate_ones() -> None:
    """A GeForce card's bf16 roof is half its workstation sibling's per SM and clock: the RTX
    4090 (128 SMs, 2.52 GHz) at 165.2 against the RTX 6000 Ada (142 SMs, 2.505 GHz) at 364.25:
    per SM·GHz 165.2/(128·2.52) = 0.512 vs 364.25/(142·2.505) = 1.024 — a factor 2."""
    sections, _ = load_peak_table()
    geforce = resolve_peaks(sections, gfx="sm_89", device="NVIDIA GeForce RTX 4090")
    pro = resolve_peaks(sections, gfx="sm_89", device="NVIDIA RTX 6000 Ada Generation")
    ratio = (pro.flops["bf16"] / (142 * 2.505)) / (geforce.flops["bf16"] / (128 * 2.52))
    assert ratio == pytest.approx(2.0, rel=0.01)


def test_turing_has_no_bf16_roof_and_a10g_no_compute_roof() -> None:
    """T4: fp16 65 TFLOP/s and int8 130 TOPS, no bf16/fp8 entry (Turing has no such path);
    A10G: the memory roof only (NVIDIA publishes no data sheet for the AWS part)."""
    sections, _ = load_peak_table()
    t4 = resolve_peaks(sections, gfx="sm_75", device="Tesla T4")
    assert t4.flops["fp16"] == 6.5e13 and t4.flops["int8"] == 1.3e14
    assert "bf16" not in t4.flops and "fp8" not in t4.flops
    a10g = resolve_peaks(sections, gfx="sm_86", device="NVIDIA A10G")
    assert a10g.flops == {} and a10g.hbm_bw_bytes_s == 6.0e11


def test_an_unlisted_edition_falls_back_with_a_note() -> None:
    """The 300 W Max-Q edition runs lower clocks than the section's parts: it is not aliased,
    so it gets the sm_120 default at confidence medium, named in the problems."""
    sections, _ = load_peak_table()
    peaks = resolve_peaks(sections, gfx="sm_120",
                          device="NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition")
    assert peaks.confidence == "medium"
    assert any("Max-Q" in p for p in peaks.problems)
