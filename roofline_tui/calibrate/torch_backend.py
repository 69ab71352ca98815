"""The real backend: PyTorch on a CUDA or ROCm GPU (the ``calibrate`` extra).

torch is imported by :func:`open_torch_backend` only, through ``importlib`` (so neither the
other commands nor a type check needs it). Every timing is taken with device events on the
current stream: a warm-up of about ``TimingPlan.warmup_s``, then ``repeats`` batches of about
``repeat_s`` (as many calls as fill one batch), each after a 256 MiB buffer is zeroed outside
the timed region so the caches start cold, and the best batch's time per call is returned.

Matmuls use the layout of ``nn.Linear`` (``A[m, k] @ W[n, k].T``), which MAMF runs found to be
the faster one on MI300X; fp8 goes through ``torch._scaled_mm`` (e4m3 operands, unit scales, a
bf16 result) with ``float8_e4m3fn`` on NVIDIA sm_89+ and CDNA 4, ``float8_e4m3fnuz`` on CDNA 3.
"""

from __future__ import annotations

import importlib
import math
import os
from typing import Any, Literal

from roofline_tui.calibrate.sweep import DeviceInfo, TimingPlan
from roofline_tui.core.peaks import normalize_arch

__all__ = ["CalibrateUnavailable", "TorchBackend", "open_torch_backend"]

INSTALL_HINT = "pip install 'roofline_tui[calibrate]' (a CUDA or ROCm build of PyTorch)"
FLUSH_BYTES = 256 << 20  # larger than any L2 / Infinity Cache of current parts
MAX_CALLS = 10_000       # calls in one warm-up or one timed batch, at most
# environment settings that change what the BLAS libraries pick, recorded with the result
RECORDED_ENV = ("PYTORCH_TUNABLEOP_ENABLED", "HIPBLASLT_TENSILE_LIBPATH",
                "TORCH_BLAS_PREFER_HIPBLASLT", "CUBLAS_WORKSPACE_CONFIG", "CUDA_VISIBLE_DEVICES",
                "HIP_VISIBLE_DEVICES")


class CalibrateUnavailable(RuntimeError):
    """No measurement is possible here; ``str(exc)`` is one line fit for a user."""


def _line(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _where(module: Any) -> str:
    path = getattr(module, "__file__", None)
    if not isinstance(path, str):
        return "a namespace package or a stand-in"
    return "imported from " + " ".join(path.split())[:200]


def _version_of(torch: Any) -> str | None:
    """``torch.__version__`` when the module has a usable one (a stub or a broken install may
    not)."""
    value = getattr(torch, "__version__", None)
    return str(value).strip() or None if isinstance(value, str) else None


# the device properties read, with the range a real GPU reports: (lowest, highest); 0 reported
# for an optional one means "not known" (as before). A value outside, not finite, or not a
# number means a broken driver or build: refused in one line, before anything is measured.
_PROPERTY_RANGES: dict[str, tuple[int, int]] = {
    "major": (1, 99), "minor": (0, 99),
    "multi_processor_count": (1, 1 << 20),
    "total_memory": (1 << 20, 1 << 50),
    "L2_cache_size": (1, 1 << 40),
}


def _property(props: Any, name: str, index: int, *, required: bool = False) -> int | None:
    value = getattr(props, name, None)
    if value is None or (not required and value == 0 and not isinstance(value, bool)):
        if required:
            raise CalibrateUnavailable(f"GPU {index}: PyTorch reports no {name} for it (the "
                                       "driver or the PyTorch build is broken)")
        return None
    lo, hi = _PROPERTY_RANGES[name]
    ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
          and math.isfinite(value) and value == int(value) and lo <= value <= hi)
    if not ok:
        shown = " ".join(repr(value).split())[:40]
        raise CalibrateUnavailable(f"GPU {index}: PyTorch reports an impossible {name} "
                                   f"({shown}; a real GPU reports {lo} to {hi}): the driver or "
                                   "the PyTorch build is broken")
    return int(value)


