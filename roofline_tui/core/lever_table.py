"""The lever table: what to *do* about a head, keyed by op class, backend and bound, each row
with the document it rests on.

Data only, like :mod:`roofline_tui.core.operand_table`. :mod:`roofline_tui.core.levers` reads
it: a row applies to a head when its keys match and every ``{fact}`` its three texts name was
read from the head's entry (the kernel name, the recorded launch, the verdict, its siblings);
a row whose facts are missing is not shown. Rows are in rank order: within the rows that
apply, the first is the first lever the head lists.

Facts a text may name (set by :mod:`roofline_tui.core.levers` only when read, never guessed):

=================  ==========================================================================
``up_to``          "bounded by the roof: up to S× on this kernel (G% end to end)" (a verdict
                   with headroom)
``at_pct``         the roofline % and the target it is judged against
``gain_unknown``   why the gain is not knowable (no verdict), and what would settle it
``saturated``      the saturated head's roofline % against its target
``tile``           hipBLASLt/Tensile macro tile ``MT<M>x<N>x<DepthU>`` and MFMA instruction
``gsu``            the Tensile GlobalSplitU tag in the name
``cublas_tile``    cuBLAS tile and its split-K ("segment_k") tag from the name
``blocks``         Triton BLOCK_M/N/K and SPLIT_K read from a ``matmul_ogs`` kernel name
``launch``         the recorded launch grid and block, and the warps per program it implies
                   (``grid``: the same, for a text that needs it)
``shape``          the GEMM's M×K→N (from the label or the recorded dims); ``for_shape``:
                   " for GEMM <shape>" when it is known, else nothing
``left``           what tuning leaves a saturated head: its attainable speedup
``small_m``        M ≤ :data:`SMALL_M` tokens with K ≥ N: few output tiles, a long K loop
``fuse_with``      the elementwise heads that share this head's recorded shape, with shares
``fuse_pct``       their GPU time together (what fusing them away removes at most)
``fuse_bytes``     bytes of one intermediate of that shape and dtype (written, then read back)
``sibling``        the MoE stage that runs beside this one, and its roofline %
``lag``            the speedup this stage gets by reaching its sibling's roofline %
``t_us``           the per-launch time, against the launch-overhead scale
``alt_backends``   the attention backends this backend can be swapped for (from
                   :data:`ATTENTION_ALTERNATIVES`)
=================  ==========================================================================
"""

from typing import NamedTuple


class LeverRow(NamedTuple):
    key: str
    name: str
    family: str                   # tuning | backend | fusion | moe | launch | byte_reduction
    op_classes: tuple[str, ...]   # () = every class
    backends: tuple[str, ...]     # () = every backend
    bounds: tuple[str, ...]       # () = every bound type
    headroom: tuple[str, ...]     # () = every headroom class (unknown included)
    action: str
    evidence: str
    effect: str
    source: str
    editable: bool | None = None  # True: only an editable call site; False: only a library
    unless: tuple[str, ...] = ()  # facts whose presence leaves the row out (a better row said it)


# Backends, told apart by the kernel name (first match wins; searched in the short name, then
# the full name). Each with the naming convention it rests on.
BACKENDS: tuple[tuple[str, str, str], ...] = (
    ("hipblaslt", r"^Cijk_",
     "Tensile/hipBLASLt kernel names start Cijk_ (the C[ijk] index assignment); "
     "ROCm/hipBLASLt, tensilelite"),
    ("ck", r"ck_tile::|\bck::|_ZN2ck|device_gemm_xdl|kernel_gemm_xdl|fmha_fwd|fmha_bwd",
     "Composable Kernel (CK / ck_tile) template names; ROCm/composable_kernel"),
    ("aiter", r"aiter|_ZN5aiter|^fmoe_|^asm_|^paged_attention_asm",
     "AITER kernel and module names; ROCm/aiter"),
    ("rocm_paged", r"paged_attention_ll4mi|paged_attention_ll4mi_reduce",
     "vLLM/SGLang ROCm custom paged attention (csrc/rocm/attention.cu)"),
    ("flashinfer", r"flashinfer|BatchDecodeWithPagedKVCache|BatchPrefillWithPagedKVCache",
     "FlashInfer kernel names; flashinfer-ai/flashinfer"),
    ("flash", r"flash_fwd|flash_bwd|pytorch_flash::|flash::|FlashAttn",
     "FlashAttention kernel names (Dao-AILab/flash-attention; PyTorch's copy: pytorch_flash)"),
    ("triton", r"^triton_|^_matmul_ogs_|^fused_moe_kernel|^_fwd_kernel|^_attn_fwd|"
                r"^kernel_unified_attention|^kernel_paged_attention_[23]d",
     "Triton kernels: Inductor names triton_<kind>_fused_*; triton_kernels names matmul_ogs "
     "kernels _matmul_ogs_<layouts>_<dtypes>_<BLOCK_M>x<BLOCK_N>x<BLOCK_K>x<SPLIT_K> "
     "(triton-lang/triton python/triton_kernels, make_matmul_repr)"),
    ("cublas", r"^sm\d+_xmma_|^nvjet|gemvx|gemv2|_cublas|cublasLt|^ampere_|^volta_|^turing_",
     "cuBLAS/cuBLASLt kernel names (sm90_xmma_*, nvjet_*, gemvx, *_cublas)"),
    ("cutlass", r"cutlass",
     "CUTLASS kernel names (NVIDIA/cutlass)"),
    ("torch_native", r"at::native::|^elementwise_kernel|^vectorized_elementwise_kernel|"
                     r"^CatArrayBatchedCopy|^reduce_kernel|^unrolled_elementwise_kernel",
     "PyTorch ATen native CUDA/HIP kernels (aten/src/ATen/native/cuda)"),
)

