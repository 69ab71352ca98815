"""Tensor parallelism of the profiled run: how many ranks share each layer's weights and heads.

The byte models divide the config's heads and expert widths by TP when they work from the
config. ``env_report.json`` (``workload.tp``) says it when the run recorded one; when it is
silent, the trace still carries evidence, read here in this order and stated as such:

1. **The recorded shard shapes against the config**: an attention op's query ``[T, H, d]``
   with ``d`` the config's head_dim and H heads where the config has ``num_attention_heads``
   is TP = heads / H (8 of 64 → TP 8; 64 of 64 → TP 1, whatever the world size).
2. **The trace's ``distributedInfo.world_size``** (the Top-N extension's ``distributed``): W
   ranks of a serving run, taken to shard every layer (tensor or expert parallel: either way
   each rank holds 1/W of the experts' weights); a data-parallel replica of the whole model
   would need ``workload.tp`` to say so. In a run the importer found not to be serving
   (training, a CNN), whose ranks replicate the model as often as they shard it, W > 1 says
   only that the model may be sharded, as in 3.
3. **Collective kernels in the Top-N** (NCCL/RCCL, all-reduce, all-gather...) with neither:
   the model is sharded (TP > 1) but by how much is unknown, so a per-rank figure taken from
   the config has no verdict (the model says what would settle it).

Nothing of these: TP 1, as before (a single-GPU trace has no collectives).
"""


from typing import NamedTuple

from roofline_tui.core.classify import classify
from roofline_tui.core.inputs import TopN, Workload
from roofline_tui.core.model_config import ModelShape

__all__ = ["TensorParallel", "resolve_tensor_parallel"]

# Top-N rows read for evidence (the biggest first: a Top-N is sorted by time).
_SCAN_ROWS = 256


class TensorParallel(NamedTuple):
    """What the run says about tensor parallelism: ``size`` (None: sharded, size unknown) and
    the evidence, in one line."""

    size: int | None
    evidence: str


def _collectives(topn: TopN) -> list[str]:
    """Short names of the Top-N's collective kernels (at most three), biggest first."""
    out: list[str] = []
    for e in topn.entries[:_SCAN_ROWS]:
        if classify(e.name, e.classification).op_class == "comm":
            out.append(e.short_name)
            if len(out) == 3:
                break
    return out


def _shard_heads(topn: TopN, model: ModelShape) -> tuple[int, str] | None:
    """TP from the attention instances' query heads against the config, when they agree."""
    seen: dict[int, str] = {}
    for e in topn.entries[:_SCAN_ROWS]:
        if e.ext is None or not e.ext.instances:
            continue
        if classify(e.name, e.classification).op_class != "attn":
            continue
        for inst in e.ext.instances:
            ins = inst.tensors("input")
            if not ins or len(ins[0][0]) != 3:
                continue
            _, h, d = ins[0][0]
            heads = model.num_attention_heads
            if d == model.head_dim and 0 < h <= heads and heads % h == 0:
                seen.setdefault(heads // h, f"{inst.op or e.short_name} query {ins[0][0]}")
    if len(seen) != 1:
        return None
    tp, where = next(iter(seen.items()))
    return tp, (f"{where} holds {model.num_attention_heads // tp} of the config's "
                f"{model.num_attention_heads} attention heads")


def resolve_tensor_parallel(workload: Workload, topn: TopN, model: ModelShape | None
                            ) -> TensorParallel | None:
    """The run's TP and its evidence (see the module doc); None when nothing says it."""
    if workload.tp is not None:
        return TensorParallel(workload.tp, f"env_report workload.tp {workload.tp}")
    dist = topn.ext.distributed if topn.ext is not None else None
    comm = _collectives(topn)
    also: list[str] = []
    if dist is not None:
        also.append(f"the trace's distributedInfo world_size {dist.world_size}"
                    + (f" ({dist.backend})" if dist.backend else ""))
    if comm:
        also.append(f"collective kernels in the Top-N ({', '.join(comm)})")
    shards = _shard_heads(topn, model) if model is not None else None
    if shards is not None:
        tp, why = shards
        return TensorParallel(tp, f"TP {tp} from the recorded shard shapes: {why}"
                              + (f"; {' and '.join(also)}" if also else ""))
    serving = topn.ext is None or topn.ext.regime is None or topn.ext.regime.regime is not None
    if dist is not None and dist.world_size >= 1 and (serving or dist.world_size == 1):
        w = dist.world_size
        if w == 1:
            return TensorParallel(1, "the trace's distributedInfo world_size 1: one rank")
        return TensorParallel(w, f"TP {w} from {' and '.join(also)}: every rank taken to hold "
                                 f"1/{w} of each layer's weights (tensor or expert parallel); "
                                 "env_report workload.tp would say otherwise for a "
                                 "data-parallel run")
    if dist is not None and dist.world_size > 1:
        # a training run's ranks replicate the model (data parallel) as often as they shard it
        return TensorParallel(None, f"{' and '.join(also)} in a run that is not serving: its "
                                    "ranks may shard the model or replicate it (data parallel)")
    if comm:
        return TensorParallel(None, f"{also[0]}: the model is sharded over ranks, but the trace "
                                    "records neither its world size nor shard shapes")
    return None