def open_torch_backend(device_index: int = 0, plan: TimingPlan | None = None) -> TorchBackend:
    """The backend for GPU ``device_index``; raises :class:`CalibrateUnavailable` without
    torch, with a CPU-only torch, without a visible GPU, or with an index out of range."""
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        raise CalibrateUnavailable(
            f"PyTorch is not installed; calibrate measures the GPU with it: {INSTALL_HINT}"
        ) from None
    except Exception as exc:  # noqa: BLE001 - a broken install: one line, not a traceback
        raise CalibrateUnavailable(f"PyTorch failed to import: {_line(exc)}") from None
    version = _version_of(torch)
    if version is None:  # every PyTorch build has one: a stub, or a half-removed install
        raise CalibrateUnavailable(
            f"the torch module found has no __version__: not a working PyTorch install "
            f"({_where(torch)}); {INSTALL_HINT}")
    cuda = getattr(getattr(torch, "version", None), "cuda", None)
    hip = getattr(getattr(torch, "version", None), "hip", None)
    if not cuda and not hip:
        raise CalibrateUnavailable(
            f"PyTorch {version} is a CPU-only build; calibrate needs a GPU: {INSTALL_HINT}")
    try:
        available = bool(torch.cuda.is_available())
        count = int(torch.cuda.device_count()) if available else 0
    except Exception as exc:  # noqa: BLE001 - a driver problem is still one line
        raise CalibrateUnavailable(f"PyTorch cannot query the GPU: {_line(exc)}") from None
    stack = f"HIP {hip}" if hip else f"CUDA {cuda}"
    if not available or count == 0:
        raise CalibrateUnavailable(
            f"no GPU visible to PyTorch {version} ({stack}): check the driver and "
            "CUDA_VISIBLE_DEVICES / HIP_VISIBLE_DEVICES")
    if not 0 <= device_index < count:
        raise CalibrateUnavailable(
            f"--device-index {device_index} is out of range: PyTorch sees {count} GPU(s)")
    try:
        return TorchBackend(torch, device_index, plan or TimingPlan())
    except CalibrateUnavailable:
        raise
    except Exception as exc:  # noqa: BLE001
        raise CalibrateUnavailable(f"cannot start on GPU {device_index}: {_line(exc)}") from None


def _capability(props: Any, index: int) -> tuple[int, int]:
    """``(major, minor)`` of an NVIDIA GPU, checked."""
    major = _property(props, "major", index, required=True)
    minor = _property(props, "minor", index, required=True)
    return (major or 0, minor or 0)


