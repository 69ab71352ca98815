"""The matrix-core dtype a kernel computes in (spec §4): one rule for the GEMM, MoE and
attention models.

A compute-bound kernel is judged on the roof of the dtype its MMA runs in. That is neither the
narrowest operand (a bf16 × mxfp4 kernel dequantises its weight and runs bf16 MMAs) nor the
first dtype the profiler lists (the upstream Top-N's ``dtypes`` is a sorted set). The operand
pair is taken from the first of these that settles it:

1. the dtypes the trace recorded for each operand by role (A the activation, B the weight);
2. the kernel name's own statement of its operands: triton_kernels' ``<out>x<act>x<weight>``
   (``_matmul_ogs_NNT_bf16xbf16xmxfp4``), trtllm-gen's ``bmm_<out>_<weight><act>_<acc>``
   (``bmm_MxE4m3_MxE2m1MxE4m3_Fp32``), a width pair (``a16w4``, ``w8a8``, ``a16wfp4``);
3. the quantized element types the name carries (``e4m3``, ``float_e4m3_t``,
   ``Float8_e4m3fn``, ``fp8_blockscale``, ``nvfp4``, ``e2m1``...): both operands, or the weight
   alone when the quantization config says the method is weight-only;
4. the recorded dtypes read as a set — never by position: ``{bf16, fp8}`` fits fp8 operands
   with a bf16 output and bf16 activations × fp8 weights alike, so it settles nothing alone;
   fp32 beside a narrower dtype is a scale, bias or output, never a matrix operand;
5. the model's ``quantization_config`` (``activation_scheme`` dynamic/static, w8a8: both
   quantized; mxfp4, AWQ, GPTQ: weights only) with the layer's weight dtype;
6. the wide types the name carries (``ampere_bf16_s16816gemm``), then the model's own dtypes.

Evidence that disagrees with the recorded set is passed over. Then: equal operands run in
their dtype; a mixed pair runs at the rate of the WIDER operand (a weight-only kernel
dequantises its weight into the activation's dtype; fp8 activations × fp4 weights run on the
fp8 cores). Last, the device: a dtype it has no matrix cores for (fp4 on MI300X, fp8 on A100)
is dequantised into one it has, the wider operand's, else the model's activation dtype, and is
never judged on a faster roof. Where nothing settles it, :attr:`Precision.compute` is None and
:attr:`Precision.evidence` says what would.
"""

import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from roofline_tui.core.dtypes import DTYPE_BYTES
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.model_config import Quantization

__all__ = ["STORAGE", "Device", "Precision", "Stated", "decide", "name_statement"]

# What a recorded tensor of a (sub-byte or integer) operand dtype is stored as: packed fp4 is
# two values per uint8 (or Float4_e2m1fn_x2), AWQ packs int4 eight to an int32.
STORAGE: dict[str, frozenset[str]] = {
    "fp4": frozenset({"fp4", "uint8", "int8"}),
    "fp6": frozenset({"fp6", "uint8"}),
    "int4": frozenset({"int4", "uint8", "int8", "int32"}),
    "int8": frozenset({"int8", "uint8"}),
    "uint8": frozenset({"int8", "uint8"}),
}
_INDEX_TYPES = frozenset({"int32", "int64", "bool"})
_QUANTIZED = frozenset({"fp8", "fp6", "fp4", "int8", "uint8", "int4"})


class Device(NamedTuple):
    """The dtypes one device has a matrix-core roof for (the keys of its peak table)."""

    name: str
    dtypes: frozenset[str]

    def runs(self, dtype: str) -> bool:
        return _mma(dtype) in self.dtypes


class Stated(NamedTuple):
    """The operand dtypes a kernel name states (None: unsaid) and how, in words."""

    a: str | None
    b: str | None
    out: str | None
    how: str


