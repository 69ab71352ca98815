"""What the trace says about itself beside the Top-N: the notes on how each kernel's op was found,
the regime evidence the models need (serving steps, else the recorded shapes, else why not),
whether the trace trains rather than serves, and the distributed (rank, world size) block."""

from __future__ import annotations

import re
from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.names import short_name_of
from roofline_tui.core.textsafe import printable
from roofline_tui.importers import step_time
from roofline_tui.importers.common import ServingInfo
from roofline_tui.importers.torch.replay import ReplayJoin
from roofline_tui.importers.torch.collector import Collector
from roofline_tui.importers.torch.launches import KernelLaunches, Shaped
from roofline_tui.importers.torch.rows import is_every_row, positions_of
from roofline_tui.importers.torch.signatures import Sig, VALUE_OPS


def evidence_notes(col: Collector, rows: Sequence[int], shaped: Shaped, launches: KernelLaunches,
                    step_of: array[int], total_us: float) -> list[str]:
    """What the trace could not say, as profile notes: no cpu_op events at all; the GPU time
    whose kernels have no launching op; the GPU time outside every step."""
    out: list[str] = []
    if not col.cpu_ops:
        out.append("GPU-only trace: no cpu_op events at all, so no kernel has a launching op "
                   "or shapes (record with the CPU activity on: ProfilerActivity.CPU)")
    g_dur, sig, graph, l_tid = col.g_dur, shaped.sig, launches.graph, launches.tid
    no_op = replayed = unlaunched = outside = 0.0
    every = is_every_row(rows, len(g_dur))
    no_sig, no_step = positions_of(sig, -1), positions_of(step_of, -1)
    if no_sig is None or no_step is None:  # many: one pass for all
        durs: Iterable[float] = g_dur if every else (g_dur[i] for i in rows)
        for dur, s, replay, tid, k in zip(durs, sig, graph, l_tid, step_of):
            if s < 0:
                no_op += dur
                if replay:
                    replayed += dur
                if tid < 0:
                    unlaunched += dur
            if k < 0:
                outside += dur
    else:  # a few: those rows alone (in the same order)
        for p in no_sig:
            dur = g_dur[rows[p]]
            no_op += dur
            if graph[p]:
                replayed += dur
            if l_tid[p] < 0:
                unlaunched += dur
        for p in no_step:
            outside += g_dur[rows[p]]
    if col.cpu_ops and no_op > 0:
        parts = []
        if replayed:
            parts.append(f"{100 * replayed / total_us:.1f} % replayed from a graph")
        if unlaunched:
            parts.append(f"{100 * unlaunched / total_us:.1f} % with no launch call in the "
                         "trace (launched before the profiled window, or its runtime events "
                         "were dropped)")
        rest = no_op - replayed - unlaunched
        if rest > 0.0005 * total_us:
            parts.append(f"{100 * rest / total_us:.1f} % launched outside any op that "
                         "records shapes")
        out.append(f"{100 * no_op / total_us:.1f} % of the GPU time has no launching op with "
                   f"shapes ({'; '.join(parts)})")
    if (col.cpu_steps or col.steps) and outside < (sum(g_dur) if every
                                                   else sum(g_dur[i] for i in rows)):
        if outside > 0.0005 * total_us:
            out.append(f"{100 * outside / total_us:.1f} % of the GPU time belongs to no step "
                       "annotation (before or after the profiled steps); it is counted in the "
                       "Top-N but in no phase")
    return out


_EMBEDDING_OPS = ("aten::embedding", "aten::embedding_bag")
# kernels that only a training run launches: backward passes (MIOpen's igemm_bwd/igemm_wrw,
# cuDNN dgrad/wgrad, PyTorch's *_backward kernels) and optimizer steps
_TRAINING_KERNELS = lazy_compile(r"backward|(^|_)bwd_|(^|_)wrw_|dgrad|wgrad|Adam(W)?Functor|"
                                 r"fused_adam|multi_tensor_adam", re.IGNORECASE)
# convolutions: the aten ops, and the kernels MIOpen / cuDNN run them with (a 1-D causal conv,
# as Mamba layers serve it, is not one)
_CONV_OPS = lazy_compile(r"^aten::(_?convolution|conv[23]d|conv_transpose[23]d|cudnn_convolution|"
                         r"miopen_convolution|mkldnn_convolution)")
_CONV_KERNELS = lazy_compile(r"igemm_(fwd|bwd|wrw)_|implicit_convolve|fprop|winograd|naive_conv|"
                             r"conv2d|conv3d|convolution|MIOpenConv|scudnn", re.IGNORECASE)
