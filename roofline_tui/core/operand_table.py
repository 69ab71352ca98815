"""The operand-role table: op name -> one row per schema (overload or version), each row the
role of every argument position (:mod:`roofline_tui.core.operand_roles`), with the schema or
source it was read from beside it.

Built when imported (about 600 rows); :mod:`roofline_tui.core.operands` imports it on first
use, so a run whose Top-N records no launching ops never builds it.
"""

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from roofline_tui.core.operand_roles import CODES, WRITES_KINDS, Row

_TABLE: dict[str, list[Row]] = {}


def _row(op: str, roles: str, writes: str | None, schema: str, **kw: Any) -> None:
    """Add one schema (an overload or a version) of ``op``; ``roles`` are space-separated."""
    parsed = tuple(CODES[w] for w in roles.split())
    if writes is not None and not (writes in WRITES_KINDS or re.fullmatch(r"like:\d+", writes)):
        raise ValueError(f"{op}: unknown writes kind {writes!r}")
    _TABLE.setdefault(op, []).append(Row(parsed, writes, schema, **kw))


def _same(ops: str, roles: str, writes: str | None, schema: str, **kw: Any) -> None:
    """The same row for several ops (space-separated names); ``{op}`` in the schema is the name."""
    for op in ops.split():
        _row(op, roles, writes, schema.replace("{op}", op.split("::")[-1]), **kw)


# ---------------------------------------------------------------------------------------------
# aten (schemas from native_functions.yaml)
# ---------------------------------------------------------------------------------------------
_row("aten::mm", "input weight", "gemm", "schema: mm(Tensor self, Tensor mat2)")
_row("aten::mm", "input weight output", None, "schema: mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out)")
_row("aten::bmm", "input weight", "gemm", "schema: bmm(Tensor self, Tensor mat2)")
_row("aten::bmm", "input weight output", None, "schema: bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out)")
_row("aten::matmul", "input weight", "gemm", "schema: matmul(Tensor self, Tensor other)")
_row("aten::matmul", "input weight output", None, "schema: matmul.out(Tensor self, Tensor other, *, Tensor(a!) out)")
_row("aten::_int_mm", "input weight", "gemm", "schema: _int_mm(Tensor self, Tensor mat2)")
_row("aten::addmm", "bias input weight scalar scalar", "gemm",
     "schema: addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1)")
_row("aten::addmm", "bias input weight scalar scalar output", None,
     "schema: addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out)")
_row("aten::addmm_", "inplace input weight scalar scalar", None,
     "schema: addmm_(Tensor(a!) self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1)")
_row("aten::_addmm_activation", "bias input weight scalar scalar scalar", "gemm",
     "schema: _addmm_activation(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, bool use_gelu=False)")
_row("aten::baddbmm", "bias input weight scalar scalar", "gemm",
     "schema: baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1)")
_row("aten::baddbmm", "bias input weight scalar scalar output", None,
     "schema: baddbmm.out(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out)")
_row("aten::linear", "input weight bias", "linear",
     "schema: linear(Tensor input, Tensor weight, Tensor? bias=None)")
_row("aten::linear", "input weight bias output", None,
     "schema: linear.out(Tensor input, Tensor weight, Tensor? bias=None, *, Tensor(a!) out)")
_row("aten::_scaled_mm", "input weight scale scale bias scale scalar scalar", "gemm",
     "schema: _scaled_mm(Tensor self, Tensor mat2, Tensor scale_a, Tensor scale_b, Tensor? bias=None, "
     "Tensor? scale_result=None, ScalarType? out_dtype=None, bool use_fast_accum=False)")
_row("aten::_scaled_mm", "input weight scale scale bias scale scalar scalar output", None,
     "schema: _scaled_mm.out(..., bool use_fast_accum=False, *, Tensor(a!) out)")
_row("aten::_grouped_mm", "input weight index bias scalar", "unknown",
     "schema: _grouped_mm(Tensor self, Tensor mat2, Tensor? offs=None, Tensor? bias=None, ScalarType? out_dtype=None)")

# copies, fills, in-place writes
_row("aten::copy_", "output input scalar", None,
     "schema: copy_(Tensor(a!) self, Tensor src, bool non_blocking=False)",
     note="the destination is written, not read")
_row("aten::_foreach_copy_", "output input scalar", None,
     "schema: _foreach_copy_(Tensor(a!)[] self, Tensor[] src, bool non_blocking=False)",
     note="the destinations are written, not read")
_row("aten::fill_", "output input", None,
     "schema: fill_.Scalar(Tensor(a!) self, Scalar value) / fill_.Tensor(Tensor(a!) self, Tensor value)")
_row("aten::zero_", "output", None, "schema: zero_(Tensor(a!) self)")
_row("aten::index_put_", "inplace index input scalar", None,
     "schema: index_put_(Tensor(a!) self, Tensor?[] indices, Tensor values, bool accumulate=False)",
     note="self is written at the indexed rows only")
_row("aten::index_copy_", "inplace scalar index input", None,
     "schema: index_copy_(Tensor(a!) self, int dim, Tensor index, Tensor source)",
     note="self is written at the indexed rows only")
_row("aten::masked_fill_", "inplace index input", None,
     "schema: masked_fill_.Scalar(Tensor(a!) self, Tensor mask, Scalar value)")
_row("aten::masked_fill", "input index input", "broadcast",
     "schema: masked_fill.Scalar(Tensor self, Tensor mask, Scalar value)")
_row("aten::clone", "input scalar", "like:0", "schema: clone(Tensor self, *, MemoryFormat? memory_format=None)")
_row("aten::contiguous", "input scalar", "like:0",
     "schema: contiguous(Tensor(a) self, *, MemoryFormat memory_format=contiguous_format)",
     note="copies only when self is not already contiguous")
_row("aten::_to_copy", "input", "like:0",
     "schema: _to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None)", tail=True)
_row("aten::to", "input", "like:0",
     "schema: to.dtype(Tensor(a) self, ScalarType dtype, ...) and its device/dtype_layout overloads",
     note="copies only when the dtype, device or layout changes", tail=True)

# elementwise, out of place: the output is the broadcast of the tensor inputs
_same("aten::add aten::sub aten::rsub", "input input scalar", "broadcast",
      "schema: {op}.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)")