# What an attention backend can be swapped for, by backend (and the vendor of the device).
ATTENTION_ALTERNATIVES: dict[str, str] = {
    "rocm_paged": "AITER attention (SGLang --attention-backend aiter; vLLM "
                  "VLLM_ROCM_USE_AITER=1) or a CK FMHA paged kernel",
    "flash": "FlashAttention-3 on Hopper (flash-attn hopper/), FlashInfer, or cuDNN SDPA "
             "(torch.nn.attention.sdpa_kernel(SDPBackend.CUDNN_ATTENTION))",
    "flashinfer": "FlashAttention-3 on Hopper, or the engine's FlashAttention backend",
    "triton": "the engine's FlashAttention / FlashInfer backend (NVIDIA) or AITER / CK FMHA "
              "(AMD)",
    "ck": "AITER assembly attention (ROCm/aiter) or the Triton backend",
    "aiter": "CK FMHA or the Triton backend",
    "": "another attention backend of the serving engine (FlashAttention, FlashInfer, AITER, "
        "CK FMHA, Triton)",
}

# Threads per wave by device family (the launch block / this = warps of a Triton program).
WAVE_SIZE: tuple[tuple[str, int, str], ...] = (
    ("gfx9", 64, "CDNA (gfx9xx) runs wave64: AMD Instinct ISA guides"),
    ("gfx1", 32, "RDNA (gfx10+) runs wave32 by default: AMD RDNA ISA guides"),
    ("sm_", 32, "NVIDIA warps are 32 threads: CUDA C++ Programming Guide"),
)

SMALL_M = 64  # tokens: at or under this a decode GEMM has few output tiles along M

_HIPBLASLT_TUNING = ("hipBLASLt docs, 'Using hipBLASLt offline tuning' (hipblaslt-bench "
                     "--algo_method all, HIPBLASLT_TUNING_FILE / HIPBLASLT_TUNING_OVERRIDE_FILE)")
_TUNABLEOP = ("PyTorch docs, torch.cuda.tunable (TunableOp): PYTORCH_TUNABLEOP_ENABLED=1, "
              "PYTORCH_TUNABLEOP_TUNING=1, PYTORCH_TUNABLEOP_FILENAME")
_TRITON_AUTOTUNE = ("Triton docs, triton.autotune / triton.Config (BLOCK_* meta-parameters, "
                    "num_warps, num_stages)")
_GRAPHS = ("CUDA C++ Programming Guide, 'CUDA Graphs'; HIP docs, 'HIP graphs'; "
           "torch.cuda.graphs (CUDAGraph)")
_INDUCTOR = "PyTorch docs, torch.compile (TorchInductor fuses pointwise chains into one kernel)"

