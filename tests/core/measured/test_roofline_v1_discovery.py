"""roofline-v1 reports, counter-file discovery and the name-matching rule."""

from __future__ import annotations

import json

import pytest

from roofline_tui.core.measured import (
    discover_counter_files,
    load_counters,
    match_measurement,
    short_name,
)


def _report(eff: float, headroom: float, limit: str, status: str = "ok") -> dict:
    """A roofline-v1 report shaped as roofline_kernel.py writes it (input-formats.md §6)."""

    def case(cid, weight, e, h, lim):
        metrics = {
            "roofline_efficiency_pct": e,
            "headroom_ratio": h,
            "performance_gflops": 800000.0,
            "hbm_empirical_peak_gbps": 4000.0,
            "hbm_spec_peak_gbps": 5300.0,
            "compute_metric": "MFMA FLOPs (FP8)",
            "peak_basis": "empirical",
        }
        cls = {
            "theoretical_bound": "memory",
            "observed_limit": lim,
            "recommended_levers": ["fuse"],
            "confidence": "high",
            "evidence": [],
        }
        return {
            "case_id": cid,
            "status": "matched",
            "weight": weight,
            "matched_kernel_name": "fused_moe_kernel_0d1d2d",
            "kernel": "fused_moe_kernel",
            "shape": [64, 2048],
            "dtypes": ["fp8"],
            "metrics": metrics,
            "classification": cls,
        }

    return {
        "status": status,
        "policy": {"version": 1, "saturation_pct": 60.0},
        "target": {"logical_name": "fused_moe", "device": "MI355X", "gpu_id": 0},
        "tool_version": "rocprof-compute 3.1",
        "cases": [
            case("decode_m64", 3.0, eff, headroom, limit),
            case("prefill_m8192", 1.0, 50.0, 2.0, "latency_occupancy"),
            {"case_id": "broken", "status": "failed"},
        ],
        "summary": {
            "dominant_case_id": "decode_m64",
            "priority_order": [],
            "case_routes": [],
            "dominant_classification": {},
        },
    }


def _tree(tmp_path):
    roof = tmp_path / "eval" / "kernels" / "fused_moe_kernel_task" / "roofline"
    roof.mkdir(parents=True)
    (roof / "baseline_roofline.json").write_text(json.dumps(_report(88.0, 1.02, "hbm")))
    (roof / "post_roofline.json").write_text(json.dumps(_report(95.0, 1.0, "hbm")))
    return roof


def test_roofline_v1_baseline_wins_and_maps_fields(tmp_path):
    roof = _tree(tmp_path)
    cs = load_counters([roof / "post_roofline.json", roof / "baseline_roofline.json"])
    assert cs.problems == []
    m = cs.measurements["fused_moe_kernel"]
    assert m.source == "roofline-v1"
    assert m.path.endswith("baseline_roofline.json")
    assert m.roofline_pct == pytest.approx(0.88)
    assert m.attainable_speedup == pytest.approx(1.02)
    assert m.bound_type == "memory"
    assert m.bytes_per_dispatch is None and m.flops_per_dispatch is None
    assert m.corroboration["hbm_empirical_peak_gbps"] == 4000.0
    assert "fused_moe_kernel_0d1d2d" in m.aliases
    assert match_measurement(cs, "fused_moe_kernel_0d1d2d") is m


def test_roofline_v1_without_dominant_takes_heaviest_and_latency_limit(tmp_path):
    doc = _report(40.0, 2.2, "latency_occupancy", status="partial")
    doc["summary"] = {}
    p = tmp_path / "kernels" / "attn_task" / "roofline" / "post_roofline.json"
    p.parent.mkdir(parents=True)
    p.write_text(json.dumps(doc))
    m = load_counters([p]).measurements["attn"]
    assert m.roofline_pct == pytest.approx(0.40)
    assert m.bound_type == "latency"
    assert any("status partial" in n for n in m.notes)


def test_roofline_v1_skipped_report_is_a_problem(tmp_path):
    p = tmp_path / "baseline_roofline.json"
    p.write_text(
        json.dumps(
            {
                "status": "skipped",
                "reason": "rocprof_compute_unavailable",
                "cases": [],
                "summary": {},
            }
        )
    )
    cs = load_counters([p])
    assert cs.measurements == {}
    assert "rocprof_compute_unavailable" in cs.problems[0]