_same("aten::add aten::sub", "input input scalar output", None,
      "schema: {op}.out(Tensor self, Tensor other, *, Scalar alpha=1, Tensor(a!) out)")
_same("aten::mul aten::pow aten::maximum aten::minimum aten::eq aten::ne aten::lt aten::le "
      "aten::gt aten::ge aten::remainder aten::fmod aten::atan2 aten::bitwise_and aten::bitwise_or "
      "aten::bitwise_xor aten::logical_and aten::logical_or aten::floor_divide",
      "input input", "broadcast",
      "schema: {op}.Tensor(Tensor self, Tensor other), and its Scalar overload where it has one")
_same("aten::mul", "input input output", None,
      "schema: {op}.out(Tensor self, Tensor other, *, Tensor(a!) out)")
_row("aten::div", "input input", "broadcast", "schema: div.Tensor(Tensor self, Tensor other)")
_row("aten::div", "input input scalar", "broadcast",
     "schema: div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode)")
_row("aten::div", "input input output", None, "schema: div.out(Tensor self, Tensor other, *, Tensor(a!) out)")
_row("aten::where", "index input input", "broadcast",
     "schema: where.self(Tensor condition, Tensor self, Tensor other)")
_same("aten::add_ aten::sub_", "inplace input scalar", None,
      "schema: {op}.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1)")
_same("aten::mul_ aten::div_ aten::pow_", "inplace input", None,
      "schema: {op}.Tensor(Tensor(a!) self, Tensor other)")
_row("aten::addcmul_", "inplace input input scalar", None,
     "schema: addcmul_(Tensor(a!) self, Tensor tensor1, Tensor tensor2, *, Scalar value=1)")

# elementwise, unary: the output is like self (trailing scalars: approximate=, min/max, ...)
_same("aten::neg aten::rsqrt aten::sqrt aten::exp aten::exp2 aten::log aten::log1p aten::cos "
      "aten::sin aten::tanh aten::sigmoid aten::silu aten::relu aten::abs aten::reciprocal "
      "aten::erf aten::gelu aten::sign aten::floor aten::ceil aten::round aten::trunc aten::square "
      "aten::logical_not aten::bitwise_not aten::isnan aten::clamp aten::clamp_min aten::clamp_max "
      "aten::nan_to_num aten::hardtanh aten::leaky_relu aten::threshold aten::softplus",
      "input", "like:0", "schema: {op}(Tensor self, <scalars>)", tail=True)
_same("aten::neg_ aten::rsqrt_ aten::exp_ aten::sigmoid_ aten::tanh_ aten::silu_ aten::relu_ "
      "aten::gelu_ aten::clamp_ aten::clamp_min_ aten::clamp_max_ aten::nan_to_num_",
      "inplace", None, "schema: {op}(Tensor(a!) self, <scalars>)", tail=True)
_same("aten::softmax aten::log_softmax aten::_safe_softmax", "input scalar scalar", "like:0",
      "schema: {op}.int(Tensor self, int dim, ScalarType? dtype=None)")
_same("aten::_softmax aten::_log_softmax", "input scalar scalar", "like:0",
      "schema: {op}(Tensor self, int dim, bool half_to_float)")
_same("aten::_softmax aten::_log_softmax", "input scalar scalar output", None,
      "schema: {op}.out(Tensor self, int dim, bool half_to_float, *, Tensor(a!) out)")
_same("aten::cumsum aten::cumprod", "input scalar scalar", "like:0",
      "schema: {op}(Tensor self, int dim, *, ScalarType? dtype=None)")
_row("aten::sort", "input scalar scalar", "like:0",
     "schema: sort(Tensor self, int dim=-1, bool descending=False) -> (values, indices)")
_row("aten::sort", "input scalar scalar scalar", "like:0",
     "schema: sort.stable(Tensor self, *, bool? stable, int dim=-1, bool descending=False)")
_row("aten::argsort", "input scalar scalar", "like:0",
     "schema: argsort(Tensor self, int dim=-1, bool descending=False)")

# norms (a gamma is a weight)
_row("aten::layer_norm", "input scalar weight bias scalar scalar", "like:0",
     "schema: layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
     "float eps=1e-05, bool cudnn_enable=True)")
_row("aten::native_layer_norm", "input scalar weight bias scalar", "like:0",
     "schema: native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps)")
_same("aten::rms_norm aten::_fused_rms_norm", "input scalar weight scalar", "like:0",
      "schema: {op}(Tensor input, int[] normalized_shape, Tensor? weight=None, float? eps=None)")

# reductions: the reduced dims are a ScalarList whose values the trace does not record
_same("aten::mean aten::sum", "input scalar scalar scalar", "unknown",
      "schema: {op}.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)")
_same("aten::sum aten::mean", "input scalar", "0-d", "schema: {op}(Tensor self, *, ScalarType? dtype=None)")
_same("aten::amax aten::amin aten::max aten::min aten::all aten::any aten::argmax aten::argmin "
      "aten::logsumexp", "input scalar scalar", "unknown",
      "schema: {op}.dim(Tensor self, int dim (or int[1] dim, or int? dim), bool keepdim=False)")
_same("aten::max aten::min aten::all aten::any", "input", "0-d", "schema: {op}(Tensor self)")
_same("aten::item aten::is_nonzero", "input", "0-d", "schema: {op}(Tensor self) -> Scalar",
      note="reads one element back to the host (through _local_scalar_dense)")
_row("aten::result_type", "other", None, "schema: result_type.Scalar(Tensor tensor, Scalar other) -> ScalarType",
     note="computes a dtype: moves no data", tail=True)
_row("aten::_local_scalar_dense", "input", "0-d", "schema: _local_scalar_dense(Tensor self) -> Scalar",
     note="copies one element to the host (a synchronisation)")
_row("aten::topk", "input scalar scalar scalar scalar", "unknown",
     "schema: topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (values, indices)",
     note="values and indices have k along dim; k is a scalar the trace does not record")

# gathers and scatters
_row("aten::embedding", "weight index scalar scalar scalar", "embedding",
     "schema: embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, "
     "bool sparse=False)", note="the table is read at the indexed rows only")