class Precision(NamedTuple):
    """The decided compute dtype (None: nothing settles it), the operands' dtypes, the output
    dtype a name or the recorded set states, the recorded dtypes the operands do not account
    for (outputs, scales), and the evidence in one line for ``assumptions``."""

    compute: str | None
    a: str | None
    b: str | None
    out: str | None
    rest: tuple[str, ...]
    evidence: str


def _mma(dtype: str) -> str:
    return "int8" if dtype == "uint8" else dtype


def _size(dtype: str) -> float:
    return DTYPE_BYTES.get(dtype, 2.0)


# ------------------------------------------------------------------------ kernel names

# triton_kernels' matmul_ogs: <out>x<activation>x<weight> (a u8 weight prints as "mxfp4")
_TRITON_T = r"(?:bf16|fp16|fp32|fp8e4nv|fp8e4b8|fp8e4b15|fp8e5b16|fp8e5|mxfp4|mxfp8|u8|i8)"
_TRITON = lazy_compile(rf"(?:^|[_\s])({_TRITON_T})x({_TRITON_T})x({_TRITON_T})(?=_|\s|$)", re.I)
# trtllm-gen: bmm_<out>_<A><B>_<accumulator>, one operand token when A and B agree; its MoE
# kernels put the expert weight first (bmm_Bfloat16_MxE2m1MxE4m3_Fp32: mxfp4 × mxfp8)
_TG_T = r"(?:(?:Mx)?(?:E[2-5]m[1-3]|Int4|Int8)|Bfloat16|Fp16|Fp32)"
_TRTLLM = lazy_compile(
    rf"(?:^|[^A-Za-z0-9])(?:bmm|Gemm[A-Za-z]*Kernel)_({_TG_T})_({_TG_T})({_TG_T})?_(?:Fp32|Fp16)"
    r"(?=_|\s|$)")
_TG_DTYPE = (("e4m3", "fp8"), ("e5m2", "fp8"), ("e2m1", "fp4"), ("e2m3", "fp6"), ("e3m2", "fp6"),
             ("int4", "int4"), ("int8", "int8"), ("bfloat16", "bf16"), ("fp16", "fp16"),
             ("fp32", "fp32"))
# a16w4, w8a8, a16wfp4, w4a16: operand widths (the element type from elsewhere)
_WIDTHS = lazy_compile(r"(?<![a-z0-9])(?:a(4|8|16)_?w(4|8|16|fp4|fp8|int4|int8|mxfp4)"
                       r"|w(4|8|16)_?a(4|8|16))(?![0-9])", re.I)
# quantized element types a name carries (ue4m3 / ue8m0 are scale types, not operands)
_QUANT_TOKENS = (
    (lazy_compile(r"fp4|float4|(?<!u)e2m1", re.I), "fp4"),
    (lazy_compile(r"fp6|float6|(?<!u)e2m3|(?<!u)e3m2", re.I), "fp6"),
    (lazy_compile(r"fp8|float8|(?<!u)e4m3|(?<!u)e5m2", re.I), "fp8"),
    (lazy_compile(r"int8", re.I), "int8"),
    (lazy_compile(r"int4|u4b8", re.I), "int4"),
)
_WIDE_TOKENS = (
    (lazy_compile(r"bf16|bfloat16", re.I), "bf16"),
    (lazy_compile(r"(?<!b)fp16|(?<!b)float16|(?<![a-z])half", re.I), "fp16"),
)


def _tg(token: str) -> str:
    low = token.lower().removeprefix("mx")
    return next(d for t, d in _TG_DTYPE if low == t)


def _triton(token: str) -> str:
    low = token.lower()
    if low in ("mxfp4", "u8"):
        return "fp4"
    if low.startswith("fp8") or low == "mxfp8":
        return "fp8"
    return {"i8": "int8"}.get(low, low)


def _named_types(text: str) -> tuple[list[str], list[str]]:
    """(quantized, wide) element types the text names, each once, in table order."""
    quant = [d for p, d in _QUANT_TOKENS if p.search(text)]
    wide = [d for p, d in _WIDE_TOKENS if p.search(text)]
    return quant, wide


