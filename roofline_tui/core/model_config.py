"""Hugging Face ``config.json`` (any model family) -> one normalized :class:`ModelShape`.

The byte/FLOP models need a handful of numbers (hidden size, layer counts by kind, head counts,
expert counts, dtypes). Every family spells them differently; this module is the one place that
knows the spellings. Whatever had to be assumed or dropped is written into ``ModelShape.notes`` so
the artifact can say so.

The layers are described one kind at a time (:class:`LayerKind`: full, sliding with its window,
chunked with its chunk, linear attention, SSM; :class:`MLPKind`: MoE with its shared experts, or
dense), from the first field that says it: ``layer_types``; a hybrid's own fields (Nemotron-H
``hybrid_override_pattern``, Qwen3-Next ``full_attention_interval``, MiniMax ``attn_type_list``,
Jamba ``attn_layer_period``); Llama-4 ``attention_chunk_size`` with ``no_rope_layers``;
``sliding_window`` with Gemma-3's ``sliding_window_pattern``, a family's fixed alternation
(Gemma-2, gpt-oss), Qwen2's ``max_window_layers`` or Mistral's every layer. MoE layers from
``moe_layers``, ``first_k_dense_replace``/``moe_layer_freq``, ``decoder_sparse_step``/
``mlp_only_layers``, ``expert_layer_period``, ``interleave_moe_layer_step``.

Pure: no textual import, no I/O beyond :func:`load_model_config` reading one file.
"""


import re
from pathlib import Path
from typing import Any, Literal, NamedTuple

from pydantic import BaseModel, ConfigDict

from roofline_tui.core.coerce import coerce_number
from roofline_tui.core.dtypes import canonical_dtype, dtype_bytes
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.store import ReadProblem, read_json
from roofline_tui.core.textsafe import printable

__all__ = [
    "ConfigProblem",
    "LayerKind",
    "MLADims",
    "MLPKind",
    "ModelShape",
    "Quantization",
    "load_model_config",
    "normalize_config",
]

# Sanity ceilings: a config claiming more is corrupt, and loops over layers must stay cheap.
_MAX_LAYERS = 100_000
_MAX_SIZE = 1 << 40

# Keys under which multimodal wrappers keep the language model's config.
_TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config")

# layer_types vocabulary (lower-cased) -> kind.
_FULL_TYPES = frozenset({"full_attention", "attention", "full", "global", "global_attention"})
_SLIDING_TYPES = frozenset(
    {"sliding_attention", "sliding_window", "sliding", "local", "local_attention"}
)
_CHUNKED_TYPES = frozenset({"chunked_attention", "chunked", "chunked_local_attention"})
_LINEAR_TYPES = frozenset(
    {"linear_attention", "linear", "gated_deltanet", "deltanet", "gated_delta_net",
     "lightning_attention", "conv", "short_conv"}
)
_SSM_TYPES = frozenset({"mamba", "mamba2", "ssm", "recurrent"})

# The token mixer of one decoder layer (see LayerKind).
Mixer = Literal["full", "sliding", "chunked", "linear", "ssm"]
_MIXERS: tuple[Mixer, ...] = ("full", "sliding", "chunked", "linear", "ssm")
_SOFTMAX: frozenset[str] = frozenset({"full", "sliding", "chunked"})


class ConfigProblem(ValueError):
    """The config lacks, or has unusable, essential fields; ``str(exc)`` is one line."""


class MLADims(BaseModel):
    """DeepSeek-V2/V3 style multi-head latent attention dimensions."""

    model_config = ConfigDict(frozen=True)

    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None = None