_row("aten::index_select", "input scalar index", "index_select",
     "schema: index_select(Tensor self, int dim, Tensor index)",
     note="self is read at the indexed rows only; the dim is a scalar the trace does not record")
_row("aten::index_select", "input scalar index output", None,
     "schema: index_select.out(Tensor self, int dim, Tensor index, *, Tensor(a!) out)",
     note="self is read at the indexed rows only")
_row("aten::gather", "input scalar index scalar", "like:2",
     "schema: gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False)",
     note="self is read where index points only")
_row("aten::gather", "input scalar index scalar output", None,
     "schema: gather.out(Tensor self, int dim, Tensor index, *, bool sparse_grad=False, Tensor(a!) out)",
     note="self is read where index points only")
_row("aten::index", "input index", "unknown", "schema: index.Tensor(Tensor self, Tensor?[] indices)",
     note="advanced indexing: the output size depends on the index values")
_row("aten::cat", "input scalar", "cat", "schema: cat(Tensor[] tensors, int dim=0)")
_row("aten::cat", "input scalar output", None, "schema: cat.out(Tensor[] tensors, int dim=0, *, Tensor(a!) out)")
_row("aten::stack", "input scalar", "stack", "schema: stack(Tensor[] tensors, int dim=0)")

# factories: the size is a ScalarList the trace does not record
_same("aten::zeros aten::ones aten::full aten::rand aten::randn aten::arange", "scalar", "unknown",
      "schema: {op}(SymInt[] size | Scalar start, Scalar end, ..., *, ScalarType? dtype=None, ...)",
      note="a factory: its output is sized by scalars the trace does not record", tail=True)
_same("aten::zeros_like aten::ones_like aten::full_like", "other", "like:0",
      "schema: {op}(Tensor self, ..., *, ScalarType? dtype=None, ...)",
      note="self is read for its shape only", tail=True)

# views and allocations: they move no data (a kernel under them comes from a nested op)
_same("aten::view aten::reshape aten::_unsafe_view aten::t aten::transpose aten::permute "
      "aten::as_strided aten::slice aten::select aten::expand aten::expand_as aten::unsqueeze "
      "aten::squeeze aten::flatten aten::unflatten aten::unbind aten::split aten::split_with_sizes "
      "aten::chunk aten::narrow aten::alias aten::detach aten::numpy_T aten::lift_fresh "
      "aten::view_as aten::_reshape_alias aten::empty_like aten::resize_",
      "other", None, "schema: {op}(Tensor(a) self, <sizes/dims>) -> Tensor(a)",
      note="a view or an allocation: moves no data", tail=True)
_same("aten::empty aten::empty_strided", "scalar", None,
      "schema: {op}(SymInt[] size, ..., *, ScalarType? dtype=None, ...)", note="an allocation: moves no data",
      tail=True)

# attention
_row("aten::scaled_dot_product_attention", "input input input bias scalar scalar scalar scalar", "attention",
     "schema: scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
     "float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False)")
_row("aten::_scaled_dot_product_flash_attention", "input input input scalar scalar scalar scalar", "attention",
     "schema: _scaled_dot_product_flash_attention(Tensor query, Tensor key, Tensor value, float dropout_p=0., "
     "bool is_causal=False, bool return_debug_mask=False, *, float? scale=None)")
_row("aten::_scaled_dot_product_flash_attention_for_cpu", "input input input scalar scalar bias scalar",
     "attention", "schema: _scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, "
     "float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None)")
_row("aten::_scaled_dot_product_efficient_attention", "input input input bias scalar scalar scalar scalar",
     "attention", "schema: _scaled_dot_product_efficient_attention(Tensor query, Tensor key, Tensor value, "
     "Tensor? attn_bias, bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, *, float? scale=None)")
_row("aten::_scaled_dot_product_cudnn_attention", "input input input bias scalar scalar scalar scalar scalar",
     "attention", "schema: _scaled_dot_product_cudnn_attention(Tensor query, Tensor key, Tensor value, "
     "Tensor? attn_bias, bool compute_log_sumexp, float dropout_p=0., bool is_causal=False, "
     "bool return_debug_mask=False, *, float? scale=None)")
_row("aten::_scaled_dot_product_fused_attention_overrideable",
     "input input input bias scalar scalar scalar scalar", "attention",
     "schema: _scaled_dot_product_fused_attention_overrideable(Tensor query, Tensor key, Tensor value, "
     "Tensor? attn_bias=None, float dropout_p=0., bool is_causal=False, bool return_debug_mask=False, *, "
     "float? scale=None)")
_row("aten::_flash_attention_forward",
     "input input input index index scalar scalar scalar scalar scalar scalar scalar scalar index bias index scalar",
     "attention",
     "schema: _flash_attention_forward(Tensor query, Tensor key, Tensor value, Tensor? cum_seq_q, Tensor? cum_seq_k, "
     "SymInt max_q, SymInt max_k, float dropout_p, bool is_causal, bool return_debug_mask, *, float? scale=None, "
     "SymInt? window_size_left=None, SymInt? window_size_right=None, Tensor? seqused_k=None, "
     "Tensor? alibi_slopes=None[, Tensor? block_table=None, int? num_splits=None])",
     paged=(15, (1, 2)))
_row("aten::_efficient_attention_forward",
     "input input input bias index index scalar scalar scalar scalar scalar scalar index scalar", "attention",
     "schema: _efficient_attention_forward(Tensor query, Tensor key, Tensor value, Tensor? bias, "
     "Tensor? cu_seqlens_q, Tensor? cu_seqlens_k, SymInt? max_seqlen_q, SymInt? max_seqlen_k, float dropout_p, "
     "int custom_mask_type, bool compute_log_sumexp=False, *, float? scale=None, Tensor? seqlen_k=None, "
     "int? window_size=None)")

# ---------------------------------------------------------------------------------------------
# flash-attn (flash_attn/flash_attn_interface.py custom ops and autograd Functions) and
# vllm-flash-attn (csrc/flash_attn/flash_api_torch_lib.cpp)
# ---------------------------------------------------------------------------------------------
_row("flash_attn::_flash_attn_forward",
     "input input input scalar scalar scalar scalar scalar scalar bias scalar", "attention",
     "schema: _flash_attn_forward(q, k, v, float dropout_p, float softmax_scale, bool causal, "
     "int window_size_left, int window_size_right, float softcap, Tensor? alibi_slopes, bool return_softmax)")