def _width(bits: str, named: list[str], quant: Quantization | None,
           model_a: str | None) -> str | None:
    """The dtype of one ``a16``/``w4``-style width, from the element types named beside it,
    the quantization config, or (16 bits) the model's activation dtype."""
    low = bits.lower()
    if not low.isdigit():
        return _triton(low) if low != "int4" else "int4"
    n = int(low)
    if n == 16:
        return model_a if model_a in ("bf16", "fp16") else None
    same = [d for d in named if _size(d) == n / 8]
    if len(same) == 1:
        return same[0]
    known = [d for d in (quant.weight_dtype, quant.activation_dtype) if d] if quant else []
    same = sorted({d for d in known if _size(d) == n / 8})
    return same[0] if len(same) == 1 else None


def name_statement(names: Iterable[str], quant: Quantization | None = None,
                   model_a: str | None = None) -> Stated | None:
    """The operands a kernel (or op) name binds to a role: triton_kernels' triple, trtllm-gen's
    ``bmm_<out>_<A><B>``, or a width pair; None when the names bind none."""
    text = " ".join(n for n in names if n)
    if m := _TRITON.search(text):
        y, x, w = (_triton(g) for g in m.groups())
        return Stated(x, w, y, f"the kernel name's {m.group(0).strip('_ ')!r} "
                               "(triton_kernels: output × activation × weight)")
    if m := _TRTLLM.search(text):
        out, first = _tg(m.group(1)), _tg(m.group(2))
        second = _tg(m.group(3)) if m.group(3) else first
        return Stated(second, first, out, f"the kernel name's {m.group(0).strip('_ ')!r} "
                                          "(trtllm-gen: output, then weight and activation)")
    if m := _WIDTHS.search(text):
        a_bits, w_bits = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
        named, _ = _named_types(text)
        a, b = _width(a_bits, named, quant, model_a), _width(w_bits, named, quant, model_a)
        if a and b:
            return Stated(a, b, None, f"the width pair {m.group(0)!r} in the name"
                                      + (f" with its element types ({', '.join(named)})"
                                         if named else ""))
    return None


def _name_types(names: Sequence[str], quant: Quantization | None,
                model_a: str | None) -> Stated | None:
    """The operands the quantized element types in a name imply (both operands, or the weight
    alone for a weight-only method); the single wide type beside them is the output."""
    text = " ".join(n for n in names if n)
    quant_types, wide = _named_types(text)
    if not quant_types:
        return None
    out = wide[0] if len(wide) == 1 else None
    shown = "/".join(quant_types)
    if len(quant_types) == 2:
        a, b = sorted(quant_types, key=_size, reverse=True)
        return Stated(a, b, out, f"the name's element types {shown} (a mixed pair)")
    if len(quant_types) > 2:
        return None
    q = quant_types[0]
    if quant is not None and quant.weight_only and model_a and quant.weight_dtype == q:
        return Stated(model_a, q, out, f"the name's {q} with the weight-only {quant.method} "
                                       f"config: {q} weights, {model_a} activations")
    return Stated(q, q, out, f"the name's element type {q}, no other operand type named: both "
                             f"operands {q}")


# ------------------------------------------------------------------------ the recorded set


def _shown(members: Iterable[str]) -> str:
    return "{" + ", ".join(sorted(members)) + "}"


def _held(dtype: str, members: frozenset[str]) -> bool:
    return bool(STORAGE.get(dtype, frozenset({dtype})) & members)


def _fits(pair: Stated, members: frozenset[str]) -> bool:
    """Whether a reading explains the recorded set: both operands are held in it, and no
    quantized dtype is left over (beside quantized operands one may be their block scales)."""
    if not members:
        return True
    if pair.a is None or pair.b is None or not (_held(pair.a, members)
                                                and _held(pair.b, members)):
        return False
    if pair.a in _QUANTIZED or pair.b in _QUANTIZED:
        return True
    return not (members & _QUANTIZED)