class LayerKind(BaseModel):
    """One kind of token mixer the model's decoder layers have, and how many layers have it.

    ``full``: causal softmax attention over every earlier token. ``sliding``: softmax attention
    over at most ``window`` keys (the query's own included). ``chunked``: softmax attention
    inside the query's own ``chunk``-token block only (Llama-4's local layers: a query at
    position p sees the keys from ``C·floor(p/C)`` to p). ``linear``: linear attention (Gated
    DeltaNet, lightning) or a short convolution, whose state does not grow with the context.
    ``ssm``: a state-space (Mamba / Mamba-2) or recurrent layer. ``window`` / ``chunk`` is None
    when the config names the kind but not its size (said in the notes). ``source``: the config
    fields that said it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Mixer
    layers: int
    window: int | None = None
    chunk: int | None = None
    source: str = ""

    @property
    def softmax(self) -> bool:
        """Whether a softmax-attention kernel serves these layers (full, sliding, chunked)."""
        return self.kind in _SOFTMAX

    def describe(self) -> str:
        """``10 full``, ``52 sliding (W=1024)``, ``36 chunked (C=8192)``."""
        size = (f" (W={self.window})" if self.kind == "sliding" and self.window else
                f" (C={self.chunk})" if self.kind == "chunked" and self.chunk else "")
        return f"{self.layers} {self.kind}{size}"


class MLPKind(BaseModel):
    """One kind of feed-forward block the model's layers have, and how many layers have it.

    ``moe``: routed experts, ``intermediate_size`` per expert, plus ``shared_experts`` always-on
    experts of ``shared_intermediate_size`` each. ``dense``: one MLP of ``intermediate_size``
    (the dense prefix of DeepSeek-V3, Llama-4 Maverick's non-MoE layers, Nemotron-H's ``-``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["moe", "dense"]
    layers: int
    intermediate_size: int | None = None
    experts: int | None = None
    top_k: int | None = None
    shared_experts: int = 0
    shared_intermediate_size: int | None = None
    source: str = ""


class Quantization(BaseModel):
    """What a ``quantization_config`` says about the matmuls' operands (``core.precision``
    reads it to decide the compute dtype).

    ``weight_dtype``: the quantized weights' dtype. ``activation_dtype``: the dtype activations
    enter a quantized layer's matmul in: the quantized one for a w8a8-style method
    (``activation_scheme`` dynamic/static, ``input_activations``, ``w8a8`` in the method), the
    model's own dtype for a weight-only method (mxfp4, AWQ, GPTQ, bitsandbytes); None when the
    config does not say. ``block``: ``weight_block_size`` (or ``group_size``). ``source``: the
    fields that said it, in words.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str
    weight_dtype: str | None = None
    activation_dtype: str | None = None
    weight_only: bool = False
    activation_scheme: str | None = None
    fmt: str | None = None
    block: tuple[int, ...] | None = None
    source: str = ""


class ModelShape(BaseModel):
    """The model numbers the byte/FLOP models use, whatever family the config came from."""

    model_config = ConfigDict(frozen=True, protected_namespaces=(), extra="forbid")

    family: str
    model_type: str | None
    hidden_size: int
    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int | None
    num_experts: int | None
    top_k: int | None
    moe_intermediate_size: int | None
    num_shared_experts: int = 0
    shared_expert_intermediate_size: int | None = None
    num_moe_layers: int
    num_full_attention_layers: int
    num_sliding_attention_layers: int = 0
    # layers whose mixer is not softmax attention: linear attention and SSM/mamba together
    num_linear_attention_layers: int = 0
    sliding_window: int | None = None
    # chunked local attention (Llama-4 ``attention_chunk_size``) and its chunk
    num_chunked_attention_layers: int = 0
    attention_chunk_size: int | None = None
    # one description per kind of layer (token mixer; MLP), from the config's own fields
    layer_kinds: tuple[LayerKind, ...] = ()
    mlp_kinds: tuple[MLPKind, ...] = ()
    # Sparse attention: KV tokens each query attends to (DeepSeek-V3.2 ``index_topk``, or
    # selected blocks × block size); None when the config does not say.
    sparse_attention_tokens: int | None = None
    attention_kind: Literal["gqa", "mla"]
    mla: MLADims | None = None
    weight_dtype: str
    dense_weight_dtype: str | None = None
    activation_dtype: str
    kv_dtype: str
    # the quantization_config as the compute-precision rule reads it; None: none in the config
    quantization: Quantization | None = None
    vocab_size: int | None = None
    notes: tuple[str, ...] = ()

    def layers_of(self, op_class: str) -> int | None:
        """How many layers carry one instance of ``op_class`` (``None``: not per-layer / none)."""
        kind = op_class.strip().lower() if isinstance(op_class, str) else ""
        if kind == "moe":
            return self.num_moe_layers or None
        if kind in ("attn", "attention"):
            n = (self.num_full_attention_layers + self.num_sliding_attention_layers
                 + self.num_chunked_attention_layers)
            return n or None
        if kind in ("gemm", "elementwise"):
            return self.num_layers
        return None

    def attention_kinds(self) -> tuple[LayerKind, ...]:
        """The softmax-attention layer kinds (full, sliding, chunked) with at least one layer;
        from :attr:`layer_kinds`, else (a shape built by hand) from the layer counts."""
        kinds = tuple(k for k in self.layer_kinds if k.softmax and k.layers)
        if kinds or self.layer_kinds:
            return kinds
        counted = (
            LayerKind(kind="full", layers=self.num_full_attention_layers),
            LayerKind(kind="sliding", layers=self.num_sliding_attention_layers,
                      window=self.sliding_window),
            LayerKind(kind="chunked", layers=self.num_chunked_attention_layers,
                      chunk=self.attention_chunk_size),
        )
        return tuple(k for k in counted if k.layers)

    def kv_elems_per_token_per_layer(self) -> int:
        """KV-cache elements one token occupies in one attention layer.

        GQA: ``2 * num_kv_heads * head_dim`` (K and V). MLA caches one compressed latent plus the
        decoupled rope key per token: ``kv_lora_rank + qk_rope_head_dim``.
        """
        if self.attention_kind == "mla" and self.mla is not None:
            return self.mla.kv_lora_rank + self.mla.qk_rope_head_dim
        return 2 * self.num_kv_heads * self.head_dim

    def kv_bytes_per_token_per_layer(self) -> float:
        """:meth:`kv_elems_per_token_per_layer` times the bytes of ``kv_dtype``."""
        return self.kv_elems_per_token_per_layer() * dtype_bytes(self.kv_dtype)[0]


# --------------------------------------------------------------------------- value coercion


def _count(value: Any) -> tuple[int | None, str | None]:
    """A non-negative integer from a JSON value through the one coercer, or ``(None, why not)``.

    Integral finite floats (``2048.0``) are accepted; bools, strings, NaN, fractions, negative
    and implausibly large numbers (above ``_MAX_SIZE``) are not.
    """
    if value is None:
        return None, "null"
    if isinstance(value, str):
        return None, f"{printable(repr(value), limit=40)} is a str, not a number"
    c = coerce_number(value, nonneg=True, text=False, max_abs=_MAX_SIZE)
    if c.value is None:
        why = (c.problem or "not a number").replace("is too large", "is implausibly large")
        return None, printable(why, limit=80)
    if not c.value.is_integer():
        return None, f"{c.value!r} is not a whole number"
    return int(c.value), None


def _lookup(cfg: dict[str, Any], names: tuple[str, ...]) -> tuple[str | None, Any]:
    """First of ``names`` present in ``cfg`` with a non-null value."""
    for name in names:
        if cfg.get(name) is not None:
            return name, cfg[name]
    return None, None


class _Reader:
    """Reads fields from the merged config and keeps the notes about what it assumed."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.notes: list[str] = []

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def essential(self, names: tuple[str, ...], *, limit: int = _MAX_SIZE) -> int:
        key, raw = _lookup(self.cfg, names)
        if key is None:
            raise ConfigProblem(f"{names[0]} is missing")
        value, why = _count(raw)
        if value is None:
            raise ConfigProblem(f"{key} is unusable: {why}")
        if value == 0:
            raise ConfigProblem(f"{key} must be positive, got 0")
        if value > limit:
            raise ConfigProblem(f"{key} is unusable: {value} is implausibly large")
        if isinstance(raw, float):
            self.note(f"{key} given as a float ({raw!r}); read as {value}")
        return value

    def optional(
        self, names: tuple[str, ...], *, positive: bool = True, limit: int = _MAX_SIZE
    ) -> int | None:
        key, raw = _lookup(self.cfg, names)
        if key is None:
            return None
        value, why = _count(raw)
        if value is not None and value > limit:
            value, why = None, f"{value} is implausibly large"
        if value is not None and positive and value == 0:
            value, why = None, "0 is not a usable size"
        if value is None:
            self.note(f"{key} ignored: {why}")
            return None
        return value

    def int_list(self, name: str) -> list[int] | None:
        raw = self.cfg.get(name)
        if raw is None:
            return None
        if not isinstance(raw, list):
            self.note(f"{name} ignored: expected a list, got {type(raw).__name__}")
            return None
        out: list[int] = []
        for item in raw:
            value, _ = _count(item)
            if value is None:
                self.note(f"{name} ignored: contains a non-integer entry")
                return None
            out.append(value)
        return out


# --------------------------------------------------------------------------- family / merging


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def _family_from(model_type: Any, architectures: Any) -> str | None:
    if isinstance(model_type, str) and model_type.strip():
        fam = model_type.strip().lower().replace("-", "_")
        return fam.removesuffix("_text") or fam
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        arch = re.sub(
            r"(For(CausalLM|ConditionalGeneration|SequenceClassification)|LMHeadModel|Model)$",
            "",
            architectures[0].strip(),
        )
        if arch:
            return _snake(arch)
    return None


def _merge_text_config(raw: dict[str, Any], notes: list[str]) -> tuple[dict[str, Any], str | None]:
    """Merge a wrapper's language-model sub-config over the top level.

    Returns the merged dict and the sub-config's ``model_type`` (``None`` when not nested).
    """
    for key in _TEXT_CONFIG_KEYS:
        sub = raw.get(key)
        if isinstance(sub, dict) and sub:
            merged = {k: v for k, v in raw.items() if k not in _TEXT_CONFIG_KEYS}
            merged.update(sub)
            # The wrapper often carries quantization/dtype only at the top level.
            for carry in ("quantization_config", "compression_config", "torch_dtype", "dtype"):
                if merged.get(carry) is None and raw.get(carry) is not None:
                    merged[carry] = raw[carry]
            wrapper = raw.get("model_type")
            shown = f" ({wrapper})" if isinstance(wrapper, str) else ""
            notes.append(f"{key} of the multimodal wrapper{shown} merged over the top level")
            sub_type = sub.get("model_type")
            return merged, sub_type if isinstance(sub_type, str) else None
    return dict(raw), None


# --------------------------------------------------------------------------- dtypes


def _activation_dtype(r: _Reader) -> str:
    key, raw = _lookup(r.cfg, ("torch_dtype", "dtype"))
    if key is None:
        r.note("torch_dtype not given; activation dtype assumed bf16")
        return "bf16"
    canon = canonical_dtype(raw)
    if canon is None:
        r.note(f"{key} {raw!r} not recognised; activation dtype assumed bf16")
        return "bf16"
    if canon == "fp32":
        r.note(f"{key} is float32; serving engines run such checkpoints in 16-bit, assumed bf16")
        return "bf16"
    if canon not in ("bf16", "fp16"):
        r.note(f"{key} {raw!r} is not an activation dtype; activation dtype assumed bf16")
        return "bf16"
    return canon


def _bits_dtype(bits: int | None, kind: str) -> str | None:
    if bits is None:
        return None
    if kind == "float":
        return {8: "fp8", 4: "fp4", 6: "fp6", 16: "bf16"}.get(bits)
    return {8: "int8", 4: "int4", 16: "bf16"}.get(bits)


def _compressed_tensors_dtype(q: dict[str, Any]) -> str | None:
    groups = q.get("config_groups")
    if isinstance(groups, dict):
        for group in groups.values():
            weights = group.get("weights") if isinstance(group, dict) else None
            if isinstance(weights, dict):
                bits, _ = _count(weights.get("num_bits"))
                kind = str(weights.get("type") or "int").lower()
                found = _bits_dtype(bits, "float" if kind == "float" else "int")
                if found:
                    return found
    fmt = q.get("format")
    return canonical_dtype(fmt) if isinstance(fmt, str) else None


def _quark_dtype(q: dict[str, Any]) -> str | None:
    glob = q.get("global_quant_config")
    if not isinstance(glob, dict):
        return None
    weight = glob.get("weight")
    if isinstance(weight, list) and weight:
        weight = weight[0]
    if isinstance(weight, dict):
        return canonical_dtype(weight.get("dtype"))
    return None


def _quant_weight_dtype(q: dict[str, Any], r: _Reader) -> str | None:
    """Weight dtype implied by a ``quantization_config``; ``None`` when not understood."""
    method_raw = q.get("quant_method")
    method = method_raw.strip().lower() if isinstance(method_raw, str) else ""
    if method in ("fp8", "fbgemm_fp8", "ptpc_fp8", "fp8_dynamic"):
        return "fp8"
    if method == "mxfp4":
        return "fp4"
    if method in ("compressed-tensors", "compressed_tensors"):
        return _compressed_tensors_dtype(q)
    if method == "quark":
        return _quark_dtype(q)
    if method in ("awq", "gptq", "awq_marlin", "gptq_marlin", "auto-round", "autoround", "marlin"):
        bits, _ = _count(q.get("bits", q.get("w_bit")))
        if bits is None:
            r.note(f"quantization_config ({method}) gives no bits; assumed 4-bit weights")
            bits = 4
        return _bits_dtype(bits, "int")
    if method == "bitsandbytes":
        if q.get("load_in_4bit") is True:
            return "int4"
        if q.get("load_in_8bit") is True:
            return "int8"
        return None
    if method == "modelopt":
        return canonical_dtype(q.get("quant_algo"))
    # Unknown method: its own name, or a format field, may still say it (w8a8_fp8, experts_int8).
    for candidate in (method, q.get("fmt"), q.get("weight_dtype")):
        found = canonical_dtype(candidate)
        if found is not None:
            return found
    return None


_EXCLUDE_KEYS = ("modules_to_not_convert", "ignore", "ignored_layers", "exclude_modules")


def _excludes_all_attention(q: dict[str, Any]) -> bool:
    """True when the quantization skips attention projections in every layer."""
    for key in _EXCLUDE_KEYS:
        entries = q.get(key)
        if not isinstance(entries, list):
            continue
        for entry in entries:
            if not isinstance(entry, str) or "self_attn" not in entry:
                continue
            # A layer-specific exclusion (layers.3.self_attn) is not a global one.
            if not re.search(r"layers\.\d+\.", entry):
                return True
    return False


def _weight_dtypes(r: _Reader, activation: str) -> tuple[str, str]:
    """(weight dtype, dense non-expert weight dtype)."""
    key, q = _lookup(r.cfg, ("quantization_config", "compression_config"))
    if key is None:
        key_dt, raw_dt = _lookup(r.cfg, ("torch_dtype", "dtype"))
        canon = canonical_dtype(raw_dt)
        if canon in ("fp8", "fp4", "fp6", "int8", "int4"):
            r.note(f"{key_dt} {raw_dt!r} read as the weight dtype (no quantization_config)")
            return canon, canon
        return activation, activation
    if not isinstance(q, dict):
        r.note(f"{key} ignored: not an object; weights assumed {activation}")
        return activation, activation
    found = _quant_weight_dtype(q, r)
    if found is None:
        method = q.get("quant_method")
        r.note(f"{key} (quant_method {method!r}) not understood; weights assumed {activation}")
        return activation, activation
    dense = found
    if _excludes_all_attention(q) and found != activation:
        dense = activation
        r.note(
            f"{key} leaves attention projections unquantized; non-expert weights {activation}, "
            f"quantized weights {found}"
        )
    return found, dense


# methods that quantize the weights only: activations enter the matmul at the model's dtype
_WEIGHT_ONLY_METHODS = frozenset({
    "mxfp4", "awq", "gptq", "awq_marlin", "gptq_marlin", "marlin", "auto-round", "autoround",
    "bitsandbytes", "hqq", "gguf", "experts_int8", "gptq_marlin_24"})
_DYNAMIC_FP8_METHODS = frozenset({"fbgemm_fp8", "ptpc_fp8", "fp8_dynamic"})
_W_A_BITS = lazy_compile(r"w(\d+)_?a(\d+)")


def _tensor_dtype(spec: Any) -> str | None:
    """The dtype of a compressed-tensors / quark tensor spec (``num_bits`` + ``type``, or
    ``dtype``)."""
    if not isinstance(spec, dict):
        return None
    if "dtype" in spec:
        return canonical_dtype(spec.get("dtype"))
    bits, _ = _count(spec.get("num_bits"))
    return _bits_dtype(bits, "float" if str(spec.get("type") or "int").lower() == "float"
                       else "int")


def _input_spec(q: dict[str, Any], method: str) -> tuple[bool, Any]:
    """(whether the config has the field, the activations' tensor spec) of a
    compressed-tensors or quark config; a present but null spec means weight-only."""
    if method == "quark":
        glob = q.get("global_quant_config")
        if isinstance(glob, dict) and "input_tensors" in glob:
            return True, glob.get("input_tensors")
        return False, None
    groups = q.get("config_groups")
    if isinstance(groups, dict):
        for group in groups.values():
            if isinstance(group, dict) and "input_activations" in group:
                return True, group.get("input_activations")
    return False, None


def _activation_quant(q: dict[str, Any], method: str, activation: str) -> tuple[str | None, str]:
    """(the dtype activations enter a quantized matmul in, why); None: the config is silent."""
    scheme = q.get("activation_scheme")
    if method in _DYNAMIC_FP8_METHODS:
        return "fp8", f"{method} quantizes activations to fp8 per token"
    if method == "fp8":
        if isinstance(scheme, str) and scheme.lower() in ("dynamic", "static"):
            return "fp8", "activations quantized to fp8 (w8a8)"
        return None, "no activation_scheme"
    if method in _WEIGHT_ONLY_METHODS:
        return activation, f"{method} quantizes weights only"
    if method in ("compressed-tensors", "compressed_tensors", "quark"):
        has, spec = _input_spec(q, method)
        if has and spec is None:
            return activation, "no input activation quantization (weights only)"
        found = _tensor_dtype(spec)
        return (found, "input activations quantized to " + found) if found else (None, "")
    text = method
    if method == "modelopt":
        algo = q.get("quant_algo")
        text = algo.strip().lower() if isinstance(algo, str) else ""
        if text in ("fp8", "nvfp4", "mxfp8"):
            return canonical_dtype(text), f"quant_algo {algo}: weights and activations"
    if m := _W_A_BITS.search(text):
        bits = int(m.group(2))
        if bits >= 16:
            return activation, f"{text}: {bits}-bit activations (weights only)"
        kind = "float" if "fp" in text or "float" in text else "int"
        found = _bits_dtype(bits, kind)
        return (found, f"{text}: {bits}-bit activations") if found else (None, "")
    return None, ""


def _quantization(cfg: dict[str, Any], weight: str, activation: str) -> Quantization | None:
    """The config's ``quantization_config`` as a :class:`Quantization` record, or None."""
    key, q = _lookup(cfg, ("quantization_config", "compression_config"))
    if key is None or not isinstance(q, dict):
        return None
    raw = q.get("quant_method")
    method = raw.strip().lower() if isinstance(raw, str) else ""
    act, why = _activation_quant(q, method, activation)
    scheme = q.get("activation_scheme") if isinstance(q.get("activation_scheme"), str) else None
    fmt = q.get("fmt") if isinstance(q.get("fmt"), str) else None
    block_raw = q.get("weight_block_size", q.get("group_size"))
    block: tuple[int, ...] | None = None
    if isinstance(block_raw, list) and block_raw and all(isinstance(b, int) for b in block_raw):
        block = tuple(block_raw)
    elif isinstance(block_raw, int) and block_raw > 0:
        block = (block_raw,)
    said = [f"quant_method {printable(method or raw, limit=40)}"]
    said += [f"fmt {printable(fmt, limit=20)}"] if fmt else []
    said += [f"activation_scheme {printable(scheme, limit=20)}"] if scheme else []
    said += [f"weight_block_size {list(block)}"] if block and "weight_block_size" in q else []
    source = f"{key} ({', '.join(said)}{'; ' + why if why else ''})"
    quantized = weight if weight != activation else None
    return Quantization(method=method, weight_dtype=quantized, activation_dtype=act,
                        weight_only=act == activation and quantized is not None,
                        activation_scheme=scheme, fmt=fmt, block=block, source=source)


def _kv_dtype(kv_cache_dtype: str | None, activation: str, r: _Reader) -> str:
    if kv_cache_dtype is None or (
        isinstance(kv_cache_dtype, str) and kv_cache_dtype.strip().lower() in ("", "auto")
    ):
        r.note(f"kv dtype = {activation} (kv_cache_dtype auto)")
        return activation
    canon = canonical_dtype(kv_cache_dtype)
    if canon is None:
        r.note(f"kv_cache_dtype {kv_cache_dtype!r} not recognised; kv dtype assumed {activation}")
        return activation
    return canon


# --------------------------------------------------------------------------- layer layout


class _Layout(NamedTuple):
    """Each layer's token mixer (``None``: a layer with none, e.g. Nemotron-H's MLP-only
    ``-``), the config fields that said it, and the sliding window / chunk sizes."""

    mixers: list[Mixer | None]
    source: str
    window: int | None = None
    chunk: int | None = None


def _from_layer_types(r: _Reader, types: list[str], n_layers: int) -> _Layout:
    """``layer_types`` (Qwen3-Next/3.5, gpt-oss, Gemma-3/3n, Llama-4...): one name per layer."""
    vocab: tuple[tuple[frozenset[str], Mixer], ...] = (
        (_FULL_TYPES, "full"), (_SLIDING_TYPES, "sliding"), (_CHUNKED_TYPES, "chunked"),
        (_LINEAR_TYPES, "linear"), (_SSM_TYPES, "ssm"))
    mixers: list[Mixer | None] = []
    unknown: set[str] = set()
    for t in types[:n_layers]:
        kind = t.strip().lower()
        found = next((m for names, m in vocab if kind in names), None)
        if found is None:
            unknown.add(t)
        mixers.append(found)
    if len(types) != n_layers:
        r.note(f"layer_types has {len(types)} entries for {n_layers} layers")
    if unknown:
        r.note(f"layer_types entries not counted: {', '.join(sorted(unknown))}")
    window = r.optional(("sliding_window",)) if "sliding" in mixers else None
    chunk = r.optional(("attention_chunk_size",)) if "chunked" in mixers else None
    if "sliding" in mixers and window is None:
        r.note("layer_types lists sliding layers but no usable sliding_window: their window "
               "is unknown")
    if "chunked" in mixers and chunk is None:
        r.note("layer_types lists chunked layers but no usable attention_chunk_size: their "
               "chunk is unknown")
    return _Layout(mixers, "layer_types", window, chunk)


def _from_hybrid_fields(r: _Reader, n_layers: int) -> _Layout | None:
    """The hybrid models' own layer fields: Nemotron-H's pattern, Qwen3-Next's interval,
    MiniMax's ``attn_type_list``, Jamba's period; None when the config has none of them."""
    cfg = r.cfg
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        # Nemotron-H: one character per layer; '*' attention, 'M' mamba-2, '-' MLP, 'E' MoE.
        table: dict[str, Mixer] = {"*": "full", "M": "ssm"}
        return _Layout([table.get(c) for c in pattern[:n_layers]], "hybrid_override_pattern")
    interval = r.optional(("full_attention_interval",))
    if interval is not None:
        # Qwen3-Next: layer i is full attention when (i + 1) % interval == 0.
        mixers: list[Mixer | None] = [
            "full" if (i + 1) % interval == 0 else "linear" for i in range(n_layers)]
        r.note(f"full_attention_interval {interval}: {mixers.count('full')} of {n_layers} layers "
               f"use full attention, the rest linear attention")
        return _Layout(mixers, f"full_attention_interval {interval}")
    attn_types = cfg.get("attn_type_list")
    if isinstance(attn_types, list) and attn_types:
        # MiniMax-01: 1 = softmax attention, 0 = lightning (linear) attention.
        vals = [_count(v)[0] for v in attn_types[:n_layers]]
        if all(v in (0, 1) for v in vals):
            return _Layout(["full" if v == 1 else "linear" for v in vals], "attn_type_list")
        r.note("attn_type_list ignored: entries must be 0 or 1")
    period = r.optional(("attn_layer_period",))
    if period is not None:
        # Jamba: attention where i % period == offset, mamba elsewhere.
        offset = r.optional(("attn_layer_offset",), positive=False) or 0
        return _Layout(["full" if i % period == offset else "ssm" for i in range(n_layers)],
                       f"attn_layer_period {period}, attn_layer_offset {offset}")
    return None


def _from_chunk_size(r: _Reader, n_layers: int) -> _Layout | None:
    """Llama-4: chunked local attention of ``attention_chunk_size`` on the layers that use rope;
    ``no_rope_layers[i] == 0`` marks a NoPE layer, which attends globally. An empty or absent
    list means rope on all but every ``no_rope_layer_interval``-th layer (default 4)."""
    chunk = r.optional(("attention_chunk_size",))
    if chunk is None:
        return None
    flags = r.int_list("no_rope_layers")
    if flags and len(flags) >= n_layers and all(f in (0, 1) for f in flags[:n_layers]):
        mixers: list[Mixer | None] = ["chunked" if f else "full" for f in flags[:n_layers]]
        src = f"attention_chunk_size {chunk}, no_rope_layers (0 = a global NoPE layer)"
    else:
        if flags:
            r.note("no_rope_layers ignored: expected one 0/1 entry per layer")
        interval = r.optional(("no_rope_layer_interval",)) or 4
        mixers = ["chunked" if (i + 1) % interval else "full" for i in range(n_layers)]
        src = (f"attention_chunk_size {chunk}, every {interval}th layer a global NoPE layer "
               "(no_rope_layer_interval)")
    r.note(f"chunked local attention ({src}): {mixers.count('chunked')} of {n_layers} layers "
           f"attend within their {chunk}-token chunk, {mixers.count('full')} globally")
    return _Layout(mixers, src, chunk=chunk)


# Families whose sliding-window layers follow a fixed rule when the config lists no layer types:
# the pattern P (layer i slides unless (i + 1) % P == 0) their transformers code defaults to.
_DEFAULT_PATTERN = {"gemma2": 2, "gpt_oss": 2, "gemma3": 6}


def _from_sliding_window(r: _Reader, n_layers: int, family: str) -> _Layout | None:
    """``sliding_window`` and the rule that says which layers use it: Gemma-3's
    ``sliding_window_pattern`` (5 local : 1 global), Gemma-2 / gpt-oss alternating, Qwen2's
    ``max_window_layers``, Mistral's every layer. None: every layer is full attention."""
    cfg = r.cfg
    window = r.optional(("sliding_window",))
    if window is None:
        return None
    key, _ = _lookup(cfg, ("sliding_window_pattern", "_sliding_window_pattern"))
    pattern = r.optional((key,)) if key is not None else None
    src = f"sliding_window {window}, {key} {pattern}"
    if pattern is None and family in _DEFAULT_PATTERN and cfg.get("use_sliding_window") is not False:
        pattern = _DEFAULT_PATTERN[family]
        src = f"sliding_window {window}, {family}'s fixed pattern (every {pattern}th layer global)"
    if pattern is not None:
        mixers: list[Mixer | None] = [
            "sliding" if (i + 1) % pattern else "full" for i in range(n_layers)]
        r.note(f"{src}: {mixers.count('sliding')} of {n_layers} layers slide over a "
               f"{window}-token window, {mixers.count('full')} attend globally")
        return _Layout(mixers, src, window=window)
    use = cfg.get("use_sliding_window")
    if use is True:
        # Qwen2 convention: layers from max_window_layers on use the window.
        first = r.optional(("max_window_layers",), positive=False)
        first = n_layers if first is None else min(first, n_layers)
        qwen: list[Mixer | None] = ["full"] * first
        qwen += ["sliding"] * (n_layers - first)
        return _Layout(qwen, f"sliding_window {window}, use_sliding_window, "
                             f"max_window_layers {first}", window=window)
    if use is None and family in ("mistral", "mixtral"):
        r.note(f"sliding_window {window} applies to every layer ({family})")
        return _Layout(["sliding"] * n_layers, f"sliding_window {window} ({family})",
                       window=window)
    return None


def _attention_layout(r: _Reader, n_layers: int, family: str) -> _Layout:
    """Each layer's token mixer, from the first config field that says it."""
    types = r.cfg.get("layer_types")
    if types is not None:
        if isinstance(types, list) and types and all(isinstance(t, str) for t in types):
            return _from_layer_types(r, types, n_layers)
        r.note("layer_types ignored: expected a non-empty list of strings")
    for found in (_from_hybrid_fields(r, n_layers), _from_chunk_size(r, n_layers),
                  _from_sliding_window(r, n_layers, family)):
        if found is not None:
            return found
    return _Layout(["full"] * n_layers, "every layer full attention (no layer pattern in the "
                   "config)")


def _layer_kinds(layout: _Layout) -> tuple[LayerKind, ...]:
    """One :class:`LayerKind` per mixer the layout has, in a fixed order."""
    out: list[LayerKind] = []
    for kind in _MIXERS:
        n = layout.mixers.count(kind)
        if n:
            out.append(LayerKind(kind=kind, layers=n,
                                 window=layout.window if kind == "sliding" else None,
                                 chunk=layout.chunk if kind == "chunked" else None,
                                 source=layout.source))
    return tuple(out)


def _moe_layer_count(r: _Reader, n_layers: int) -> tuple[int, str]:
    """MoE layers and the config field(s) that said which layers are MoE."""
    cfg = r.cfg
    pattern = cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and "E" in pattern:
        return pattern[:n_layers].count("E"), "hybrid_override_pattern 'E'"

    explicit = r.int_list("moe_layers")
    if explicit is not None:
        return len({i for i in explicit if i < n_layers}), "moe_layers"

    if "first_k_dense_replace" in cfg or "moe_layer_freq" in cfg:
        # DeepSeek / GLM-4 MoE: dense for the first k layers, then MoE every `freq` layers.
        first_k = r.optional(("first_k_dense_replace",), positive=False) or 0
        freq = r.optional(("moe_layer_freq",)) or 1
        count = sum(1 for i in range(first_k, n_layers) if i % freq == 0)
        if first_k:
            r.note(f"first_k_dense_replace {first_k}: {count} of {n_layers} layers are MoE")
        return count, f"first_k_dense_replace {first_k}, moe_layer_freq {freq}"

    if "decoder_sparse_step" in cfg or "mlp_only_layers" in cfg:
        # Qwen2/3-MoE: MoE where (i + 1) % step == 0 and i is not listed in mlp_only_layers.
        step = r.optional(("decoder_sparse_step",)) or 1
        dense = set(r.int_list("mlp_only_layers") or [])
        count = sum(1 for i in range(n_layers) if i not in dense and (i + 1) % step == 0)
        return count, f"decoder_sparse_step {step}, mlp_only_layers ({len(dense)} listed)"

    period = r.optional(("expert_layer_period",))
    if period is not None:
        offset = r.optional(("expert_layer_offset",), positive=False) or 0
        count = sum(1 for i in range(n_layers) if i % period == offset)
        return count, f"expert_layer_period {period}, expert_layer_offset {offset}"

    interleave = r.optional(("interleave_moe_layer_step",))
    if interleave is not None:
        # Llama-4: MoE on layers step-1, 2·step-1, ...; the others are dense MLPs.
        count = len(range(interleave - 1, n_layers, interleave))
        if interleave > 1:
            r.note(f"interleave_moe_layer_step {interleave}: {count} of {n_layers} layers are MoE")
        return count, f"interleave_moe_layer_step {interleave}"

    return n_layers, "every layer (no MoE layer pattern in the config)"


def _top_k(r: _Reader) -> int | None:
    key, raw = _lookup(r.cfg, ("num_experts_per_tok", "experts_per_token", "moe_topk", "moe_k"))
    if key is None:
        return None
    if isinstance(raw, list):
        vals = [_count(v)[0] for v in raw]
        if vals and all(v for v in vals):
            top = max(v for v in vals if v)
            if len(set(vals)) > 1:
                r.note(f"{key} varies by layer; used the largest, {top}")
            return top
        r.note(f"{key} ignored: list with unusable entries")
        return None
    return r.optional((key,))


def _num_experts(r: _Reader) -> int | None:
    key, raw = _lookup(
        r.cfg, ("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts")
    )
    if key is None:
        return None
    if isinstance(raw, list):
        vals = [_count(v)[0] for v in raw]
        if vals and all(v for v in vals) and len(set(vals)) == 1:
            return vals[0]
        r.note(f"{key} ignored: per-layer list that is not uniform")
        return None
    value = r.optional((key,), positive=False)
    return value or None


def _mla_dims(r: _Reader) -> MLADims | None:
    if r.cfg.get("kv_lora_rank") is None:
        return None
    kv = r.optional(("kv_lora_rank",))
    rope = r.optional(("qk_rope_head_dim",))
    nope = r.optional(("qk_nope_head_dim",))
    v = r.optional(("v_head_dim",))
    if kv is None or rope is None or nope is None or v is None:
        r.note("kv_lora_rank given without usable qk_rope/qk_nope/v head dims; treated as GQA")
        return None
    return MLADims(
        kv_lora_rank=kv,
        qk_rope_head_dim=rope,
        qk_nope_head_dim=nope,
        v_head_dim=v,
        q_lora_rank=r.optional(("q_lora_rank",)),
    )


def _sparse_attention_tokens(r: _Reader) -> int | None:
    """Selected KV tokens per query of a sparse-attention model, when the config says."""
    tokens = r.optional(("index_topk", "sparse_topk_tokens"))
    if tokens is not None:
        return tokens
    blocks = r.optional(("sparse_topk_blocks", "topk_blocks", "sparse_block_topk"))
    size = r.optional(("sparse_block_size",))
    if blocks is not None and size is not None:
        r.note(f"sparse attention: {blocks} selected blocks × block size {size} = "
               f"{blocks * size} tokens per query")
        return blocks * size
    return None


# --------------------------------------------------------------------------- public API


def normalize_config(raw: dict[str, Any], *, kv_cache_dtype: str | None = None) -> ModelShape:
    """Normalize a parsed ``config.json`` into a :class:`ModelShape`.

    Raises :class:`ConfigProblem` when hidden size, layer count or head count is missing or
    unusable. Every other odd value is dropped with a note.
    """
    if not isinstance(raw, dict):
        raise ConfigProblem(f"config must be a JSON object, got {type(raw).__name__}")
    notes: list[str] = []
    cfg, sub_type = _merge_text_config(raw, notes)
    r = _Reader(cfg)
    r.notes.extend(notes)

    top_type = raw.get("model_type")
    model_type = top_type if isinstance(top_type, str) else sub_type
    family = _family_from(sub_type or top_type, cfg.get("architectures"))
    if family is None:
        family = "unknown"
        r.note("model_type and architectures missing; family unknown")

    hidden = r.essential(("hidden_size", "n_embd", "d_model"))
    n_layers = r.essential(("num_hidden_layers", "n_layer", "num_layers"), limit=_MAX_LAYERS)
    heads = r.essential(("num_attention_heads", "n_head", "num_heads"))
    kv_heads = _kv_head_count(r, heads)
    mla = _mla_dims(r)
    head_dim = _head_dim(r, mla, hidden, heads)
    num_experts, top_k = _expert_counts(r)
    sizes = _mlp_sizes(r, num_experts, n_layers, family)
    intermediate, moe_inter, num_shared, shared_inter, num_moe_layers, _ = sizes
    mlp_kinds = _mlp_kinds(r, n_layers, sizes, num_experts, top_k)

    layout = _attention_layout(r, n_layers, family)
    kinds = _layer_kinds(layout)
    counts = {k.kind: k.layers for k in kinds}

    sparse_tokens = _sparse_attention_tokens(r)

    activation = _activation_dtype(r)
    weight, dense_weight = _weight_dtypes(r, activation)
    quantization = _quantization(r.cfg, weight, activation)
    kv = _kv_dtype(kv_cache_dtype, activation, r)

    return ModelShape(
        family=family,
        model_type=model_type,
        hidden_size=hidden,
        num_layers=n_layers,
        num_attention_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate_size=intermediate,
        num_experts=num_experts,
        top_k=top_k,
        moe_intermediate_size=moe_inter,
        num_shared_experts=num_shared,
        shared_expert_intermediate_size=shared_inter,
        num_moe_layers=num_moe_layers,
        num_full_attention_layers=counts.get("full", 0),
        num_sliding_attention_layers=counts.get("sliding", 0),
        num_linear_attention_layers=counts.get("linear", 0) + counts.get("ssm", 0),
        sliding_window=layout.window if counts.get("sliding") else None,
        num_chunked_attention_layers=counts.get("chunked", 0),
        attention_chunk_size=layout.chunk if counts.get("chunked") else None,
        layer_kinds=kinds,
        mlp_kinds=mlp_kinds,
        sparse_attention_tokens=sparse_tokens,
        attention_kind="mla" if mla is not None else "gqa",
        mla=mla,
        weight_dtype=weight,
        dense_weight_dtype=dense_weight,
        activation_dtype=activation,
        kv_dtype=kv,
        quantization=quantization,
        vocab_size=r.optional(("vocab_size", "padded_vocab_size")),
        notes=tuple(r.notes),
    )


def _kv_head_count(r: _Reader, heads: int) -> int:
    """KV heads, defaulting to (and capped at) the attention head count."""
    kv_heads = r.optional(
        ("num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num")
    )
    if kv_heads is None:
        r.note(f"num_key_value_heads not given; assumed = num_attention_heads ({heads})")
        return heads
    if kv_heads > heads:
        r.note(f"num_key_value_heads {kv_heads} > num_attention_heads {heads}; capped at {heads}")
        return heads
    if heads % kv_heads:
        r.note(f"num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}")
    return kv_heads


def _head_dim(r: _Reader, mla: MLADims | None, hidden: int, heads: int) -> int:
    """Per-head dimension: MLA's nope + rope dims, else ``head_dim``, else hidden / heads."""
    if mla is not None:
        head_dim = mla.qk_nope_head_dim + mla.qk_rope_head_dim
        r.note(
            f"MLA: head_dim = qk_nope_head_dim + qk_rope_head_dim = {head_dim}; KV cache holds "
            f"kv_lora_rank + qk_rope_head_dim = {mla.kv_lora_rank + mla.qk_rope_head_dim} "
            f"elements per token per layer"
        )
        return head_dim
    explicit = r.optional(("head_dim",))
    if explicit is not None:
        return explicit
    head_dim = max(hidden // heads, 1)
    remainder = " (not exact)" if hidden % heads else ""
    r.note(f"head_dim not given; hidden_size/num_attention_heads = {head_dim}{remainder}")
    return head_dim


def _expert_counts(r: _Reader) -> tuple[int | None, int | None]:
    """(experts, experts per token); a top-k above the expert count is dropped."""
    num_experts = _num_experts(r)
    top_k = _top_k(r) if num_experts else None
    if top_k is not None and num_experts is not None and top_k > num_experts:
        r.note(f"experts per token {top_k} > experts {num_experts}; ignored")
        top_k = None
    if num_experts and top_k is None:
        r.note("experts per token not given")
    return num_experts, top_k


class _MLPSizes(NamedTuple):
    intermediate: int | None       # the dense MLP's
    moe_inter: int | None          # one routed expert's
    num_shared: int
    shared_inter: int | None
    num_moe_layers: int
    moe_source: str = ""           # the config field(s) that said which layers are MoE


def _mlp_sizes(r: _Reader, num_experts: int | None, n_layers: int, family: str) -> _MLPSizes:
    """The MLP widths, shared experts and MoE layers (see :class:`_MLPSizes`)."""
    intermediate = r.optional(("intermediate_size", "ffn_hidden_size", "n_inner"))
    dense_mlp = r.optional(("intermediate_size_mlp",))
    moe_inter: int | None = None
    num_shared = 0
    shared_inter: int | None = None
    num_moe_layers = 0
    if num_experts:
        moe_inter = r.optional(("moe_intermediate_size", "expert_intermediate_size"))
        if moe_inter is None and intermediate is not None:
            moe_inter = intermediate
            r.note(
                f"no moe_intermediate_size; intermediate_size {intermediate} is per-expert "
                f"({family})"
            )
            intermediate = dense_mlp
        elif moe_inter is None:
            r.note("per-expert intermediate size not given")
        num_moe_layers, moe_source = _moe_layer_count(r, n_layers)
        n_shared = r.optional(("n_shared_experts", "num_shared_experts"), positive=False)
        qwen_shared = r.optional(("shared_expert_intermediate_size",), positive=False)
        if n_shared:
            num_shared = n_shared
            shared_inter = qwen_shared or moe_inter
        elif qwen_shared:
            num_shared = 1
            shared_inter = qwen_shared
        elif family == "llama4" and "n_shared_experts" not in r.cfg:
            # Llama-4's MoE block always adds one shared expert as wide as a routed one; the
            # config has no field for it.
            num_shared, shared_inter = 1, moe_inter
            r.note("llama4: one shared expert per MoE layer (of the routed experts' width)")
    elif dense_mlp is not None:
        intermediate = dense_mlp
    if intermediate is None and not num_experts:
        r.note("intermediate_size not given")
    return _MLPSizes(intermediate, moe_inter, num_shared, shared_inter, num_moe_layers,
                     moe_source if num_experts else "")


def _mlp_kinds(r: _Reader, n_layers: int, sizes: _MLPSizes, num_experts: int | None,
               top_k: int | None) -> tuple[MLPKind, ...]:
    """One :class:`MLPKind` per feed-forward kind: the MoE layers and the dense ones. In a
    Nemotron-H pattern only its ``-`` layers carry a dense MLP (``*`` and ``M`` have none)."""
    pattern = r.cfg.get("hybrid_override_pattern")
    if isinstance(pattern, str) and pattern:
        dense, dense_src = pattern[:n_layers].count("-"), "hybrid_override_pattern '-'"
    else:
        dense = n_layers - sizes.num_moe_layers
        dense_src = (f"the layers that are not MoE ({sizes.moe_source})" if num_experts
                     else "every layer")
    out: list[MLPKind] = []
    if sizes.num_moe_layers:
        out.append(MLPKind(kind="moe", layers=sizes.num_moe_layers,
                           intermediate_size=sizes.moe_inter, experts=num_experts, top_k=top_k,
                           shared_experts=sizes.num_shared,
                           shared_intermediate_size=sizes.shared_inter,
                           source=sizes.moe_source))
    if dense > 0:
        out.append(MLPKind(kind="dense", layers=dense, intermediate_size=sizes.intermediate,
                           source=dense_src))
    return tuple(out)


def load_model_config(
    path: Any, *, kv_cache_dtype: str | None = None
) -> tuple[ModelShape | None, list[str]]:
    """Read and normalize a ``config.json`` (or a model directory holding one). Never raises.

    Returns ``(shape, [])`` on success and ``(None, [one-line reasons])`` on any problem.
    """
    try:
        p = Path(path)
        if p.is_dir():
            p = p / "config.json"
    except (TypeError, ValueError, OSError) as exc:
        return None, [f"model config path {path!r} unusable: {exc}"]
    name = p.name or str(p)
    try:
        raw = read_json(p)
    except ReadProblem as exc:
        return None, [str(exc)]
    except Exception as exc:  # noqa: BLE001 - a loader must never take the run down
        return None, [f"{name}: cannot read ({type(exc).__name__})"]
    if not isinstance(raw, dict):
        return None, [f"{name}: expected a JSON object, got {type(raw).__name__}"]
    try:
        return normalize_config(raw, kv_cache_dtype=kv_cache_dtype), []
    except ConfigProblem as exc:
        return None, [f"{name}: {exc}"]
    except Exception as exc:  # noqa: BLE001
        return None, [f"{name}: cannot normalize ({type(exc).__name__}: {exc})"]