_row("flash_attn::_flash_attn_varlen_forward",
     "input input input index index scalar scalar scalar scalar scalar scalar scalar scalar bias scalar index "
     "index index scalar", "attention",
     "schema: _flash_attn_varlen_forward(q, k, v, Tensor cu_seqlens_q, Tensor cu_seqlens_k, int max_seqlen_q, "
     "int max_seqlen_k, float dropout_p, float softmax_scale, bool causal, int window_size_left=-1, "
     "int window_size_right=-1, float softcap=0.0, Tensor? alibi_slopes=None, bool return_softmax=False, "
     "Tensor? block_table=None, Tensor? leftpad_k=None, Tensor? seqused_k=None, bool zero_tensors=False)",
     paged=(15, (1, 2)))
_row("FlashAttnFunc", "input input input scalar scalar scalar scalar scalar bias scalar scalar scalar",
     "attention", "source: class FlashAttnFunc(torch.autograd.Function).forward(ctx, q, k, v, dropout_p, "
     "softmax_scale, causal, window_size, softcap, alibi_slopes, deterministic, return_softmax, is_grad_enabled)",
     note="flash_attn_func's autograd Function; trailing arguments vary with the flash-attn version")
_row("FlashAttnVarlenFunc",
     "input input input index index scalar scalar scalar scalar scalar scalar scalar bias scalar scalar index "
     "scalar", "attention",
     "source: class FlashAttnVarlenFunc(torch.autograd.Function).forward(ctx, q, k, v, cu_seqlens_q, "
     "cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, window_size, softcap, "
     "alibi_slopes, deterministic, return_softmax, block_table, is_grad_enabled)",
     paged=(15, (1, 2)),
     note="flash_attn_varlen_func's autograd Function; trailing arguments vary with the flash-attn version")
_same("_vllm_fa2_C::varlen_fwd _vllm_fa3_C::varlen_fwd",
      "input input input output index index index index index bias scalar scalar scalar scalar scalar scalar "
      "scalar scalar scalar scalar other", "attention",
      "schema: varlen_fwd(Tensor! q, Tensor k, Tensor v, Tensor!? out, Tensor cu_seqlens_q, Tensor cu_seqlens_k, "
      "Tensor? seqused_k, Tensor? leftpad_k, Tensor? block_table, Tensor? alibi_slopes, int max_seqlen_q, "
      "int max_seqlen_k, float p_dropout, float softmax_scale, bool zero_tensors, bool is_causal, "
      "int window_size_left, int window_size_right, float softcap, bool return_softmax, Generator? gen)",
      out_arg=3, paged=(8, (1, 2)))

# ---------------------------------------------------------------------------------------------
# vLLM custom ops (csrc/torch_bindings.cpp, csrc/moe/torch_bindings.cpp) and the vllm::
# Python custom ops (direct_register_custom_op)
# ---------------------------------------------------------------------------------------------
_same("_C::silu_and_mul _C::mul_and_silu _C::gelu_and_mul _C::gelu_tanh_and_mul _C::gelu_new "
      "_C::gelu_fast _C::gelu_quick",
      "output input", None, "schema: {op}(Tensor! out, Tensor input)")
_row("_C::fatrelu_and_mul", "output input scalar", None,
     "schema: fatrelu_and_mul(Tensor! out, Tensor input, float threshold)")
_row("_C::swigluoai_and_mul", "output input scalar scalar", None,
     "schema: swigluoai_and_mul(Tensor! out, Tensor input, float alpha=1.702, float limit=7.0)")
_row("_C::silu_and_mul_quant", "output input scale", None,
     "schema: silu_and_mul_quant(Tensor! result, Tensor input, Tensor scale)")
_row("_C::rms_norm", "output input weight scalar", None,
     "schema: rms_norm(Tensor! result, Tensor input, Tensor weight, float epsilon)")
_row("_C::fused_add_rms_norm", "inplace inplace weight scalar", None,
     "schema: fused_add_rms_norm(Tensor! input, Tensor! residual, Tensor weight, float epsilon)")
_row("_C::rms_norm_static_fp8_quant", "output input weight scale scalar", None,
     "schema: rms_norm_static_fp8_quant(Tensor! result, Tensor input, Tensor weight, Tensor scale, float epsilon)")
_row("_C::fused_add_rms_norm_static_fp8_quant", "output input inplace weight scale scalar", None,
     "schema: fused_add_rms_norm_static_fp8_quant(Tensor! result, Tensor input, Tensor! residual, Tensor weight, "
     "Tensor scale, float epsilon)")
_row("_C::rms_norm_dynamic_per_token_quant", "output input weight output scalar scale inplace", None,
     "schema: rms_norm_dynamic_per_token_quant(Tensor! result, Tensor input, Tensor weight, Tensor! scale, "
     "float epsilon, Tensor? scale_ub, Tensor!? residual)", note="the per-token scales are computed (written)")
_same("_C::rotary_embedding sgl_kernel::rotary_embedding", "index inplace inplace scalar weight scalar", None,
      "schema: rotary_embedding(Tensor positions, Tensor! query, Tensor!? key, int head_size, "
      "Tensor cos_sin_cache, bool is_neox)",
      note="query and key are rotated in place; the cos/sin cache is read at the positions' rows")
_row("_C::batched_rotary_embedding", "index inplace inplace scalar weight scalar scalar index", None,
     "schema: batched_rotary_embedding(Tensor positions, Tensor! query, Tensor!? key, int head_size, "
     "Tensor cos_sin_cache, bool is_neox, int rot_dim, Tensor cos_sin_cache_offsets)")
_row("_C::static_scaled_fp8_quant", "output input scale scalar", None,
     "schema: static_scaled_fp8_quant(Tensor! result, Tensor input, Tensor scale[, (int, int)? group_shape=None])")
_row("_C::dynamic_scaled_fp8_quant", "output input output", None,
     "schema: dynamic_scaled_fp8_quant(Tensor! result, Tensor input, Tensor! scale)",
     note="the per-tensor scale is computed (written)")