class TorchBackend:
    """:class:`roofline_tui.calibrate.sweep.Backend` on one GPU through PyTorch."""

    def __init__(self, torch: Any, index: int, plan: TimingPlan) -> None:
        self._t = torch
        self._index = index
        self._plan = plan
        self._version = _version_of(torch)
        self._dev = torch.device("cuda", index)
        torch.cuda.set_device(self._dev)
        self._props = torch.cuda.get_device_properties(index)
        self._hip = getattr(getattr(torch, "version", None), "hip", None)
        # (major, minor) on NVIDIA: what bf16 and fp8 depend on
        self._cc = (0, 0) if self._hip else _capability(self._props, index)
        # described (and every property checked) before the first allocation on the device
        self._info: DeviceInfo = self._describe()
        self._flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=self._dev)
        self._fp8_checked: str | None | bool = False  # False: not probed yet

    # ----------------------------------------------------------------------- device

    def _torch_named(self) -> str:
        return f"torch {self._version}" if self._version else "this torch (no __version__)"

    def device_info(self) -> DeviceInfo:
        return self._info

    def _describe(self) -> DeviceInfo:
        t, p, i = self._t, self._props, self._index
        name = str(t.cuda.get_device_name(i))
        vendor: Literal["nvidia", "amd"]
        if self._hip:
            raw = getattr(p, "gcnArchName", "") or ""
            if not isinstance(raw, str):
                raise CalibrateUnavailable(f"GPU {i}: PyTorch reports an impossible gcnArchName "
                                           f"({' '.join(repr(raw).split())[:40]})")
            arch = normalize_arch(raw) or raw or "unknown"
            vendor = "amd"
        else:
            major, minor = self._cc
            raw = f"{major}.{minor}"
            arch = f"sm_{major}{minor}"
            vendor = "nvidia"
        env = {k: os.environ[k] for k in RECORDED_ENV if k in os.environ}
        return DeviceInfo(
            name=name, arch=arch, vendor=vendor, arch_raw=raw, index=i, torch=self._version,
            cuda=getattr(getattr(t, "version", None), "cuda", None), hip=self._hip,
            cu=_property(p, "multi_processor_count", i),
            mem_bytes=_property(p, "total_memory", i),
            l2_bytes=_property(p, "L2_cache_size", i), env=env)

    def _fp8_dtype(self) -> tuple[Any, str | None]:
        t = self._t
        info = self.device_info()
        if not hasattr(t, "_scaled_mm"):
            return None, f"{self._torch_named()} has no torch._scaled_mm (fp8 needs torch>=2.1)"
        if self._hip:
            arch = info.arch
            if arch in ("gfx940", "gfx941", "gfx942"):
                name = "float8_e4m3fnuz"
            elif arch.startswith(("gfx95", "gfx12")):
                name = "float8_e4m3fn"
            else:
                return None, f"fp8 matmul needs gfx942 (CDNA 3) or newer; this is {arch}"
        else:
            if self._cc < (8, 9):
                return None, f"fp8 matmul needs sm_89 or newer; this is {info.arch}"
            name = "float8_e4m3fn"
        dtype = getattr(t, name, None)
        if dtype is None:
            return None, f"{self._torch_named()} has no {name}"
        return dtype, None

    def unsupported(self, dtype: str) -> str | None:
        t = self._t
        if dtype == "fp16":
            return None
        if dtype == "bf16":
            if not self._hip and self._cc[0] < 8:
                return f"bf16 matmul needs sm_80 or newer; this is {self.device_info().arch}"
            return None
        if dtype == "fp8":
            if self._fp8_checked is not False:
                return self._fp8_checked if isinstance(self._fp8_checked, str) else None
            f8, why = self._fp8_dtype()
            if why is None:
                try:  # the library may still lack the kernel: one small call decides
                    a, b, one = self._fp8_operands(256, 256, 256, f8)
                    self._scaled_mm(a, b, one)
                    t.cuda.synchronize()
                except Exception as exc:  # noqa: BLE001
                    why = f"torch._scaled_mm failed on this device: {_line(exc)}"
            self._fp8_checked = why
            return why
        return f"unknown dtype {dtype!r}"

    # ----------------------------------------------------------------------- timing

    def _time(self, fn: Any) -> float:
        t, plan = self._t, self._plan
        fn()  # the first call picks the kernel (and tunes it, with TunableOp)
        start = t.cuda.Event(enable_timing=True)
        end = t.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        one = max(start.elapsed_time(end) / 1e3, 1e-7)
        for _ in range(min(MAX_CALLS, max(1, math.ceil(plan.warmup_s / one)))):
            fn()
        calls = min(MAX_CALLS, max(1, math.ceil(plan.repeat_s / one)))
        best = math.inf
        for _ in range(max(1, plan.repeats)):
            self._flush.zero_()
            start.record()
            for _ in range(calls):
                fn()
            end.record()
            end.synchronize()
            best = min(best, start.elapsed_time(end) / 1e3 / calls)
        return best

    def _fp8_operands(self, m: int, n: int, k: int, f8: Any) -> tuple[Any, Any, Any]:
        t, dev = self._t, self._dev
        a = t.randn(m, k, device=dev, dtype=t.bfloat16).to(f8)
        b = t.randn(n, k, device=dev, dtype=t.bfloat16).to(f8).t()  # column-major, as required
        one = t.ones(1, device=dev, dtype=t.float32)
        return a, b, one

    def _scaled_mm(self, a: Any, b: Any, one: Any) -> Any:
        return self._t._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=self._t.bfloat16)

    def matmul(self, m: int, n: int, k: int, dtype: str) -> float:
        t, dev = self._t, self._dev
        try:
            with t.no_grad():
                if dtype == "fp8":
                    f8, why = self._fp8_dtype()
                    if why is not None:
                        raise RuntimeError(why)
                    a, b, one = self._fp8_operands(m, n, k, f8)
                    return self._time(lambda: self._scaled_mm(a, b, one))
                tdt = {"bf16": t.bfloat16, "fp16": t.float16}[dtype]
                a = t.randn(m, k, device=dev, dtype=tdt)
                b = t.randn(n, k, device=dev, dtype=tdt).t()
                c = t.empty(m, n, device=dev, dtype=tdt)
                return self._time(lambda: t.mm(a, b, out=c))
        except Exception:
            t.cuda.empty_cache()  # an out-of-memory shape must not starve the next one
            raise

    def copy(self, nbytes: int) -> float:
        t, dev = self._t, self._dev
        try:
            src = t.empty(nbytes, device=dev, dtype=t.uint8).fill_(1)
            dst = t.empty_like(src)
            return self._time(lambda: dst.copy_(src))
        except Exception:
            t.cuda.empty_cache()
            raise