TABLE: tuple[LeverRow, ...] = (
    # ---- saturated: the byte-reduction track (spec §7.1), rendered from the op model's levers
    LeverRow("byte_reduction", "move fewer bytes", "byte_reduction", (), (), (), ("saturated",),
             "{byte_lever}",
             "{saturated}",
             "at its roof, time falls in proportion to the bytes (or FLOPs) it removes for "
             "the same work; tuning leaves up to {left}",
             "spec §7.1 (saturated + high pct_gpu_time → byte-reduction levers)"),
    # ---- the GEMM libraries: offline tuning of the recorded shape
    LeverRow("hipblaslt_offline_tuning", "hipBLASLt offline tuning", "tuning", ("gemm",),
             ("hipblaslt",), (), ("underperforming", "moderate", "unknown"),
             "log the call (HIPBLASLT_LOG_MASK=32), sweep every solution{for_shape} with "
             "hipblaslt-bench --algo_method all, and pin the winner's solution index "
             "(HIPBLASLT_TUNING_OVERRIDE_FILE)",
             "the run used {tile}{gsu}; {at_pct}",
             "{up_to}", _HIPBLASLT_TUNING),
    LeverRow("tunableop", "PyTorch TunableOp", "tuning", ("gemm",), ("hipblaslt", "cublas"),
             (), ("underperforming", "moderate", "unknown"),
             "run once with PYTORCH_TUNABLEOP_ENABLED=1 PYTORCH_TUNABLEOP_TUNING=1 to time every "
             "hipBLASLt/cuBLASLt solution{for_shape}, then serve with the written "
             "PYTORCH_TUNABLEOP_FILENAME",
             "{at_pct}; TunableOp times every candidate solution on this exact shape",
             "{up_to}", _TUNABLEOP),
    LeverRow("hipblaslt_split_k", "split-K for small M", "tuning", ("gemm",), ("hipblaslt",),
             (), ("underperforming", "moderate", "unknown"),
             "include GlobalSplitU (split-K) solutions in the sweep (tuning utility SplitK list, "
             "e.g. [0, 4, 8])",
             "{small_m}; {tile}{gsu}",
             "{up_to}",
             "hipBLASLt docs, 'Using the hipBLASLt tuning utility' (TuningParameters: SplitK)"),
    LeverRow("cublaslt_heuristics", "cuBLASLt heuristic candidates", "tuning", ("gemm",),
             ("cublas",), (), ("underperforming", "moderate", "unknown"),
             "ask cublasLtMatmulAlgoGetHeuristic for more than one algorithm "
             "(requestedAlgoCount){for_shape} and time them; keep the fastest",
             "the run used {cublas_tile}; {at_pct}",
             "{up_to}",
             "NVIDIA cuBLAS docs, cublasLtMatmulAlgoGetHeuristic()"),
    LeverRow("cublas_split_k", "split-K for small M", "tuning", ("gemm",), ("cublas",), (),
             ("underperforming", "moderate", "unknown"),
             "time the split-K (segment_k on) algorithms for this shape "
             "(CUBLASLT_ALGO_CONFIG_SPLITK_NUM in the algo config)",
             "{small_m}; {cublas_tile}",
             "{up_to}",
             "NVIDIA cuBLAS docs, cublasLtMatmulAlgoConfigAttributes_t "
             "(CUBLASLT_ALGO_CONFIG_SPLITK_NUM)"),
    # ---- MoE: the stage that lags its sibling
    LeverRow("moe_stage_balance", "MoE stage balance", "moe", ("moe",), (), (),
             ("underperforming", "moderate"),
             "tune this MoE stage's kernel config (block sizes, warps; the fused-MoE tuning "
             "config of the engine) to reach what its sibling stage reaches",
             "{at_pct}, while {sibling}",
             "{lag}",
             "spec §7 (MoE target_eff 0.90 for both stages: the two stream the same experts' "
             "weights); vLLM benchmarks/kernels/benchmark_moe.py (fused_moe configs)"),
    # ---- Triton: the autotune space
    LeverRow("triton_blocks", "Triton block sizes", "tuning", ("gemm", "moe"), ("triton",), (),
             ("underperforming", "moderate", "unknown"),
             "widen the autotune space around {blocks} (BLOCK_M/N/K, num_warps, num_stages; "
             "triton_kernels: opt_flags constraints) and time it on this shape",
             "compiled with {blocks}{launch}; {at_pct}",
             "{up_to}", _TRITON_AUTOTUNE),
    LeverRow("triton_split_k", "split-K for small M", "tuning", ("gemm", "moe"), ("triton",), (),
             ("underperforming", "moderate", "unknown"),
             "try SPLIT_K > 1 (fewer K iterations per program, more programs)",
             "{small_m}; compiled with {blocks}",
             "{up_to}", _TRITON_AUTOTUNE + "; Triton matmul split-K configs (SPLIT_K)"),
    LeverRow("triton_config", "Triton launch config", "tuning", (), ("triton",), (),
             ("underperforming", "moderate", "unknown"),
             "re-autotune num_warps / num_stages (and the BLOCK sizes) for this shape",
             "launched with {grid}; {at_pct}",
             "{up_to}", _TRITON_AUTOTUNE, unless=("blocks",)),
    # ---- attention: the backend switch
    LeverRow("attention_backend", "attention backend switch", "backend", ("attn",), (), (),
             ("underperforming", "moderate", "unknown"),
             "switch the attention backend: {alt_backends}",
             "{at_pct}{gap}",
             "{up_to}",
             "SGLang server args (--attention-backend); vLLM docs (VLLM_ATTENTION_BACKEND); "
             "PyTorch docs, torch.nn.attention.sdpa_kernel"),
    # ---- elementwise chains: fusion
    LeverRow("elementwise_fusion", "fuse the elementwise chain", "fusion", ("elementwise",), (),
             (), (),
             "fuse {fuse_with} with this kernel (torch.compile, or one hand-written kernel)",
             "they read and write the same recorded shape {fuse_shape}",
             "removes up to {fuse_pct} of GPU time (the fused kernels' own launches) and "
             "{fuse_bytes} per intermediate not written and read back",
             _INDUCTOR + "; spec §7.1 (fuse an adjacent op away)"),
    LeverRow("elementwise_compile", "compile the elementwise op", "fusion", ("elementwise",),
             ("torch_native",), (), ("underperforming", "moderate", "unknown"),
             "let torch.compile generate this op (and its neighbours) instead of the generic "
             "ATen elementwise kernel",
             "a generic ATen kernel{launch}; {at_pct}",
             "{up_to}", _INDUCTOR),
    # ---- launch-bound (dispatch) heads
    LeverRow("graph_capture", "CUDA/HIP graph capture", "launch", (), (), (), ("unknown",),
             "capture the step in a CUDA/HIP graph (vLLM/SGLang cudagraph capture sizes) so "
             "each launch is not paid from the host",
             "{t_us}",
             "{gain_unknown}", _GRAPHS + "; spec §5 (dispatch-bound)"),
    LeverRow("fewer_launches", "fewer launches", "launch", (), (), ("latency",),
             ("underperforming", "moderate", "unknown"),
             "fuse it with its neighbours or batch more work per launch (one launch instead of "
             "several)",
             "{t_us}",
             "{up_to}", "spec §7 routing (latency-bound: occupancy / fusion / split-K)"),
    # ---- libraries without an editable call site: the host-side levers (spec §7 gate)
    LeverRow("library_backend", "dispatch / backend swap", "backend", (), (), (),
             ("underperforming", "moderate", "unknown"),
             "select another kernel for this shape: the library's tuning DB, another "
             "backend of the engine, or the path that dispatches it",
             "no editable call site ({backend}); {at_pct}",
             "{up_to}", "spec §7 shippability gate (host-side levers only)", editable=False),
    # ---- the generic kernel track (editable, real headroom)
    LeverRow("kernel_tuning", "kernel micro-optimization", "tuning", (), (), ("memory", "compute"),
             ("underperforming", "moderate"),
             "tune the kernel body (tiling, vector widths, coalescing) on its roofline gap",
             "{at_pct}",
             "{up_to}", "spec §7 routing (underperforming memory/compute: kernel track)",
             editable=True),
    LeverRow("occupancy", "occupancy / dependency chain", "tuning", (), (), ("latency",),
             ("underperforming", "moderate"),
             "raise occupancy or shorten the dependency chain (more programs in flight, "
             "fewer serial steps per program)",
             "{at_pct}{launch}",
             "{up_to}", "spec §7 routing (underperforming latency-bound)", editable=True),
)


# What to do about a part of the step that is not a kernel (core.analyze step targets): the
# levers a serving engineer reaches for, each with where it comes from.
STEP_LEVERS: dict[str, tuple[str, ...]] = {
    "idle gaps": (
        "capture the step in a CUDA/HIP graph (vLLM/SGLang cudagraph capture sizes covering "
        "the batch): launches are no longer paid from the host one by one",
        "fewer, larger launches: fuse the small kernels between the gaps (torch.compile, the "
        "engine's fused ops)",
        "overlap the host work with the GPU (the engine's async scheduling / overlap "
        "scheduler), so the next step's launches are queued before this one ends",
    ),
    "exposed communication": (
        "overlap the collective with compute (the engine's async TP / comm-compute overlap; "
        "a fused GEMM + all-reduce)",
        "a faster collective for the size (custom / quick all-reduce, NCCL/RCCL algorithm and "
        "protocol, multimem on NVLink SHARP)",
        "move fewer bytes: a lower-precision all-reduce, or fewer collectives per layer",
    ),
    "memcpy": (
        "keep the data on the GPU (no host round trip per step: sampling and bookkeeping on "
        "the device)",
        "pinned memory and async copies on their own stream, overlapped with compute",
    ),
}