_row("_C::dynamic_per_token_scaled_fp8_quant", "output input output scale", None,
     "schema: dynamic_per_token_scaled_fp8_quant(Tensor! result, Tensor input, Tensor! scale, Tensor? scale_ub)",
     note="the per-token scales are computed (written)")
_row("_C::static_scaled_int8_quant", "output input scale index", None,
     "schema: static_scaled_int8_quant(Tensor! result, Tensor input, Tensor scale, Tensor? azp)")
_row("_C::dynamic_scaled_int8_quant", "output input output output", None,
     "schema: dynamic_scaled_int8_quant(Tensor! result, Tensor input, Tensor! scale, Tensor!? azp)")
_row("_C::cutlass_scaled_mm", "output input weight scale scale bias", None,
     "schema: cutlass_scaled_mm(Tensor! out, Tensor a, Tensor b, Tensor a_scales, Tensor b_scales, Tensor? bias)")
_row("_C::paged_attention_v1",
     "output input cache cache scalar scalar index index scalar scalar bias scalar scale scale scalar scalar "
     "scalar scalar scalar", None,
     "schema: paged_attention_v1(Tensor! out, Tensor query, Tensor key_cache, Tensor value_cache, int num_kv_heads, "
     "float scale, Tensor block_tables, Tensor seq_lens, int block_size, int max_seq_len, Tensor? alibi_slopes, "
     "str kv_cache_dtype, Tensor k_scale, Tensor v_scale, int tp_rank, int blocksparse_local_blocks, "
     "int blocksparse_vert_stride, int blocksparse_block_size, int blocksparse_head_sliding_step)")
_row("_C::paged_attention_v2",
     "output workspace workspace workspace input cache cache scalar scalar index index scalar scalar bias scalar "
     "scale scale scalar scalar scalar scalar scalar", None,
     "schema: paged_attention_v2(Tensor! out, Tensor! exp_sums, Tensor! max_logits, Tensor! tmp_out, Tensor query, "
     "Tensor key_cache, Tensor value_cache, int num_kv_heads, float scale, Tensor block_tables, Tensor seq_lens, "
     "int block_size, int max_seq_len, Tensor? alibi_slopes, str kv_cache_dtype, Tensor k_scale, Tensor v_scale, "
     "int tp_rank, int blocksparse_local_blocks, int blocksparse_vert_stride, int blocksparse_block_size, "
     "int blocksparse_head_sliding_step)")
_row("_C::merge_attn_states", "output output input input input input scalar scale", None,
     "schema: merge_attn_states(Tensor! output, Tensor!? output_lse, Tensor prefix_output, Tensor prefix_lse, "
     "Tensor suffix_output, Tensor suffix_lse, int!? prefill_tokens_with_context, Tensor? output_scale=None)")
_same("_C::weak_ref_tensor sgl_kernel::weak_ref_tensor", "other", None,
      "schema: weak_ref_tensor(Tensor input) -> Tensor", note="makes a non-owning alias: moves no data")
_same("_C_cache_ops::reshape_and_cache _C_cache_ops::reshape_and_cache_flash",
      "input input cache cache index scalar scale scale", None,
      "schema: {op}(Tensor key, Tensor value, Tensor! key_cache, Tensor! value_cache, Tensor slot_mapping, "
      "str kv_cache_dtype, Tensor k_scale, Tensor v_scale)",
      writes_cache=True, note="key/value are written into the caches at the slot_mapping rows")
_row("_C_cache_ops::concat_and_cache_mla", "input input cache index scalar scale", None,
     "schema: concat_and_cache_mla(Tensor kv_c, Tensor k_pe, Tensor! kv_cache, Tensor slot_mapping, "
     "str kv_cache_dtype, Tensor scale)", writes_cache=True,
     note="kv_c and k_pe are written into the cache at the slot_mapping rows")
_row("_moe_C::topk_softmax", "output output output input scalar", None,
     "schema: topk_softmax(Tensor! topk_weights, Tensor! topk_indices, Tensor! token_expert_indices, "
     "Tensor gating_output[, bool renormalize])")
_row("_moe_C::moe_align_block_size", "index scalar scalar output output output index", None,
     "schema: moe_align_block_size(Tensor topk_ids, int num_experts, int block_size, Tensor! sorted_token_ids, "
     "Tensor! experts_ids, Tensor! num_tokens_post_pad[, Tensor? expert_map])")
_row("_moe_C::moe_sum", "input output", None,
     "schema: moe_sum(Tensor! input, Tensor output)",
     note="the per-expert partial results (input) are summed into output")

_row("vllm::unified_attention", "input input input scalar", "like:0",
     "source: vllm attention layer: unified_attention(Tensor query, Tensor key, Tensor value, str layer_name) "
     "-> Tensor (fake: empty_like(query))",
     note="reads the layer's KV cache, which is not an argument")
_row("vllm::unified_attention_with_output", "input input input output scalar scale scale other", None,
     "source: vllm attention layer: unified_attention_with_output(Tensor query, Tensor key, Tensor value, "
     "Tensor! output, str layer_name, Tensor? output_scale=None, Tensor? output_block_scale=None, "
     "Tensor? kv_cache_dummy_dep=None)",
     note="reads the layer's KV cache, which is not an argument; kv_cache_dummy_dep is an ordering token")
_row("vllm::unified_kv_cache_update", "input input scalar", None,
     "source: vllm attention layer: unified_kv_cache_update(Tensor key, Tensor value, str layer_name) "
     "-> Tensor (an empty dependency token)",
     note="writes key/value into the layer's KV cache, which is not an argument")
_same("vllm::moe_forward vllm::moe_forward_shared", "input input scalar", "like:0",
      "source: vllm fused_moe: {op}(Tensor hidden_states, Tensor router_logits, str layer_name)",
      note="the expert weights are module state, not arguments")
_same("vllm::moe_forward vllm::moe_forward_shared", "input input input scalar", "like:0",
      "source: vllm fused_moe runner: {op}(Tensor hidden_states, Tensor router_logits, "
      "Tensor? shared_experts_input, str layer_name)",
      note="the expert weights are module state, not arguments")