# dense attention ops whose query has its own sequence axis: SDPA [B, H, S, d]; flash [B, S, H, d]
_SDPA_OPS = lazy_compile(r"scaled_dot_product")
_FLASH_BSHD_OPS = frozenset({"aten::_flash_attention_forward", "aten::_efficient_attention_forward",
                             "flash_attn::_flash_attn_forward", "FlashAttnFunc"})
# GEMM ops -> the position of their A operand: a linear's or matmul's [B, S, K] input keeps
# its S; a 2-D [M, K] one has batch and sequence folded into M
_GEMM_A = {"aten::linear": 0, "aten::matmul": 0, "aten::mm": 0, "aten::addmm": 1}
_NO_REGIME = ("the models read the recorded shapes, and each kernel's time is the mean over all "
              "its launches")


def regime_evidence(col: Collector, serving: ServingInfo | None,
                    kernels: Iterable[str] = ()) -> dict[str, Any]:
    """Which regime the trace's own evidence says, and whether that is an assumption.

    Step annotations decide when present. A trace that is not a serving run — it trains
    (backward ops or kernels, an optimizer step, autograd nodes) or it is a CNN (convolutions,
    no attention or embedding) — has no regime (``regime`` null, with why). Otherwise the
    token-embedding lookups decide: indices ``[B, S]`` with S > 1 are a forward over whole
    sequences (prefill), S = 1 one new token per sequence (decode); then the recorded shapes:
    a dense attention call's S_q against S_kv, a linear's ``[B, S, K]`` input. Nothing at all:
    decode, assumed (serving runs are decode-dominated). ``kernels``: the names of the chosen
    device's kernels, most GPU time first (the evidence names the first that says it)."""
    if serving is not None:
        d, p = serving.n_decode_steps, serving.n_prefill_steps
        return {"regime": "decode" if d >= p else "prefill", "assumed": False,
                "evidence": f"step annotations: {d} decode and {p} prefill step(s)"}
    not_serving = _not_serving(col, kernels)
    if not_serving is not None:
        return {"regime": None, "assumed": False,
                "evidence": f"no regime: not a serving run ({not_serving}); {_NO_REGIME}"}
    found = _embedding_regime(col)
    if found is None:
        found = _shape_regime(col)
    return found


def _not_serving(col: Collector, kernels: Iterable[str]) -> str | None:
    """Why the trace is not a serving run (training, or a CNN), or None."""
    if col.training is not None:
        return f"it trains: {col.training} recorded"
    names = list(kernels)
    trains = next((k for k in names if _TRAINING_KERNELS.search(k)), None)
    if trains is not None:
        return f"it trains: backward kernel {short_name_of(trains)}"
    seq_ops = any(sig.op in _EMBEDDING_OPS or (sig.op and VALUE_OPS.search(sig.op))
                  for sig in col.sigs)
    if seq_ops or any(VALUE_OPS.search(k) for k in names):
        return None  # attention or an embedding: a sequence model
    conv_op = next((sig.op for sig in col.sigs if sig.op and _CONV_OPS.match(sig.op)), None)
    if conv_op is not None:
        return f"a CNN: {conv_op} recorded, no attention or embedding"
    conv = next((k for k in names if _CONV_KERNELS.search(k)), None)
    if conv is not None:
        return (f"a CNN: convolution kernel {short_name_of(conv)}, no attention or "
                "embedding")
    return None


def _embedding_regime(col: Collector) -> dict[str, Any] | None:
    """The regime the token-embedding lookups say, or None when there are none."""
    seq: dict[int, int] = {}
    shown: dict[int, str] = {}
    for sig in col.sigs:
        if sig.op in _EMBEDDING_OPS and len(sig.dims) >= 2:
            idx = sig.dims[1]
            if isinstance(idx, tuple) and idx and all(isinstance(x, int) for x in idx):
                s_len = idx[-1] if len(idx) >= 2 else 1
                seq[s_len] = seq.get(s_len, 0) + 1
                shown.setdefault(s_len, f"{sig.op} indices {list(idx)}")
    return _by_count(seq, shown, "embedding lookups", "tokens per sequence")