def test_counters_and_roofline_verdict_merge(tmp_path):
    roof = _tree(tmp_path)
    csv_path = tmp_path / "counter_collection.csv"
    csv_path.write_text(
        '"Dispatch_Id","Kernel_Name","Counter_Name","Counter_Value"\n'
        '1,"fused_moe_kernel","FETCH_SIZE",10\n1,"fused_moe_kernel","WRITE_SIZE",6\n'
    )
    m = load_counters([csv_path, roof / "baseline_roofline.json"]).measurements["fused_moe_kernel"]
    assert m.source == "rocprofv3-csv" and m.bytes_per_dispatch == 16 * 1024
    assert m.roofline_pct == pytest.approx(0.88)


def test_discover_counter_files(tmp_path):
    eval_dir = tmp_path / "eval"
    round_dir = eval_dir / "profile" / "round_0"
    c = round_dir / "counters"
    for name in [
        "pass_1/counter_collection.csv",
        "pass_2/counter_collection.csv",
        "pass_1/kernel_trace.csv",
        "pass_1/agent_info.csv",
        "rocpd/results.db",
        "ncu/gemm.ncu-rep",
        "ncu/gemm.csv",
        "pmc/pmc_perf.csv",
        "pmc/sysinfo.csv",
        "notes.txt",
        "run.json",
    ]:
        (c / name).parent.mkdir(parents=True, exist_ok=True)
        (c / name).write_text("x")
    roof = _tree(eval_dir.parent)  # eval/kernels/.../roofline
    found = discover_counter_files(round_dir)
    rel = [p.relative_to(tmp_path).as_posix() for p in found]
    assert rel == [
        "eval/profile/round_0/counters/ncu/gemm.csv",
        "eval/profile/round_0/counters/ncu/gemm.ncu-rep",
        "eval/profile/round_0/counters/pass_1/counter_collection.csv",
        "eval/profile/round_0/counters/pass_2/counter_collection.csv",
        "eval/profile/round_0/counters/pmc/pmc_perf.csv",
        "eval/profile/round_0/counters/rocpd/results.db",
        "eval/kernels/fused_moe_kernel_task/roofline/baseline_roofline.json",
        "eval/kernels/fused_moe_kernel_task/roofline/post_roofline.json",
    ]
    assert roof.exists()
    assert discover_counter_files(tmp_path / "nowhere") == []


@pytest.mark.parametrize(
    "name,short",
    [
        (
            "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)",
            "vectorized_elementwise_kernel",
        ),
        ("micro_tk(micro_globals) [clone .kd]", "micro_tk"),
        ("__amd_rocclr_fillBufferAligned.kd", "__amd_rocclr_fillBufferAligned"),
        (
            "_ZN2at6native29vectorized_elementwise_kernelILi4EEEviT_",
            "vectorized_elementwise_kernel",
        ),
        ("_Z16fused_moe_kernelPfS_", "fused_moe_kernel"),
        (
            "Cijk_Ailk_Bljk_BBS_BH_UserArgs_MT256x224x64_MI16x16x1_SN_LDS",
            "Cijk_Ailk_Bljk_BBS_BH_UserArgs_MT256x224x64_MI16x16x1_SN_LDS",
        ),
        ("", ""),
    ],
)
def test_short_name(name, short):
    assert short_name(name) == short


def test_matching_rule_order(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text(
        '"Dispatch_Id","Kernel_Name","Counter_Name","Counter_Value"\n'
        '1,"void at::native::vectorized_elementwise_kernel<4, Foo>(int)","FETCH_SIZE",1\n'
        '2,"_ZN2at6native29vectorized_elementwise_kernelILi8EEEviT_","FETCH_SIZE",1\n'
        '3,"_ZN2at6native29vectorized_elementwise_kernelILi8EEEviT_","FETCH_SIZE",1\n'
        '4,"Cijk_Ailk_Bljk_BBS_BH_MT256x224x64","FETCH_SIZE",1\n'
        '5,"fused_moe_kernel","FETCH_SIZE",1\n'
    )
    cs = load_counters([p])
    exact = "void at::native::vectorized_elementwise_kernel<4, Foo>(int)"
    hit = match_measurement(cs, exact)
    assert hit is not None and hit.kernel == exact
    # same short name: tie broken by dispatch count (the mangled one has 2)
    m = match_measurement(cs, "vectorized_elementwise_kernel")
    assert m is not None
    assert m.kernel.startswith("_ZN2at6native") and m.dispatches == 2
    cijk = match_measurement(cs, "Cijk_Ailk_Bljk_BBS_BH")
    assert cijk is not None and cijk.kernel.startswith("Cijk_")
    assert match_measurement(cs, "fused") is None  # prefix shorter than 6 characters
    assert match_measurement(cs, "") is None
    assert match_measurement(cs, "nothing_like_it") is None