def _set_alone(members: frozenset[str]) -> Stated | str:
    """The operand pair a recorded dtype set settles by itself, else why it does not."""
    cands = (members - _INDEX_TYPES) or members
    narrower = frozenset(d for d in cands if _size(d) < 4)
    cands = narrower or cands
    if len(cands) == 1 and "uint8" not in cands:
        (d,) = cands
        rest = members - cands
        return Stated(d, d, None, f"the recorded dtypes {_shown(members)} read as a set: the "
                                  f"matrix operands are {d}"
                      + (f", {'/'.join(sorted(rest))} the output, scales or indices"
                         if rest else ""))
    wide = sorted(d for d in cands if d not in _QUANTIZED)
    narrow = sorted(d for d in cands if d in _QUANTIZED)
    if len(wide) == 1 and narrow == ["uint8"]:
        return (f"the recorded dtypes {_shown(members)} are a set: uint8 may be int8 or packed "
                f"4-bit operands, beside a {wide[0]} activation or output")
    if len(wide) == 1 and len(narrow) == 1:
        w, n = wide[0], narrow[0]
        return (f"the recorded dtypes {_shown(members)} are a set, and fit both {n} operands "
                f"with a {w} output and {w} activations × {n} weights")
    if "uint8" in cands:
        return (f"the recorded dtypes {_shown(members)} are a set, and uint8 operands may be "
                "int8 or packed 4-bit")
    return (f"the recorded dtypes {_shown(members)} are a set, and fit more than one operand "
            "pair")


# ------------------------------------------------------------------------ the config


def _from_config(quant: Quantization | None, model_a: str | None, model_b: str | None,
                 model_from: str) -> Stated | str:
    """The operands the model's dtypes and quantization config give one layer."""
    if model_b is None:
        return f"no weight dtype from {model_from}"
    if quant is not None and quant.weight_dtype == model_b and model_b != model_a:
        if quant.activation_dtype is None:
            return (f"{quant.source} says the weights are {model_b} but not what dtype "
                    "activations enter the matmul in")
        return Stated(quant.activation_dtype, model_b, None, quant.source)
    if model_a is None or (quant is None and _size(model_b) < _size(model_a)):
        return (f"{model_from} gives {model_b} weights and no quantization config says what "
                "dtype activations enter the matmul in")
    return Stated(model_a, model_b, None, f"the model's dtypes ({model_from})")


# ------------------------------------------------------------------------ the rule


def _pair(names: Sequence[str], members: frozenset[str], quant: Quantization | None,
          model_a: str | None, model_b: str | None, model_from: str,
          weights_recorded: bool) -> Stated | str:
    """The operand pair from the evidence in the module's order, or why nothing settles it."""
    bound = name_statement(names, quant, model_a)
    if bound is not None:
        return bound
    check = members if weights_recorded else frozenset()
    typed = _name_types(names, quant, model_a)
    if typed is not None and _fits(typed, check):
        return typed
    alone = _set_alone(members) if weights_recorded and members else None
    if isinstance(alone, Stated):
        return alone
    cfg = _from_config(quant, model_a, model_b, model_from)
    if isinstance(cfg, Stated) and _fits(cfg, check):
        return cfg
    _, wide = _named_types(" ".join(names))
    if len(wide) == 1:
        named = Stated(wide[0], wide[0], None, f"the name's element type {wide[0]}")
        if _fits(named, check):
            return named
    why = [alone] if isinstance(alone, str) else []
    if isinstance(cfg, str):
        why.append(cfg)
    elif check:
        why.append(f"{cfg.how}: {cfg.a} × {cfg.b}, which does not explain the recorded set")
    if not weights_recorded and members and isinstance(cfg, str):
        act = _set_alone(members)
        if isinstance(act, Stated) and model_b is not None and act.a is not None:
            return Stated(act.a, model_b, None, f"{act.how}, read as the activations; "
                                                f"{model_b} weights ({model_from})")
    return "; ".join(why) or "no dtype evidence"


