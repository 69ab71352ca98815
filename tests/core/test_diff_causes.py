"""Issue 33: each cause of ``roofline diff`` on a hand-built pair — one logical op (the same op
key on both sides: ``aten::mm`` of a 4096×4096 bf16 weight in ``LlamaMLP/Linear``) under
different kernel names and times, with each side's verdict written out, so the arithmetic of
every cause is in its docstring."""

from __future__ import annotations

import pytest

from roofline_tui.core.analyze import rank_entries
from roofline_tui.core.artifact import Artifact, Entry, PeaksInfo
from roofline_tui.core.diff import Diff, diff, entry_row, rows_by_key
from roofline_tui.core.inputs import TopN, TopNEntry
from roofline_tui.core.op_keys import op_shares
from roofline_tui.core.topn_ext import EntryExtension, Instance, Operand

KEY = "linear|LlamaMLP/Linear|4096x4096|bf16"
MI300X_BW, H100_BW = 5.3e12, 3.35e12


def _mm(us: float, *, tokens: int = 32, dtype: str = "c10::BFloat16",
        op: str = "aten::mm") -> Instance:
    return Instance(op=op, module="LlamaDecoderLayer/LlamaMLP/Linear", calls=10, total_us=us,
                    args=[Operand(dims=[tokens, 4096], type=dtype, role="input"),
                          Operand(dims=[4096, 4096], type=dtype, role="weight")])


def _side(kernels: list[tuple[str, list[Instance]]], *, roofline: float | None, bw: float,
          bytes_per_launch: float = 33.8e6) -> tuple[TopN, Artifact]:
    """A round of ``kernels`` (name, its recorded instances); the first is the op's main
    kernel, with a memory-bound verdict at ``roofline`` of a ``bw`` bytes/s roof."""
    rows, entries = [], []
    total = sum(i.total_us for _, insts in kernels for i in insts)
    for i, (name, insts) in enumerate(kernels):
        us = sum(x.total_us for x in insts)
        row = TopNEntry(name=name, short_name=name, pct_gpu_time=100.0 * us / total,
                        total_ms=us / 1000.0, calls=10, ext=EntryExtension(instances=insts))
        rows.append(row)
        judged = i == 0 and roofline is not None
        entries.append(Entry(
            name=name, short_name=name, pct_gpu_time=row.pct_gpu_time, op_class="gemm",
            t_ms=us / 10 / 1000.0, bytes_est=bytes_per_launch, flops_est=2 * 32 * 4096 * 4096,
            roofline_pct=roofline if judged else None, hbm_util=roofline if judged else None,
            headroom_class="underperforming" if judged else "unknown",
            bound_type="memory" if judged else "unknown",
            op_keys=[{"key": k, "share": v} for k, v in op_shares(row)]))
    by_pct, by_gain = rank_entries(entries)
    art = Artifact(entries=entries, ranking_by_pct=by_pct, ranking_by_expected_gain=by_gain,
                   stage="B", peaks=PeaksInfo(hbm_bw_bytes_s=bw))
    return TopN(entries=rows), art


def _one(a: tuple[TopN, Artifact], b: tuple[TopN, Artifact]) -> Diff:
    return diff("A", a[0], a[1], "B", b[0], b[1])


def test_the_op_key_is_the_call_not_the_kernel_or_the_token_count() -> None:
    """``aten::addmm`` and ``aten::mm`` of one projection, 32 or 8,944 tokens, ``bf16`` or
    ``c10::BFloat16``: one key."""
    shares = op_shares(TopNEntry(name="k", short_name="k", pct_gpu_time=1.0, ext=EntryExtension(
        instances=[_mm(30.0), _mm(10.0, tokens=8944, dtype="bf16", op="aten::addmm")])))
    assert shares == [(KEY, 1.0)]


def test_the_same_kernel_library_on_a_faster_roof_is_the_hardware() -> None:
    """A: MI300X (5.3 TB/s), 100 µs at 64 % of its roof. B: H100 (3.35 TB/s), the same 64 %:
    100 × 5.3 / 3.35 = 158.2 µs. Same fraction, roofs 0.63× apart: *hardware*, B/A 1.58."""
    a = _side([("Cijk_Alik_Bljk_MT128x128", [_mm(100.0)])], roofline=0.64, bw=MI300X_BW)
    b = _side([("sm90_xmma_gemm_bf16", [_mm(100.0 * MI300X_BW / H100_BW)])], roofline=0.64,
              bw=H100_BW)
    (row,) = _one(a, b).rows
    assert row.key == KEY and row.cause == "hardware"
    assert row.ratio == pytest.approx(1.582, abs=1e-3)
    assert "0.63× A's" in row.why