_row("vllm::rocm_unquantized_gemm", "input weight bias", "linear",
     "source: vllm layers/utils.py: rocm_unquantized_gemm_impl(Tensor x, Tensor weight, Tensor? bias=None)")
_row("vllm::rocm_aiter_rms_norm", "input weight scalar", "like:0",
     "source: vllm _aiter_ops.py: _rocm_aiter_rms_norm_impl(Tensor x, Tensor weight, float variance_epsilon)")
_row("vllm::rocm_aiter_rmsnorm2d_fwd_with_add", "input input weight scalar", "like:0",
     "source: vllm _aiter_ops.py: _rocm_aiter_rmsnorm2d_fwd_with_add_impl(Tensor x, Tensor residual, "
     "Tensor weight, float variance_epsilon) -> (out, residual_out)",
     note="allocates two outputs: out like x and residual_out like residual")

# ---------------------------------------------------------------------------------------------
# aiter (aiter/ops/*.py, aiter/tuned_gemm.py)
# ---------------------------------------------------------------------------------------------
_same("aiter::rms_norm aiter::rmsnorm2d_fwd aiter::rmsnorm2d_fwd_ck", "input weight scalar scalar", "like:0",
      "source: aiter ops/rmsnorm.py: {op}(Tensor input, Tensor weight, float epsilon, "
      "int use_model_sensitive_rmsnorm=0) -> Tensor")
_row("aiter::rmsnorm2d_fwd_with_add_ck", "output input input output weight scalar scalar", None,
     "source: aiter ops/rmsnorm.py: rmsnorm2d_fwd_with_add_ck(Tensor out, Tensor input, Tensor residual_in, "
     "Tensor residual_out, Tensor weight, float epsilon, int use_model_sensitive_rmsnorm=0)")
_row("aiter::rmsnorm2d_fwd_with_add", "output input input output weight scalar scalar scalar", None,
     "source: aiter ops/rmsnorm.py: rmsnorm2d_fwd_with_add(Tensor out, Tensor input, Tensor residual_in, "
     "Tensor residual_out, Tensor weight, float epsilon, bool gemma_norm=False, int use_model_sensitive_rmsnorm=0)")
_row("aiter::add_rmsnorm", "output input input output weight scalar scalar", None,
     "source: aiter ops/rmsnorm.py: add_rmsnorm(Tensor out, Tensor input, Tensor residual_in, "
     "Tensor residual_out, Tensor weight, float epsilon[, bool gemma_norm=False])")
_row("aiter::rmsnorm", "output input weight scalar scalar", None,
     "source: aiter ops/rmsnorm.py: rmsnorm(Tensor out, Tensor input, Tensor weight, float epsilon"
     "[, bool gemma_norm=False])")
_row("aiter::rms_norm_cu", "output input weight scalar", None,
     "source: aiter ops/rmsnorm.py: rms_norm_cu(Tensor out, Tensor input, Tensor weight, float epsilon)")
_row("aiter::fused_add_rms_norm_cu", "inplace inplace weight scalar", None,
     "source: aiter ops/rmsnorm.py: fused_add_rms_norm_cu(Tensor input, Tensor residual_in, Tensor weight, "
     "float epsilon)")
_row("aiter::gemm_a16w16", "input weight bias scalar scale scale scale", "linear",
     "source: aiter tuned_gemm.py: gemm_a16w16(Tensor A, Tensor B, Tensor? bias=None, dtype? otype=None, "
     "Tensor? scale_a=None, Tensor? scale_b=None, Tensor? scale_c=None) -> Tensor")
_row("aiter::silu_and_mul", "output input scalar", None,
     "source: aiter ops/activation.py: silu_and_mul(Tensor out, Tensor input[, float limit=0.0])")
_row("aiter::gelu_and_mul", "output input", None,
     "source: aiter ops/activation.py: gelu_and_mul(Tensor out, Tensor input)")
_row("aiter::rotary_embedding_fwd", "index inplace inplace scalar weight weight scalar scalar", None,
     "source: aiter ops/pos_encoding.py: rotary_embedding_fwd(Tensor positions, Tensor query, Tensor key, "
     "int head_size, Tensor cos_cache, Tensor sin_cache, bool is_neox, bool is_nope_first)")
_same("aiter::reshape_and_cache aiter::reshape_and_cache_flash",
      "input input cache cache index scalar scale scale scalar", None,
      "source: aiter ops/cache.py: {op}(Tensor key, Tensor value, Tensor key_cache, Tensor value_cache, "
      "Tensor slot_mapping, str kv_cache_dtype, Tensor k_scale, Tensor v_scale[, bool asm_layout])",
      writes_cache=True, note="key/value are written into the caches at the slot_mapping rows")
_row("aiter::paged_attention_ragged",
     "output workspace input cache cache scalar index index index scalar scalar bias scalar scalar scalar scale "
     "scale scale scalar scalar", None,
     "source: aiter ops/attention.py: paged_attention_ragged(Tensor out, Tensor workspace_buffer, Tensor query, "
     "Tensor key_cache, Tensor value_cache, float scale, Tensor kv_indptr, Tensor kv_page_indices, "
     "Tensor kv_last_page_lens, int block_size, int max_num_partitions, Tensor? alibi_slopes, str kv_cache_dtype, "
     "str kv_cache_layout, float logits_soft_cap, Tensor k_scale, Tensor v_scale, Tensor? fp8_out_scale=None, "
     "int partition_size=256, int mtp=1)")
_row("aiter::topk_softmax", "output output output input scalar scalar scalar", None,
     "source: aiter ops/moe_op.py: topk_softmax(Tensor topk_weights, Tensor topk_indices, "
     "Tensor token_expert_indices, Tensor gating_output, bool need_renorm, int num_shared_experts=0, "
     "str shared_expert_scoring_func='')")
_row("aiter::grouped_topk", "input output output scalar scalar scalar scalar scalar", None,
     "source: aiter ops/topk.py: grouped_topk(Tensor gating_output, Tensor topk_weights, Tensor topk_ids, "
     "int num_expert_group, int topk_group, bool need_renorm, bool is_softmax=True, "
     "float routed_scaling_factor=1.0)")