def _device(compute: str, model_a: str | None, device: Device | None
            ) -> tuple[str | None, str]:
    """The dtype the device runs for ``compute`` (already the wider operand) and the words:
    ``compute`` itself when the device has matrix cores for it, else the model's activation
    dtype, which a kernel without those cores dequantises into (never a faster roof)."""
    if device is None or not device.dtypes:
        return compute, "the device's matrix dtypes are not known"
    if device.runs(compute):
        return compute, f"{device.name} has {compute} matrix cores"
    if model_a is not None and _size(model_a) > _size(compute) and device.runs(model_a):
        return model_a, (f"{device.name} has no {compute} matrix cores: the operands are "
                         f"dequantised into the model's activation dtype {model_a}, judged on "
                         f"the {model_a} roof")
    return None, (f"{device.name} has no {compute} matrix cores and nothing says which dtype "
                  "the kernel dequantises into")


def decide(*, roles: tuple[str, str] | None = None, roles_from: str = "the recorded roles",
           names: Sequence[str] = (), recorded: Iterable[str] = (),
           quant: Quantization | None = None, model_a: str | None = None,
           model_b: str | None = None, model_from: str = "config.json",
           device: Device | None = None, weights_recorded: bool = True,
           operands: tuple[str, str] = ("activation", "weight")) -> Precision:
    """The compute dtype of one matmul-like kernel and the evidence that decided it.

    ``roles``: (A, B) dtypes recorded by role, the strongest evidence. ``recorded``: the
    dtypes the launching op recorded, read as a set; ``weights_recorded`` false when that op's
    tensors need not include the weight (an MoE layer op), so the set speaks for the
    activations only. ``model_a``/``model_b``: the layer's activation and weight dtype from
    ``model_from``; ``quant``: the model's quantization config. ``device``: what it runs.
    ``operands``: what A and B are called in the evidence (attention: the query and the K/V).
    """
    members = frozenset(recorded)
    if roles is not None:
        pair: Stated | str = Stated(roles[0], roles[1], None, roles_from)
    else:
        pair = _pair(names, members, quant, model_a, model_b, model_from, weights_recorded)
    if isinstance(pair, str):
        return Precision(None, None, None, None, tuple(sorted(members)),
                         f"compute dtype not settled: {pair}; a recorded instance with "
                         "operand roles, a kernel name that states its operand types or the "
                         "model's quantization_config would settle it")
    a, b = pair.a or "", pair.b or ""
    ma, mb = _mma(a), _mma(b)
    if ma == mb:
        compute, how = ma, f"A and B are both {a}"
    elif _size(ma) == _size(mb):
        return Precision(None, a, b, pair.out, (), f"compute dtype not settled: A {a} and B {b} "
                         f"({pair.how}) are different types of one width")
    else:
        compute = ma if _size(ma) > _size(mb) else mb
        narrow = b if compute == ma else a
        role = operands[1] if narrow == b else operands[0]
        how = (f"a mixed pair runs at the wider operand: the {narrow} {role} is dequantised "
               f"into {compute}" if compute not in _QUANTIZED else
               f"a mixed pair runs at the wider operand: the {_mma(a)} × {_mma(b)} MMA runs at "
               f"the {compute} rate")
    ran, dev = _device(compute, model_a, device)
    used = {d for d in (a, b, pair.out) if d} | {s for d in (a, b) for s in STORAGE.get(d, ())}
    rest = tuple(sorted(members - used))
    evidence = (f"compute dtype {ran or 'not settled'}: A {a}, B {b} from {pair.how}; {how}; "
                f"{dev}")
    return Precision(ran, a, b, pair.out, rest, evidence)
