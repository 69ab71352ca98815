"""Readable labels for shared library kernels (issue 22): what the recorded launches say tells
hipBLASLt GEMMs and elementwise kernels apart where their short names do not."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from roofline_tui.core import reading
from roofline_tui.core.analyze import rank_entries
from roofline_tui.core.artifact import Artifact, Entry
from roofline_tui.core.inputs import TopNEntry
from roofline_tui.core.labels import LABEL_MAX, fit_labels, label_of, row_labels
from roofline_tui.core.textsafe import md_cell
from roofline_tui.core.topn_ext import EntryExtension, Folded, Instance, Operand
from tests.paths import REAL_FORMATS, need

CIJK = "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT256x32x64_MI16x16x1_SN_LDSB1_AFC1"
BF16 = "c10::BFloat16"


def inst(op: str | None, *args: tuple[Any, str | None, str], us: float = 100.0,
         module: str | None = None, output: str | None = None) -> Instance:
    return Instance(op=op, args=[Operand(dims=d, type=t, role=r) for d, t, r in args],
                    module=module, output=output, calls=10, total_us=us)


def head(name: str, *instances: Instance, folded: int = 0, short: str | None = None
         ) -> TopNEntry:
    ext = EntryExtension(instances=list(instances),
                         folded=Folded(instances=folded, calls=1, total_us=1.0) if folded
                         else None)
    return TopNEntry(name=name, short_name=short or name[:60], pct_gpu_time=10.0,
                     ext=ext if instances or folded else None)


def mm(m: int, k: int, n: int, **kw: Any) -> Instance:
    return inst("aten::mm", ([m, k], BF16, "input"), ([k, n], BF16, "weight"), output="gemm",
                **kw)


# -- hand-built entries -----------------------------------------------------------------------

def test_a_gemm_reads_its_shape_and_module() -> None:
    linear = inst("aten::linear", ([8944, 1024], BF16, "input"), ([2816, 1024], BF16, "weight"),
                  (None, "", "other"), output="linear",
                  module="Qwen2DecoderLayer/Qwen2MLP/Linear")
    assert label_of(head(CIJK, linear), "gemm") == "GEMM 8944×1024→2816 (Qwen2MLP)"
    # no module recorded: the op says where it came from
    assert label_of(head(CIJK, mm(32, 4096, 24576)), "gemm") == "GEMM 32×4096→24576 (aten::mm)"
    # an out= argument gives N
    out = inst("aten::mm", ([32, 4096], BF16, "input"), ([4096, 512], BF16, "weight"),
               ([32, 512], BF16, "output"))
    assert label_of(head(CIJK, out), "gemm") == "GEMM 32×4096→512 (aten::mm)"


def test_several_shapes_name_the_dominant_one_and_count_the_rest() -> None:
    e = head(CIJK, mm(32, 4096, 6144, us=50.0, module="QKVParallelLinear"),
             mm(32, 4096, 24576, us=300.0, module="MergedColumnParallelLinear"),
             mm(32, 4096, 4096, us=40.0, module="RowParallelLinear"))
    assert label_of(e, "gemm") == "GEMM 32×4096→24576 (MergedColumnParallelLinear) +2 shapes"
    # the same shape twice is one shape; the importer's folded instances count too
    same = head(CIJK, mm(32, 4096, 4096, us=9.0), mm(32, 4096, 4096, us=5.0), folded=1)
    assert label_of(same, "gemm") == "GEMM 32×4096→4096 (aten::mm) +1 shape"


def test_elementwise_and_attention_read_their_op() -> None:
    copy = inst("aten::copy_", ([16, 16, 559, 64], BF16, "output"),
                ([16, 16, 559, 64], "float", "input"), ([], "Scalar", "scalar"))
    ew = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<…>>(int, …)"
    assert label_of(head(ew, copy, short="elementwise_kernel"), "elementwise") == \
        "aten::copy_ bf16 [16,16,559,64]"
    # no dims recorded: the op alone
    assert label_of(head(ew, inst("aten::mul"), short="elementwise_kernel"),
                    "elementwise") == "aten::mul"
    attn = inst("vllm::unified_attention_with_output", ([32, 32, 128], BF16, "input"))
    assert label_of(head("kernel_unified_attention_2d", attn), "attn") == \
        "vllm::unified_attention_with_output"
    # nothing recorded: the functor the name carries, else the short name
    named = ("void at::native::vectorized_elementwise_kernel<4, at::native::"
             "bfloat16tofloat32_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#1}>(int)")
    assert label_of(head(named, short="vectorized_elementwise_kernel"), "elementwise") == \
        "bfloat16tofloat32_copy_kernel_cuda"
    assert label_of(head(CIJK), "gemm") == CIJK[:60]
    # an instance without a launching op says nothing either
    assert label_of(head(CIJK, inst(None)), "gemm") == CIJK[:60]


def test_labels_are_bounded_and_printable() -> None:
    hostile = inst("evil::\x1b[2J" + "x" * 500, ([4, 8], BF16, "input"), ([8, 16], BF16, "weight"),
                   output="gemm", module="A/\u202eB" + "y" * 300)
    other = mm(1, 2, 3, us=1.0)
    label = label_of(head(CIJK, hostile, other), "gemm")
    assert len(label) <= LABEL_MAX and label.endswith(" +1 shape")
    assert "\x1b" not in label and "\u202e" not in label
    label = label_of(head(CIJK, hostile), "elementwise")
    assert len(label) <= LABEL_MAX and "\x1b" not in label


def _round(*entries: Entry) -> Artifact:
    by_pct, by_gain = rank_entries(list(entries))
    return Artifact(entries=list(entries), ranking_by_pct=by_pct,
                    ranking_by_expected_gain=by_gain, stage="B")


def _verdict(short: str, label: str, gain: float) -> Entry:
    return Entry(name=short, short_name=short, label=label, modeled=True,
                 headroom_class="underperforming", bound_type="memory", roofline_pct=0.3,
                 target_eff=0.9, attainable_speedup=1.5, expected_e2e_gain_pct=gain,
                 pct_gpu_time=10.0, confidence="medium", route="kernel_tuning")


def test_the_next_line_leads_with_the_label_and_keeps_the_short_name() -> None:
    nt = reading.next_target(_round(_verdict("Cijk_MT64", "GEMM 32×4096→6144 (qkv)", 3.0),
                                    _verdict("Cijk_MT32", "GEMM 32×4096→4096 (o_proj)", 1.0)))
    assert nt.line.startswith("Next: GEMM 32×4096→6144 (qkv) [Cijk_MT64] — ")
    # a label that says nothing more than the short name is not repeated
    nt = reading.next_target(_round(_verdict("act_and_mul", "act_and_mul", 2.0)))
    assert nt.line.startswith("Next: act_and_mul — ")
    # an artifact written before labels existed reads as before
    assert reading.label_of(Entry(name="k", short_name="k")) == "k"


# -- one row label per table row (issue 34.3) -------------------------------------------------

MOE = "_matmul_ogs_NNT_bf16xbf16xmxfp4_16x128x256x1"
PAR = ("void clover::par_ranged2d_kernel<{k}(bool, int, clover::Buffer2D<double> &)::"
       "[lambda(int, int) (instance {n})]>(clover::Range2d, T1)")


def test_a_row_reads_its_recorded_label_else_its_demangled_name() -> None:
    rows = [Entry(name=CIJK, short_name=CIJK[:60], label="GEMM 32×4096→6144 (qkv)"),
            Entry(name="void at::native::elementwise_kernel<128, 4>(int)",
                  short_name="elementwise_kernel", label="elementwise_kernel"),
            Entry(name="k", short_name="k")]  # an artifact written before labels
    assert row_labels(rows) == ["GEMM 32×4096→6144 (qkv)", "elementwise_kernel<…>", "k"]


def test_rows_with_one_label_read_apart_by_what_their_names_differ_in() -> None:
    # the two vLLM MoE stages: one recorded op, the names part at "_swiglu"
    rows = [Entry(name=MOE, short_name=MOE, label="vllm::moe_forward bf16 [32,3072]"),
            Entry(name=MOE + "_swiglu", short_name=MOE + "_swiglu",
                  label="vllm::moe_forward bf16 [32,3072]")]
    assert row_labels(rows) == ["vllm::moe_forward bf16 [32,3072]",
                                "vllm::moe_forward bf16 [32,3072] · swiglu"]
    # hipBLASLt solutions: the tile that differs, not the whole 300-character name
    a, b = CIJK, CIJK.replace("MT256x32x64", "MT64x32x256")
    assert row_labels([Entry(name=a, short_name="c", label="GEMM 32×4096→6144 (qkv)"),
                       Entry(name=b, short_name="c#2", label="GEMM 32×4096→6144 (qkv)")]) == [
        "GEMM 32×4096→6144 (qkv) · MT256x32x64", "GEMM 32×4096→6144 (qkv) · MT64x32x256"]


def test_templated_names_that_fold_alike_read_their_template_arguments() -> None:
    # the nsys CloverLeaf heads: par_ranged2d_kernel#2/#3 before
    rows = [Entry(name=PAR.format(k="PdV_kernel", n=2), short_name="par_ranged2d_kernel"),
            Entry(name=PAR.format(k="PdV_kernel", n=1), short_name="par_ranged2d_kernel#2"),
            Entry(name=PAR.format(k="accelerate_kernel", n=1),
                  short_name="par_ranged2d_kernel#3")]
    assert row_labels(rows) == ["par_ranged2d_kernel<…> · PdV_kernel … instance 2",
                                "par_ranged2d_kernel<…> · PdV_kernel … instance 1",
                                "par_ranged2d_kernel<…> · accelerate_kernel"]
    # a cast template argument keeps its type
    gemv = "void internal::gemvx::kernel<int, (int){}, float>(T13)"
    assert row_labels([Entry(name=gemv.format(7), short_name="kernel"),
                       Entry(name=gemv.format(6), short_name="kernel#2")]) == [
        "kernel<…> · (int)7", "kernel<…> · (int)6"]


def test_hash_n_only_when_nothing_recorded_differs() -> None:
    same = [Entry(name="k<1>", short_name="k", regime="decode"),
            Entry(name="k<1>", short_name="k#2", regime="prefill")]
    assert row_labels(same) == ["k<1> · decode", "k<1> · prefill"]
    twins = [Entry(name="k", short_name="k"), Entry(name="k", short_name="k#2"),
             Entry(name="k", short_name="k#3")]
    assert row_labels(twins) == ["k", "k#2", "k#3"]
    # a #N never repeats a text another row reads
    assert row_labels(twins + [Entry(name="k#2", short_name="x")]) == ["k", "k#3", "k#4", "k#2"]


def test_a_cut_keeps_what_tells_rows_apart() -> None:
    rows = [Entry(name=MOE, short_name=MOE, label="vllm::moe_forward bf16 [32,3072]"),
            Entry(name=MOE + "_swiglu", short_name="s", label="vllm::moe_forward bf16 [32,3072]"),
            Entry(name=CIJK, short_name="a", label="GEMM 32×4096→24576 (MergedColumnParallelLinear)"),
            Entry(name=CIJK + "x", short_name="b", label="GEMM 32×4096→24576 (MergedColumnLinear)")]
    for width in (12, 18, 24, 30, 40, 48, 64):
        cut = row_labels(rows, width)
        assert len(set(cut)) == len(cut) and all(len(t) <= width for t in cut), (width, cut)
    assert row_labels(rows, 24)[1].endswith(" · swiglu")  # the parting word is kept whole
    # fit_labels on texts alone: the same guarantee
    texts = ["a" * 30 + "x", "a" * 30 + "y", "a" * 31]
    assert len(set(fit_labels(texts, 10))) == 3


def test_rows_differ_as_the_renderer_writes_them() -> None:
    # a Markdown cell writes ` as ': two labels that differ only there would read the same
    rows = [Entry(name="a`b", short_name="x"), Entry(name="a'b", short_name="y")]
    shown = [md_cell(t) for t in row_labels(rows, None, md_cell)]
    assert len(set(shown)) == 2


def test_hostile_names_are_printable_and_bounded() -> None:
    evil = "\x1b[2Jk\u202e" + "x" * 100_000
    rows = [Entry(name=evil, short_name="a"), Entry(name=evil + "y", short_name="b")]
    for t in row_labels(rows) + row_labels(rows, 40):
        assert "\x1b" not in t and "\u202e" not in t
    assert all(len(t) <= 40 for t in row_labels(rows, 40))
    assert all(len(t) <= 200 for t in row_labels(rows))  # uncut is bounded too
    assert len(set(row_labels(rows))) == 2


def test_many_look_alike_rows_cost_little() -> None:
    args = [f"T{i}" for i in range(300)]
    rows = []
    for i in range(400):
        a = list(args)
        a[i % 300] = f"U{i}"
        rows.append(Entry(name="void at::native::f<" + ", ".join(a) + ">(int)",
                          short_name=f"f#{i}"))
    start = time.perf_counter()
    cut = row_labels(rows, 30)
    assert time.perf_counter() - start < 2.0
    assert len(set(cut)) == len(cut)


# -- end to end on a real profile -------------------------------------------------------------

WILD = REAL_FORMATS / "wild"
CONFIG = REAL_FORMATS / "configs" / "Qwen3-8B" / "config.json"


def test_the_four_hipblaslt_heads_of_a_real_decode_profile_read_apart(tmp_path: Path) -> None:
    from roofline_tui.importers.torch import TorchOptions, import_torch

    trace = need(WILD / "tracelens_sglang_qwen3-8b_decode.json.gz")
    capture = need(WILD / "tracelens_sglang_MI300X_decode_graph_capture_bs32_rank0.json.gz")
    need(CONFIG)
    doc = import_torch(trace, TorchOptions(captures=[capture]), progress=False).doc
    rd = tmp_path / "r0"
    rd.mkdir()
    (rd / "profile_topN.json").write_text(json.dumps(doc))
    run = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(rd),
                          "--model-config", str(CONFIG), "--device", "MI300X"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    entries = json.loads((rd / "profile_roofline.json").read_text())["entries"]
    gemms = [e for e in entries if e["short_name"].startswith("Cijk_")]
    assert len(gemms) == 4 and len({e["short_name"][:40] for e in gemms}) == 1
    labels = [e["label"] for e in gemms]
    assert len(set(labels)) == 4, labels
    assert labels[0] == "GEMM 32×4096→24576 (MergedColumnParallelLinear)"
    assert all(label.startswith("GEMM 32×") and "→" in label for label in labels)
    assert any("(QKVParallelLinear)" in label for label in labels)
    # the Next line names the pick's shape and keeps its short name
    nxt = next(line for line in run.stdout.splitlines() if line.startswith("Next"))
    assert "GEMM 32×" in nxt and "[Cijk_Alik_Bljk_" in nxt