_row("aiter::moe_fused_gate", "input bias output output scalar scalar scalar scalar scalar", None,
     "source: aiter ops/topk.py: moe_fused_gate(Tensor input, Tensor bias, Tensor topk_weights, Tensor topk_ids, "
     "int num_expert_group, int topk_group, int topk, int n_share_experts_fusion, "
     "float routed_scaling_factor=1.0)")
_row("aiter::moe_sorting_fwd", "index input output output output output output scalar scalar index index scalar",
     None, "source: aiter ops/moe_sorting.py: moe_sorting_fwd(Tensor topk_ids, Tensor topk_weights, "
     "Tensor sorted_token_ids, Tensor sorted_weights, Tensor sorted_expert_ids, Tensor num_valid_ids, "
     "Tensor moe_buf, int num_experts, int unit_size, Tensor? local_expert_mask=None, "
     "Tensor? num_local_tokens=None, int dispatch_policy=0)",
     note="moe_buf is the zeroed MoE output buffer")
_row("aiter::moe_align_block_size", "index scalar scalar output output output output", None,
     "source: aiter ops/moe_op.py: moe_align_block_size(Tensor topk_ids, int num_experts, int block_size, "
     "Tensor sorted_token_ids, Tensor experts_ids, Tensor token_nums, Tensor num_tokens_post_pad)")
_row("aiter::fmoe", "output input weight weight index input index index scalar", None,
     "source: aiter ops/moe_op.py: fmoe(Tensor out, Tensor input, Tensor gate, Tensor down, "
     "Tensor sorted_token_ids, Tensor sorted_weights, Tensor sorted_expert_ids, Tensor num_valid_ids, int topk)",
     note="the expert weights are read only for the experts that tokens are routed to")
_row("aiter::fmoe_int8_g1u0", "output input weight weight index input index index scalar scale scale scale "
     "scale scalar", None,
     "source: aiter ops/moe_op.py: fmoe_int8_g1u0(out, input, gate, down, sorted_token_ids, sorted_weights, "
     "sorted_expert_ids, num_valid_ids, int topk, Tensor input_scale, Tensor fc1_scale, Tensor fc2_scale, "
     "Tensor fc2_smooth_scale, int? activation)")
_same("aiter::fmoe_g1u1 aiter::fmoe_g1u1_tkw1",
      "output input weight weight index input index index scalar scale scale scale scalar scale scalar", None,
      "source: aiter ops/moe_op.py: {op}(out, input, gate, down, sorted_token_ids, sorted_weights, "
      "sorted_expert_ids, num_valid_ids, int topk, Tensor input_scale, Tensor fc1_scale, Tensor fc2_scale, "
      "str? kernelName='', Tensor? fc2_smooth_scale=None, int? activation)")
_same("aiter::fmoe_int8_g1u0_a16 aiter::fmoe_g1u1_a16",
      "output input weight weight index input index index scalar scale scale scale scale scalar", None,
      "source: aiter ops/moe_op.py: {op}(out, input, gate, down, sorted_token_ids, sorted_weights, "
      "sorted_expert_ids, num_valid_ids, int topk, Tensor fc1_scale, Tensor fc2_scale, Tensor fc1_smooth_scale, "
      "Tensor fc2_smooth_scale, int? activation)")
_row("aiter::fmoe_fp8_blockscale_g1u1",
     "output input weight weight index input index index scalar scale scale scale scalar scalar scalar scale "
     "scalar scalar", None,
     "source: aiter ops/moe_op.py: fmoe_fp8_blockscale_g1u1(out, input, gate, down, sorted_token_ids, "
     "sorted_weights, sorted_expert_ids, num_valid_ids, int topk, Tensor input_scale, Tensor fc1_scale, "
     "Tensor fc2_scale, str? kernelName, int fc_scale_blkn=128, int fc_scale_blkk=128, "
     "Tensor? fc2_smooth_scale=None, int? activation, int block_size_M=32)")
_row("aiter::ck_moe_stage1",
     "input weight other index index index output scalar scalar scale scale scalar input scalar scalar scalar "
     "scalar scalar scalar", None,
     "source: aiter ops/moe_op.py: ck_moe_stage1(Tensor hidden_states, Tensor w1, Tensor w2, "
     "Tensor sorted_token_ids, Tensor sorted_expert_ids, Tensor num_valid_ids, Tensor out, int topk, "
     "str? kernelName, Tensor? w1_scale, Tensor? a1_scale, int? block_m=32, Tensor? sorted_weights, "
     "int quant_type, int activation, int? splitk, bool use_non_temporal_load, str? dst_type, bool is_shuffled)",
     note="stage 1 multiplies by w1 (gate/up); w2 is passed along, not multiplied")
_row("aiter::ck_moe_stage2",
     "input other weight index index index output scalar scalar scale scale scalar input scalar scalar scalar "
     "scalar scalar scalar", None,
     "source: aiter ops/moe_op.py: ck_moe_stage2(Tensor inter_states, Tensor w1, Tensor w2, "
     "Tensor sorted_token_ids, Tensor sorted_expert_ids, Tensor num_valid_ids, Tensor out, int topk, "
     "str? kernelName, Tensor? w2_scale, Tensor? a2_scale, int? block_m=32, Tensor? sorted_weights, "
     "int quant_type, int activation, int splitk, bool use_non_temporal_load, str? dst_type, bool is_shuffled)",
     note="stage 2 multiplies by w2 (down); w1 is passed along, not multiplied")

# ---------------------------------------------------------------------------------------------
# SGLang: sgl_kernel (sgl-kernel/csrc/common_extension*.cc), sglang:: custom ops, and the
# sglang_profiler:: shape-discovery wrappers (srt/utils/kernel_shape_profiler.py). A wrapper
# passes only the wrapped function's Tensor / Optional[Tensor] parameters, in signature order,
# and is named <module>_<function>_<counter>.
# ---------------------------------------------------------------------------------------------
_same("sgl_kernel::silu_and_mul sgl_kernel::gelu_and_mul sgl_kernel::gelu_tanh_and_mul",
      "output input scalar", None, "schema: {op}(Tensor! out, Tensor input[, bool enable_pdl])")