def _by_count(seq: dict[int, int], shown: dict[int, str], what: str, unit: str
              ) -> dict[str, Any] | None:
    """The regime that sequence lengths ``seq`` (length -> calls) say: all one token decode,
    all longer prefill (stated); both, the most calls (assumed). None when ``seq`` is empty."""
    long_ = {s: n for s, n in seq.items() if s > 1}
    one = seq.get(1, 0)
    if long_ and not one:
        s_len = max(sorted(long_), key=lambda s: long_[s])
        return {"regime": "prefill", "assumed": False,
                "evidence": f"no step annotation; {shown[s_len]}: a forward over {s_len} "
                            f"{unit} (prefill)"}
    if one and not long_:
        return {"regime": "decode", "assumed": False,
                "evidence": f"no step annotation; {shown[1]}: one new token per sequence "
                            "(decode)"}
    if one and long_:
        n_long = sum(long_.values())
        regime = "decode" if one >= n_long else "prefill"
        return {"regime": regime, "assumed": True,
                "evidence": f"no step annotation; {one} one-token and {n_long} multi-token "
                            f"{what}: {regime} by count, per-phase time unknown"}
    return None


def _query_rows(sig: Sig) -> tuple[int, int] | None:
    """(S_q, S_kv) of a dense attention call whose query and key keep their sequence axis."""
    if sig.op is None or len(sig.dims) < 2:
        return None
    q, k = sig.dims[0], sig.dims[1]
    if not (isinstance(q, tuple) and isinstance(k, tuple) and len(q) == 4 == len(k)
            and all(isinstance(x, int) for x in q + k)):
        return None
    if _SDPA_OPS.search(sig.op):
        return q[2], k[2]
    if sig.op in _FLASH_BSHD_OPS:
        return q[1], k[1]
    return None


def _shape_regime(col: Collector) -> dict[str, Any]:
    """The regime the recorded shapes say (no steps, no embedding): a dense attention call's
    query rows (S_q = 1: decode; S_q > 1: a forward over whole sequences), else a linear's
    ``[B, S, K]`` input; else decode, assumed, with the GEMM rows seen."""
    seq: dict[int, int] = {}
    shown: dict[int, str] = {}
    for sig in col.sigs:
        rows = _query_rows(sig)
        if rows is not None:
            seq[rows[0]] = seq.get(rows[0], 0) + 1
            shown.setdefault(rows[0], f"{sig.op} query {list(sig.dims[0])} against "
                                      f"{rows[1]} keys")
    found = _by_count(seq, shown, "attention calls", "query tokens per sequence")
    if found is not None:
        return found
    m_rows: list[int] = []
    for sig in col.sigs:
        at = _GEMM_A.get(sig.op) if sig.op is not None else None
        a = sig.dims[at] if at is not None and at < len(sig.dims) else None
        if isinstance(a, tuple) and len(a) == 3 and sig.op in ("aten::linear", "aten::matmul"):
            seq[a[1]] = seq.get(a[1], 0) + 1
            shown.setdefault(a[1], f"{sig.op} input {list(a)} as [B, S, K]")
        elif isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], int):
            m_rows.append(a[0])
    found = _by_count(seq, shown, "linear calls", "tokens per sequence")
    if found is not None:
        return found
    seen = (f"; GEMM inputs are [M, K] with M up to {max(m_rows)}: batch and sequence folded "
            "into M, which does not say which") if m_rows else ""
    return {"regime": "decode", "assumed": True,
            "evidence": "no step annotation and no token-embedding or attention shapes"
                        f"{seen}: decode assumed (serving runs are decode-dominated)"}


def doc_extension(col: Collector, regime: dict[str, Any], join: ReplayJoin | None,
                   header: dict[str, Any] | None = None, file: str = "the trace",
                   steps: dict[str, Any] | None = None,
                   step_time: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"regime": regime}
    if steps is not None:
        out["steps"] = steps
    if step_time is not None:
        out["step_time"] = step_time
    if join is not None and join.used:
        out["captures"] = join.used
    dist = distributed_info(header or {}, file)
    if dist is not None:
        out["distributed"] = dist
    return out


WORLD_MAX = 4096  # core.topn_ext.MAX_RANKS: a larger world size is not read


def distributed_info(header: dict[str, Any], file: str) -> dict[str, Any] | None:
    """The trace's own ``distributedInfo`` as the extension's ``distributed`` block
    (``core.topn_ext.Distributed``), or None when its ``world_size`` is not a usable integer
    (1 to 4096). A rank outside the world and a backend that is not a short name are left
    out."""
    info = header.get("distributedInfo")
    if not isinstance(info, dict):
        return None
    world = info.get("world_size")
    if world.__class__ is not int or not 1 <= world <= WORLD_MAX:
        return None
    rank = info.get("rank")
    backend = info.get("backend")
    return {"world_size": world,
            "rank": rank if rank.__class__ is int and 0 <= rank < world else None,
            "backend": printable(backend, limit=40) if isinstance(backend, str) and backend
            else None,
            "source": f"{printable(file, limit=120)} distributedInfo"}