def test_a_kernel_far_from_the_roof_on_the_same_device_is_the_kernel() -> None:
    """One device (5.3 TB/s). A: 100 µs at 64 %. B, another build: 160 µs, so 64 × 100/160 =
    40 % of the same roof. The roof is one, so the whole 1.6× is B's kernel: *kernel*, named."""
    a = _side([("Cijk_old", [_mm(100.0)])], roofline=0.64, bw=MI300X_BW)
    b = _side([("Cijk_new", [_mm(160.0)])], roofline=0.40, bw=MI300X_BW)
    (row,) = _one(a, b).rows
    assert row.cause == "kernel" and row.ratio == pytest.approx(1.6)
    assert row.why.startswith("B's kernel Cijk_new is further from its roof (40% vs 64% of one")


def test_the_same_fraction_of_one_roof_in_another_time_is_still_the_kernel() -> None:
    """One roof, 64 % and 58 % (within the 25 % band of each other), 100 vs 110 µs: with the
    roofs equal the band cannot make it the hardware: *kernel*."""
    a = _side([("k_a", [_mm(100.0)])], roofline=0.64, bw=MI300X_BW)
    b = _side([("k_b", [_mm(110.0)])], roofline=0.58, bw=MI300X_BW)
    (row,) = _one(a, b).rows
    assert row.cause == "kernel"


def test_different_bytes_per_launch_is_the_work() -> None:
    """B moves 2.2× the bytes per launch (33.8 MB vs 74.4 MB: fp32 weights where A has bf16,
    or more tokens): 1 - 33.8/74.4 = 0.55 apart, past the 25 % band: *work*, whatever the
    times and roofs."""
    a = _side([("k_a", [_mm(100.0)])], roofline=0.64, bw=MI300X_BW)
    b = _side([("k_b", [_mm(220.0)])], roofline=0.64, bw=MI300X_BW, bytes_per_launch=74.4e6)
    (row,) = _one(a, b).rows
    assert row.cause == "work" and row.ratio == pytest.approx(2.2)


def test_a_side_without_a_verdict_is_unknown_and_one_within_two_percent_unchanged() -> None:
    """B has no verdict: *unknown* (its roofline % is not known, so no cause is told). 100 vs
    101.5 µs, the same work: |1 - 100/101.5| = 1.5 % < 2 %: *unchanged*."""
    a = _side([("k_a", [_mm(100.0)])], roofline=0.64, bw=MI300X_BW)
    unjudged = _side([("k_b", [_mm(150.0)])], roofline=None, bw=MI300X_BW)
    assert _one(a, unjudged).rows[0].cause == "unknown"
    same = _side([("k_b", [_mm(101.5)])], roofline=0.63, bw=MI300X_BW)
    assert _one(a, same).rows[0].cause == "unchanged"


def test_a_split_k_reduce_is_folded_into_its_op() -> None:
    """A runs the projection as a split-K GEMM (80 µs) and its reduce kernel (20 µs), both
    launched by the same ``aten::mm`` call, so both carry its key; B runs one kernel of
    100 µs. One op on each side, 100 µs each: *unchanged*, and nothing is only in A; the
    verdict is the main kernel's (its entry comes first, the most time)."""
    a = _side([("gemm_splitK_main", [_mm(80.0)]), ("splitK_reduce", [_mm(20.0)])],
              roofline=0.64, bw=MI300X_BW)
    b = _side([("gemm_one_pass", [_mm(100.0)])], roofline=0.64, bw=MI300X_BW)
    d = _one(a, b)
    (row,) = d.rows
    assert row.a is not None and row.a.kernels == ["gemm_splitK_main", "splitK_reduce"]
    assert row.a.time_us == pytest.approx(100.0) and row.cause == "unchanged"
    assert not d.unmatched_a and d.totals.a_matched_share == pytest.approx(1.0)


def test_ops_only_on_one_side_and_the_entry_lookup_of_the_compare_view() -> None:
    """A has the MLP projection and an RMSNorm; B fused the norm away: the norm is *only in
    A*, the projection matched. Each A entry finds its row by its largest op key."""
    norm = Instance(op="aten::mul", module="LlamaDecoderLayer/LlamaRMSNorm", calls=10,
                    total_us=40.0, args=[Operand(dims=[32, 4096], type="float", role="input")])
    a = _side([("Cijk_mm", [_mm(100.0)]), ("elementwise_kernel", [norm])], roofline=0.64,
              bw=MI300X_BW)
    b = _side([("nvjet_mm", [_mm(100.0)])], roofline=0.64, bw=MI300X_BW)
    d = _one(a, b)
    assert [r.cause for r in d.unmatched_a] == ["only in A"]
    assert d.totals.a_matched_share == pytest.approx(100 / 140)
    index = rows_by_key(d)
    mm_entry, norm_entry = a[1].entries
    mm_row, norm_row = entry_row(mm_entry, index), entry_row(norm_entry, index)
    assert mm_row is not None and mm_row.key == KEY and mm_row.cause == "unchanged"
    assert norm_row is not None and norm_row.cause == "only in A"