_row("sgl_kernel::gelu_quick", "output input", None, "schema: gelu_quick(Tensor! out, Tensor input)")
_same("sgl_kernel::rmsnorm sgl_kernel::gemma_rmsnorm", "output input weight scalar scalar", None,
      "schema: {op}(Tensor! output, Tensor input, Tensor weight, float eps, bool enable_pdl)")
_same("sgl_kernel::fused_add_rmsnorm sgl_kernel::gemma_fused_add_rmsnorm", "inplace inplace weight scalar scalar",
      None, "schema: {op}(Tensor! input, Tensor! residual, Tensor weight, float eps, bool enable_pdl)")
_row("sgl_kernel::apply_rope_pos_ids_cos_sin_cache",
     "input input output output weight index scalar scalar scalar input cache cache index", None,
     "schema: apply_rope_pos_ids_cos_sin_cache(Tensor q, Tensor k, Tensor! q_rope, Tensor! k_rope, "
     "Tensor cos_sin_cache, Tensor pos_ids, bool interleave, bool enable_pdl, int cuda_stream, Tensor? v, "
     "Tensor!? k_buffer, Tensor!? v_buffer, Tensor? kv_cache_loc)", writes_cache=True,
     note="with k_buffer/v_buffer given, the rotated key and the value are written into the KV cache")
_row("sgl_kernel::topk_softmax", "output output input scalar scalar bias", None,
     "schema: topk_softmax(Tensor! topk_weights, Tensor! topk_indices, Tensor gating_output, bool renormalize"
     "[, float moe_softcapping, Tensor? correction_bias])")
_row("sgl_kernel::moe_align_block_size", "index scalar scalar output output output workspace scalar", None,
     "schema: moe_align_block_size(Tensor topk_ids, int num_experts, int block_size, Tensor! sorted_token_ids, "
     "Tensor! experts_ids, Tensor! num_tokens_post_pad, Tensor! cumsum_buffer, bool pad_sorted_token_ids)")
_same("sgl_kernel::fp8_scaled_mm sgl_kernel::int8_scaled_mm", "input weight scale scale scalar bias", "gemm",
      "schema: {op}(Tensor mat_a, Tensor mat_b, Tensor scales_a, Tensor scales_b, ScalarType out_dtype, "
      "Tensor? bias) -> Tensor")
_row("sglang::store_cache", "input input cache cache index scalar scalar scalar", None,
     "source: sglang jit_kernel/kvcache.py: store_cache(Tensor k, Tensor v, Tensor k_cache, Tensor v_cache, "
     "Tensor indices, *, int row_bytes=0, int num_split=0[, int size_limit=0]) (mutates k_cache, v_cache)",
     writes_cache=True, note="k/v are written into the caches at the indices' rows")
_row("sglang::unified_attention_with_output", "input input input output scalar scalar input input input", None,
     "source: sglang radix_attention: unified_attention_with_output(Tensor query, Tensor key, Tensor value, "
     "Tensor output, bool save_kv_cache, int layer_id, *, Tensor? q_rope, Tensor? k_rope, Tensor? sinks)",
     note="reads (and with save_kv_cache writes) the layer's KV cache, which is not an argument")
_row("sglang_profiler::attention_paged_attention_ragged",
     "output workspace input cache cache index index index bias scale scale scale", None,
     "source: wrapper of aiter paged_attention_ragged, tensors only: (out, workspace_buffer, query, key_cache, "
     "value_cache, kv_indptr, kv_page_indices, kv_last_page_lens, alibi_slopes?, k_scale, v_scale, "
     "fp8_out_scale?)")
_row("sglang_profiler::rmsnorm_rmsnorm2d_fwd", "input weight", "like:0",
     "source: wrapper of aiter rmsnorm2d_fwd(input, weight, epsilon, ...), tensors only: (input, weight)")
_row("sglang_profiler::rmsnorm_rmsnorm2d_fwd_with_add", "output input input output weight", None,
     "source: wrapper of aiter rmsnorm2d_fwd_with_add, tensors only: (out, input, residual_in, residual_out, "
     "weight)")
_row("sglang_profiler::memory_pool__set_kv_buffer_impl", "input input cache cache index", None,
     "source: wrapper of sglang mem_cache/memory_pool.py _set_kv_buffer_impl, tensors only: (k, v, k_cache, "
     "v_cache, indices)", writes_cache=True, note="k/v are written into the caches at the indices' rows")

# ---------------------------------------------------------------------------------------------
# triton_kernels (OpenAI's, used by vLLM's gpt-oss MoE on ROCm): torch.autograd.Function
# classes, recorded under their class name
# ---------------------------------------------------------------------------------------------
_row("TopK", "input scalar scalar scalar scalar index scalar", "unknown",
     "source: triton_kernels topk.py: TopK.forward(ctx, x, k, apply_softmax, dim, return_bitmatrix, y_indx, "
     "n_rows)", note="writes the top-k values, indices and a bitmatrix; k is a scalar the trace does not record")
_row("TopK", "input scalar scalar scalar index scalar", "unknown",
     "source: triton_kernels topk.py: TopK.forward(ctx, x, k, apply_softmax, dim, y_indx, n_rows)",
     note="writes the top-k values, indices and a bitmatrix; k is a scalar the trace does not record")
_row("TopK", "input scalar scalar scalar index scalar scalar", "unknown",
     "source: triton_kernels topk.py: TopK.forward(ctx, x, k, apply_softmax, dim, y_indx, n_rows, all_gather)",
     note="writes the top-k values, indices and a bitmatrix; k is a scalar the trace does not record")
_row("SortTokens", "input index other", "unknown",
     "source: triton_kernels routing.py: SortTokens.forward(ctx, expt_scal, expt_indx, bitmatrix)",
     note="writes the gate scales, the token/expert permutation and the expert histogram")
_row("SortTokens", "input index scalar other", "unknown",
     "source: triton_kernels routing.py: SortTokens.forward(ctx, expt_scal, expt_indx, n_expts_tot, bitmatrix)",
     note="writes the gate scales, the token/expert permutation and the expert histogram")

TABLE: Mapping[str, tuple[Row, ...]] = MappingProxyType({k: tuple(v) for k, v in _TABLE.items()})
