"""Result models of the stage-B (captured shapes) and stage-C (measured counters) loaders.

Units used everywhere in this package: bytes, FLOPs and seconds, per dispatch (one kernel
launch). Nothing here is scaled to a logical op: a fused MoE layer made of two launches shows
up as one kernel with ``dispatches=2`` and per-dispatch means; summing launches into a logical
unit is the engine's job.
"""


from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from roofline_tui.core.empty import empty_dict, empty_list

CounterSource = Literal[
    "rocprofv3-csv", "rocpd", "rocprof-compute-pmc", "ncu-csv", "ncu-rep", "roofline-v1",
    "proton",
]


class KernelMeasurement(BaseModel):
    """What hardware counters say about one kernel, averaged over its dispatches."""

    kernel: str  # kernel name as written in the counter file
    dispatches: int  # dispatches aggregated into the means below
    bytes_per_dispatch: float | None  # below-L2 (AMD) / DRAM (NVIDIA) bytes, mean per dispatch
    flops_per_dispatch: float | None
    flops_dtype: str | None  # canonical dtype of the dominant FLOP contribution
    duration_s: float | None  # mean duration under the counter run: informational only
    corroboration: dict[str, float] = Field(default_factory=empty_dict)
    missing: list[str] = Field(default_factory=empty_list)  # counters needed but absent (L4)
    source: CounterSource
    path: str
    notes: list[str] = Field(default_factory=empty_list)
    # split of bytes_per_dispatch, when the file gives it
    read_bytes_per_dispatch: float | None = None
    write_bytes_per_dispatch: float | None = None
    # FLOPs per canonical dtype (mean per dispatch); flops_per_dispatch is their sum
    flops_by_dtype: dict[str, float] = Field(default_factory=empty_dict)
    # other names the same kernel goes by (e.g. roofline-v1 matched_kernel_name)
    aliases: list[str] = Field(default_factory=empty_list)
    # the architecture the counters were collected on (ncu's CC column, rocprof-compute's
    # sysinfo gpu_arch, rocprofv3's agent_info, Proton's device arch), normalised; None: unsaid
    arch: str | None = None
    # the launch geometry the profiler recorded (ncu: Grid Size and Block Size, in blocks and
    # threads) when every profiled launch had the same one; used to tell apart entries that
    # share a short name
    grid: list[int] | None = None
    block: list[int] | None = None
    # roofline-v1 only
    roofline_pct: float | None = None
    attainable_speedup: float | None = None
    bound_type: str | None = None


class CounterSet(BaseModel):
    measurements: dict[str, KernelMeasurement] = Field(default_factory=empty_dict)
    problems: list[str] = Field(default_factory=empty_list)
    _index: Any = PrivateAttr(default=None)
    _index_size: int = PrivateAttr(default=-1)

    def name_index(self) -> Any:
        """The matching index over the measurements (built once, rebuilt when they change)."""
        from .names import NameIndex

        if self._index is None or self._index_size != len(self.measurements):
            self._index = NameIndex(self.measurements.values(),
                                    names_of=lambda m: [m.kernel, *m.aliases],
                                    size_of=lambda m: float(m.dispatches))
            self._index_size = len(self.measurements)
        return self._index


class ShapeCase(BaseModel):
    """One captured shape of a kernel with its workload weight."""

    regime: str | None = None
    input_shapes: list[list[int]] = Field(default_factory=empty_list)
    dtypes: list[str] = Field(default_factory=empty_list)  # canonical where recognised, else as given
    # calls of this shape; when the files give no call count this holds the relative weight
    # (``weight_norm``) instead and ``params["count_basis"]`` says so
    count: float = 0.0
    latency_ms: float | None = None  # per-call baseline latency when the files give one
    m: int | None = None
    name: str | None = None
    params: dict[str, Any] = Field(default_factory=empty_dict)  # op geometry (batch, ctx, heads, ...)
    weight: float | None = None  # workload-v1 ``weight`` as written (unit not normalised)
    weight_source: str | None = None


class MoEParams(BaseModel):
    num_experts: int | None = None
    top_k: int | None = None
    hidden_size: int | None = None
    intermediate_size_per_tp: int | None = None
    weight_dtype: str | None = None  # canonical
    compute_dtype: str | None = None  # canonical
    block_quant_shape: list[int] | None = None
    m_buckets: list[int] = Field(default_factory=empty_list)
    decode_m_buckets: list[int] = Field(default_factory=empty_list)
    prefill_m_buckets: list[int] = Field(default_factory=empty_list)


class CapturedShapes(BaseModel):
    kernel: str
    task_dir: str
    layout: Literal["raw-capture", "geak-op-task-v1", "moe-op-meta", "workload-only"]
    op_kind: str | None = None
    cases: list[ShapeCase] = Field(default_factory=empty_list)
    moe: MoEParams | None = None
    weight_dtype: str | None = None
    activation_dtype: str | None = None
    kv_dtype: str | None = None
    served_regimes: list[str] = Field(default_factory=empty_list)
    aliases: list[str] = Field(default_factory=empty_list)  # other names for matching
    notes: list[str] = Field(default_factory=empty_list)
    problems: list[str] = Field(default_factory=empty_list)
