"""A partitioned device gets the table's whole-chip peaks scaled to its slice.

MI300X (bundled table: 304 CUs, 5.3e12 B/s, bf16 1.3074e15, fp8 2.6149e15) in CPX mode exposes
38 CUs, one XCD of eight: compute × 38/304 = 0.125 → bf16 163.4 TFLOP/s, fp8 326.9 TFLOP/s.
HBM bandwidth follows the memory partition, not the CU share: under NPS1 every partition reaches
all HBM stacks and keeps 5.3e12 B/s; under NPS4 it streams a quarter, 1.325e12 B/s. Confidence
drops from high to medium with a note naming the CU count. The full chip (304 CUs) is unchanged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from roofline_tui.core.peaks import Peaks, load_peak_table, resolve_peaks
from roofline_tui.importers.device import identify

from .helpers import entry, run

GIB = 2**30
MI300X_BF16 = 1.3074e15
MI300X_FP8 = 2.6149e15


@pytest.fixture(scope="module")
def bundled():
    return load_peak_table()[0]


def _kineto_mi300x(num_sms: int, mem_bytes: int) -> dict[str, Any]:
    """One Kineto ``deviceProperties`` entry as ROCm PyTorch writes it for an MI300X."""
    return {"id": 0, "name": "AMD Instinct MI300X", "totalGlobalMem": mem_bytes,
            "computeMajor": 9, "computeMinor": 4, "maxThreadsPerBlock": 1024,
            "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 64,
            "sharedMemPerBlock": 65536, "numSms": num_sms,
            "gcnArchName": "gfx942:sramecc+:xnack-"}


def _resolve_like_env(bundled, kineto: dict[str, Any]) -> Peaks:
    """What an import leaves in env_report.json (gfx, product, device_props), resolved."""
    info = identify(kineto["name"], kineto, source="test deviceProperties[id=0]")
    assert info.arch == "gfx942" and info.product == "mi300x"
    assert info.props["numSms"] == kineto["numSms"]
    return resolve_peaks(bundled, gfx=info.arch, product=info.product, device_props=info.props)


def test_full_chip_is_unchanged(bundled) -> None:
    plain = resolve_peaks(bundled, gfx="gfx942", product="mi300x")
    full = _resolve_like_env(bundled, _kineto_mi300x(304, 192 * GIB))
    assert full.confidence == plain.confidence == "high"
    assert full.hbm_bw_bytes_s == plain.hbm_bw_bytes_s == pytest.approx(5.3e12)
    assert full.flops == plain.flops
    # ``flops`` is the roof in use (bf16: the measured MAMF ceiling); the data sheet is kept
    assert full.flops_data_sheet["bf16"] == pytest.approx(MI300X_BF16, rel=1e-4)
    assert full.flops["bf16"] == pytest.approx(668.4e12)
    assert full.cu == 304
    assert full.problems == plain.problems
    assert not any("CUs" in p for p in full.problems)


def test_cpx_nps1_scales_compute_not_bandwidth(bundled) -> None:
    """38 of 304 CUs and all 192 GiB visible: CPX under NPS1."""
    p = _resolve_like_env(bundled, _kineto_mi300x(38, 192 * GIB))
    assert p.source == "table" and p.product == "mi300x"
    assert p.cu == 38
    assert p.flops_data_sheet["bf16"] == pytest.approx(MI300X_BF16 / 8, rel=1e-4)  # 163.4
    assert p.flops["fp8"] == pytest.approx(MI300X_FP8 / 8, rel=1e-4)
    # the measured bf16 ceiling (the roof in use) scales with the CUs like the data sheet
    assert p.flops["bf16"] == p.flops_measured["bf16"] == pytest.approx(668.4e12 / 8)
    # §8.2 cannot be checked (no measured fp16 ceiling): not validated, and not vetoed
    assert p.flops_data_sheet["bf16"] == p.flops_data_sheet["fp16"]
    assert p.compute_validated is None
    assert p.hbm_bw_bytes_s == pytest.approx(5.3e12)
    assert p.confidence == "medium"
    note = next(x for x in p.problems if "38 of" in x)
    assert "304 CUs" in note and "CPX" in note and "NPS1" in note
    assert p.citation is not None and "38-CU partition" in p.citation


def test_cpx_nps4_scales_bandwidth_by_the_memory_share(bundled) -> None:
    """38 CUs and 48 GiB visible (a quarter of the HBM): NPS4, bandwidth 5.3e12 / 4."""
    p = _resolve_like_env(bundled, _kineto_mi300x(38, 48 * GIB))
    assert p.flops_data_sheet["bf16"] == pytest.approx(MI300X_BF16 / 8, rel=1e-4)
    assert p.hbm_bw_bytes_s == pytest.approx(1.325e12)
    assert p.confidence == "medium"
    assert any("NPS4" in x for x in p.problems)


def test_rocprof_compute_sysinfo_modes(bundled) -> None:
    """rocprof-compute sysinfo names the modes: cu_per_gpu 38, CPX, NPS4 / NPS1."""
    nps4 = resolve_peaks(bundled, gfx="gfx942", product="MI300X", device_props={
        "gpu_arch": "gfx942", "cu_per_gpu": "38", "compute_partition": "CPX",
        "memory_partition": "NPS4"})
    assert nps4.hbm_bw_bytes_s == pytest.approx(1.325e12)
    assert nps4.flops["fp8"] == pytest.approx(MI300X_FP8 / 8, rel=1e-4)
    nps1 = resolve_peaks(bundled, gfx="gfx942", product="MI300X", device_props={
        "cu_per_gpu": "38", "compute_partition": "CPX", "memory_partition": "NPS1"})
    assert nps1.hbm_bw_bytes_s == pytest.approx(5.3e12)


def test_agent_info_without_memory_assumes_nps1(bundled) -> None:
    """rocprofv3 agent_info (Cu_Count 38, Num_Xcc 1) says nothing of memory: NPS1 assumed and
    said so."""
    p = resolve_peaks(bundled, gfx="gfx942", product="MI300X",
                      device_props={"Cu_Count": 38, "Num_Xcc": 1, "Name": "gfx942"})
    assert p.hbm_bw_bytes_s == pytest.approx(5.3e12)
    assert p.confidence == "medium"
    assert any("memory partition unknown" in x and "NPS1" in x for x in p.problems)


@pytest.mark.parametrize(("product", "full", "cu", "n"), [
    ("MI300X", 304, 152, 2), ("MI325X", 304, 76, 4), ("MI300A", 228, 38, 6),
    ("MI355X", 256, 32, 8), ("MI350X", 256, 128, 2)])
def test_other_partitionable_parts(bundled, product: str, full: int, cu: int, n: int) -> None:
    whole = resolve_peaks(bundled, gfx=None, product=product)
    p = resolve_peaks(bundled, gfx=None, product=product, device_props={"numSms": cu})
    assert whole.cu == full
    assert p.flops["bf16"] == pytest.approx(whole.flops["bf16"] / n)
    assert p.hbm_bw_bytes_s == whole.hbm_bw_bytes_s
    assert p.confidence == "medium"


def test_h100_mig_instance(bundled) -> None:
    """An H100 MIG 1g.10gb instance: 16 of 132 SMs, 10 GiB of 80 (1/8 of the memory slices):
    bf16 989.4e12 × 16/132 = 119.9e12, HBM 3.35e12 / 8 = 4.19e11."""
    p = resolve_peaks(bundled, gfx="sm_90", product="H100", device_props={
        "name": "NVIDIA H100 80GB HBM3 MIG 1g.10gb", "numSms": 16, "totalGlobalMem": 10 * GIB})
    assert p.flops_data_sheet["bf16"] == pytest.approx(989.4e12 * 16 / 132, rel=1e-4)
    assert p.flops["bf16"] == pytest.approx(794.5e12 * 16 / 132, rel=1e-4)  # measured roof
    assert p.hbm_bw_bytes_s == pytest.approx(3.35e12 / 8)
    assert p.confidence == "medium"
    assert any("16 of" in x and "132 SMs" in x for x in p.problems)


def test_other_sku_is_only_flagged(bundled) -> None:
    """114 SMs under an H100 label is an H100 PCIe, not a MIG slice; 300 CUs is no partition of
    an MI300X: the peaks stay the table's, with the mismatch flagged."""
    h = resolve_peaks(bundled, gfx="sm_90", product="H100", device_props={"numSms": 114})
    assert h.flops_data_sheet["bf16"] == pytest.approx(989.4e12, rel=1e-4)
    assert h.flops["bf16"] == pytest.approx(794.5e12) and h.confidence == "high"  # measured
    assert any("114 CUs/SMs" in x for x in h.problems)
    m = resolve_peaks(bundled, gfx="gfx942", product="MI300X", device_props={"numSms": 300})
    assert m.flops_data_sheet["bf16"] == pytest.approx(MI300X_BF16, rel=1e-4)
    assert m.confidence == "high"


def test_partition_through_analyze(worked_example: Path) -> None:
    """The §9 round on one CPX slice of its MI355X (32 of 256 CUs, all HBM visible): fp8 peak
    5.0332e15 / 8 = 6.2915e14 in the artifact, HBM still 8 TB/s, peaks confidence medium; the
    memory-bound MoE keeps its 0.88."""
    env_path = worked_example.parent.parent / "env_report.json"
    env = json.loads(env_path.read_text())
    env["device_props"] = {"name": "AMD Instinct MI355X", "numSms": 32, "warpSize": 64,
                           "totalGlobalMem": 288 * GIB, "gcnArchName": "gfx950"}
    env_path.write_text(json.dumps(env))
    art = run(worked_example)
    assert art.peaks.confidence == "medium"
    assert art.peaks.flops["fp8"] == pytest.approx(5.0332e15 / 8, rel=1e-4)
    assert art.peaks.hbm_bw_bytes_s == pytest.approx(8.0e12)
    assert art.peaks.citation is not None and "32-CU partition" in art.peaks.citation
    assert any("32 of" in x for x in art.skill_errors)
    moe = entry(art, "fused_moe_kernel")
    assert moe.roofline_pct == pytest.approx(0.88, abs=0.01)
