"""The measurement plan of ``roofline calibrate``: a bounded MAMF-style matmul sweep and a
device-to-device copy, driven through an injected :class:`Backend`.

Nothing here imports torch or touches a GPU. A backend answers three questions (what device is
this, which dtypes can it multiply, how long does one call take) and a clock says how much of
the time budget is gone; the tests drive the whole plan with a synthetic device on CPU.

The method follows the Maximum Achievable Matmul FLOPS (MAMF) idea: a vendor's peak is not
what its BLAS library reaches, so the compute ceiling is the best rate a plain ``matmul``
reaches over a brute-force search of shapes. Here the search is bounded: it starts from shapes
that did well on current parts, then walks the neighbourhood of the best shape so far in steps
of 256, and stops when the time budget is spent or when the best rate has held for
``patience`` consecutive shapes. The memory ceiling is a large ``copy_``: it reads and writes
each byte once, so it moves ``2 × size`` bytes.
"""

from __future__ import annotations

import math
import random
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal, Protocol

__all__ = [
    "DTYPES",
    "Backend",
    "Calibration",
    "Clock",
    "CopyResult",
    "DeviceInfo",
    "DtypeResult",
    "Plateau",
    "ProgressEvent",
    "QUICK",
    "DEFAULT",
    "SEED_SHAPES",
    "Shape",
    "ShapeResult",
    "ShapeSearch",
    "SweepSettings",
    "TimingPlan",
    "RUNNING",
    "RunStalled",
    "WATCHDOG_MARGIN_S",
    "run_calibration",
    "run_watched",
    "settings_for",
    "sweep_dtype",
]

# the dtypes the sweep knows how to ask for, in the order they are measured
DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp8")
# bytes per operand element; fp8 writes a bf16 result (what serving fp8 GEMMs do)
_IN_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1}
_OUT_BYTES = {"bf16": 2, "fp16": 2, "fp8": 2}

Clock = Callable[[], float]
GiB = 1 << 30
# The watchdog of a run (:func:`run_watched`): a run not over this long after its budget (a
# device call that never returns) is given up, and what it measured before is kept.
WATCHDOG_MARGIN_S = 5.0
WATCHDOG_POLL_S = 0.05
RUNNING = "running"  # the ``stopped`` of a dtype whose sweep is under way


# --------------------------------------------------------------------------- what is measured


@dataclass(frozen=True, order=True)
class Shape:
    """A GEMM ``[m, k] × [k, n]``: ``2·m·n·k`` FLOP."""

    m: int
    n: int
    k: int

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    def operand_bytes(self, dtype: str) -> int:
        """Memory the three matrices take on the device."""
        return (self.m * self.k + self.n * self.k) * _IN_BYTES.get(dtype, 2) + (
            self.m * self.n * _OUT_BYTES.get(dtype, 2))

    def __str__(self) -> str:
        return f"{self.m}x{self.n}x{self.k}"


@dataclass(frozen=True)
class DeviceInfo:
    """The device as the runtime names it (``torch.cuda.get_device_name``, ``gcnArchName``)."""

    name: str
    arch: str                      # normalised: sm_90, gfx942, ...
    vendor: Literal["nvidia", "amd", "unknown"] = "unknown"
    arch_raw: str | None = None    # as reported (gfx942:sramecc+:xnack-)
    index: int = 0
    torch: str | None = None       # torch.__version__
    cuda: str | None = None        # torch.version.cuda
    hip: str | None = None         # torch.version.hip
    cu: int | None = None          # multi_processor_count: SMs (NVIDIA) or CUs (AMD)
    mem_bytes: int | None = None
    l2_bytes: int | None = None
    env: Mapping[str, str] = field(default_factory=dict)  # settings that change the result


class Backend(Protocol):
    """What the sweep needs from a device. Times are seconds per call, the best of several
    repeats after warm-up, measured with device events (the backend decides how)."""

    def device_info(self) -> DeviceInfo: ...

    def unsupported(self, dtype: str) -> str | None:
        """``None`` when ``dtype`` matmuls run on this device, else the one-line reason."""
        ...

    def matmul(self, m: int, n: int, k: int, dtype: str) -> float: ...

    def copy(self, nbytes: int) -> float:
        """Seconds for one device-to-device copy of ``nbytes`` (read ``nbytes``, write
        ``nbytes``)."""
        ...


@dataclass(frozen=True)
class TimingPlan:
    """How a backend times one shape: warm-up for about ``warmup_s``, then ``repeats`` timed
    batches of about ``repeat_s`` each (several calls between two events when one call is
    short); the result is the best batch's time per call."""

    warmup_s: float = 0.03
    repeats: int = 5
    repeat_s: float = 0.02


@dataclass(frozen=True)
class SweepSettings:
    seconds: float = 60.0          # the whole run: copy, warm-up and every dtype's sweep
    patience: int = 16             # stop a dtype when its best held this many shapes in a row
    min_gain: float = 0.005        # a new best resets the count only when it is this much better
    min_shapes: int = 6            # never stop on patience before this many shapes
    max_shapes: int = 400          # per dtype
    step: int = 256                # every dimension is a multiple of this
    min_dim: int = 1024
    max_dim: int = 16384
    warmup_s: float = 5.0          # device warm-up before the first sweep (clocks, heuristics)
    warmup_share: float = 0.10     # ... but at most this share of ``seconds``
    copy_share: float = 0.05       # time given to the copy
    copy_rounds: int = 3           # copy calls (each the backend's best of repeats) at most
    copy_bytes: int | None = None  # None: 1 GiB, less on a small device
    memory_share: float = 0.25     # skip shapes whose matrices need more of the device memory
    fail_limit: int = 3            # a dtype whose first shapes all fail is given up
    seed: int = 0                  # the random fallback's seed: the sweep is reproducible
    timing: TimingPlan = field(default_factory=TimingPlan)


DEFAULT = SweepSettings()
QUICK = SweepSettings(seconds=10.0, patience=8, min_shapes=4, warmup_s=1.0, copy_rounds=2,
                      timing=TimingPlan(warmup_s=0.01, repeats=3, repeat_s=0.005))


def settings_for(*, quick: bool = False, seconds: float | None = None) -> SweepSettings:
    """The defaults (about a minute) or ``--quick`` (about ten seconds); ``--seconds`` sets the
    budget of either."""
    base = QUICK if quick else DEFAULT
    return replace(base, seconds=float(seconds)) if seconds is not None else base


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class ShapeResult:
    shape: Shape
    seconds: float

    @property
    def flops_s(self) -> float:
        return self.shape.flops / self.seconds


@dataclass
class DtypeResult:
    dtype: str
    best: ShapeResult | None = None
    tried: int = 0
    seconds: float = 0.0
    stopped: str = ""
    skipped: str | None = None     # why this dtype was not measured at all
    errors: list[str] = field(default_factory=list)
    history: list[ShapeResult] = field(default_factory=list)

    @property
    def flops_s(self) -> float | None:
        return self.best.flops_s if self.best is not None else None


@dataclass(frozen=True)
class CopyResult:
    nbytes: int                    # size of the copied tensor
    seconds: float                 # one copy, best of the rounds

    @property
    def bytes_moved(self) -> int:
        return 2 * self.nbytes     # every byte read once and written once

    @property
    def bytes_s(self) -> float:
        return self.bytes_moved / self.seconds


@dataclass
class Calibration:
    device: DeviceInfo
    started: datetime
    budget_s: float
    elapsed_s: float = 0.0
    warmup_s: float = 0.0
    copy: CopyResult | None = None
    copy_error: str | None = None
    dtypes: list[DtypeResult] = field(default_factory=list)

    def result(self, dtype: str) -> DtypeResult | None:
        return next((r for r in self.dtypes if r.dtype == dtype), None)

    @property
    def measured(self) -> list[DtypeResult]:
        return [r for r in self.dtypes if r.best is not None]


@dataclass(frozen=True)
class ProgressEvent:
    phase: str                     # "copy", "warm-up", or the dtype being swept
    elapsed_s: float
    budget_s: float
    message: str = ""


Progress = Callable[[ProgressEvent], None]


# --------------------------------------------------------------------------- shapes


# Starting points: the best shapes reported by MAMF runs on current parts (bf16 and fp8, NVIDIA
# A100 to GB200, AMD MI300X to MI355X), all multiples of 256, and two squares. Only where the
# search begins; the neighbourhood walk takes it from there.
SEED_SHAPES: tuple[Shape, ...] = tuple(Shape(*s) for s in (
    (8192, 8192, 8192),
    (4096, 4096, 4096),
    (2048, 2048, 13312),
    (1024, 15360, 4096),
    (1024, 10240, 5120),
    (1792, 16128, 3072),
    (4096, 9728, 2048),
    (12288, 8192, 8192),
    (13312, 10240, 8192),
    (10240, 15360, 8192),
    (1280, 4096, 12032),
    (1024, 9216, 14336),
    (15360, 4096, 3072),
))

# neighbourhood steps, coarse to fine (each a multiple of the 256 grid)
_STEPS = (4096, 2048, 1024, 512, 256)


class ShapeSearch:
    """Proposes the next shape to time: the seeds, then the neighbours of the best shape so far
    (one dimension moved by ±4096 … ±256), then random grid points. Never proposes a shape
    twice, off the grid, or too large for the device."""

    def __init__(self, settings: SweepSettings, *, dtype: str = "bf16",
                 mem_bytes: int | None = None, seeds: Iterable[Shape] = SEED_SHAPES) -> None:
        self._s = settings
        self._dtype = dtype
        self._max_bytes = (int(mem_bytes * settings.memory_share) if mem_bytes else None)
        self._seen: set[Shape] = set()
        self._seeds: deque[Shape] = deque(s for s in seeds if self.fits(s))
        self._centre: Shape | None = None
        self._near: deque[Shape] = deque()
        self._rng = random.Random(settings.seed)

    def fits(self, shape: Shape) -> bool:
        s = self._s
        dims_ok = all(s.min_dim <= d <= s.max_dim and d % s.step == 0
                      for d in (shape.m, shape.n, shape.k))
        mem_ok = self._max_bytes is None or shape.operand_bytes(self._dtype) <= self._max_bytes
        return dims_ok and mem_ok

    def _neighbours(self, centre: Shape) -> Iterator[Shape]:
        for step in _STEPS:
            if step % self._s.step:
                continue
            for axis in range(3):
                for sign in (1, -1):
                    dims = [centre.m, centre.n, centre.k]
                    dims[axis] += sign * step
                    yield Shape(*dims)

    def _take(self, queue: deque[Shape]) -> Shape | None:
        while queue:
            shape = queue.popleft()
            if shape not in self._seen and self.fits(shape):
                self._seen.add(shape)
                return shape
        return None

    def propose(self, best: Shape | None) -> Shape | None:
        shape = self._take(self._seeds)
        if shape is not None:
            return shape
        if best is not None and best != self._centre:
            self._centre = best
            self._near = deque(self._neighbours(best))
        shape = self._take(self._near)
        if shape is not None:
            return shape
        s = self._s
        lo, hi = -(-s.min_dim // s.step), s.max_dim // s.step
        if lo > hi:
            return None
        for _ in range(200):
            cand = Shape(*(self._rng.randint(lo, hi) * s.step for _ in range(3)))
            if cand not in self._seen and self.fits(cand):
                self._seen.add(cand)
                return cand
        return None


# --------------------------------------------------------------------------- the stopping rule


@dataclass
class Plateau:
    """The best rate so far and how many shapes in a row it has held.

    Any higher rate becomes the best; only one at least ``min_gain`` higher resets the count
    (noise-sized gains must not keep a sweep going). :attr:`done` once ``patience`` shapes in a
    row brought no such gain and at least ``min_shapes`` were tried."""

    patience: int
    min_gain: float = 0.005
    min_shapes: int = 1
    best: ShapeResult | None = None
    held: int = 0
    tried: int = 0

    def observe(self, result: ShapeResult | None) -> bool:
        """Record one timed shape (``None``: it failed); True when it is the new best."""
        self.tried += 1
        if result is None or not (result.flops_s > 0 and math.isfinite(result.flops_s)):
            self.held += 1
            return False
        if self.best is None:
            self.best, self.held = result, 0
            return True
        if result.flops_s > self.best.flops_s:
            gained = result.flops_s > self.best.flops_s * (1.0 + self.min_gain)
            self.best = result
            self.held = 0 if gained else self.held + 1
            return True
        self.held += 1
        return False

    @property
    def done(self) -> bool:
        return self.tried >= self.min_shapes and self.held >= self.patience


# --------------------------------------------------------------------------- running it


def _one_line(exc: BaseException, limit: int = 160) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _valid_seconds(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    v = float(value)
    return v if v > 0 and math.isfinite(v) else None


def sweep_dtype(backend: Backend, dtype: str, budget_s: float, settings: SweepSettings, *,
                clock: Clock, mem_bytes: int | None = None,
                progress: Progress | None = None,
                report: Callable[[float], tuple[float, float]] | None = None,
                out: DtypeResult | None = None) -> DtypeResult:
    """Search shapes for ``dtype`` within ``budget_s`` seconds of ``clock``; into ``out`` when
    given (its best is kept current shape by shape: a watchdog that gives up on a call that
    never returns still finds what was measured before it).

    Before each shape the sweep checks that the dearest shape so far would still fit in what is
    left of the budget, so the budget is overrun only when a dtype's very first shape is longer
    than the budget itself. A shape that raises (out of memory, a kernel the library lacks) is
    recorded and counts as a shape that did not beat the best; when the first ``fail_limit``
    shapes all fail, the dtype is given up with the first error as the reason."""
    out = out if out is not None else DtypeResult(dtype=dtype)
    search = ShapeSearch(settings, dtype=dtype, mem_bytes=mem_bytes)
    rule = Plateau(settings.patience, settings.min_gain, settings.min_shapes)
    start = clock()
    dearest = 0.0
    stopped = "no more candidate shapes"  # (out.stopped is set once the sweep is over)
    while True:
        if out.tried >= settings.max_shapes:
            stopped = f"shape limit ({settings.max_shapes})"
            break
        if out.tried and (clock() - start) + dearest > budget_s:
            stopped = "time budget"
            break
        shape = search.propose(rule.best.shape if rule.best else None)
        if shape is None:
            break
        before = clock()
        result: ShapeResult | None = None
        try:
            secs = _valid_seconds(backend.matmul(shape.m, shape.n, shape.k, dtype))
            if secs is None:
                raise ValueError("the backend returned no valid time")
            result = ShapeResult(shape, secs)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - one shape failing never ends the run
            out.errors.append(f"{shape}: {_one_line(exc)}")
        dearest = max(dearest, clock() - before)
        out.tried += 1
        rule.observe(result)
        out.best = rule.best
        if result is not None:
            out.history.append(result)
        elif rule.best is None and len(out.errors) >= settings.fail_limit:
            out.skipped = f"matmul failed on {len(out.errors)} shapes; first: {out.errors[0]}"
            stopped = "failed"
            break
        if progress is not None and report is not None:
            elapsed, budget = report(clock())
            best = rule.best
            note = (f"{dtype} best {best.flops_s / 1e12:.1f} TFLOP/s at {best.shape}"
                    if best else f"{dtype}: no rate yet")
            progress(ProgressEvent(dtype, elapsed, budget, f"{note} ({out.tried} shapes)"))
        if rule.done:
            stopped = f"best held for {settings.patience} shapes"
            break
    out.best = rule.best
    out.seconds = clock() - start
    out.stopped = stopped
    return out


def _copy_bytes(settings: SweepSettings, info: DeviceInfo) -> int:
    if settings.copy_bytes:
        return int(settings.copy_bytes)
    size = GiB
    if info.mem_bytes:  # source + destination at most an eighth of the device
        size = min(size, info.mem_bytes // 16)
    return max(1 << 20, size - size % (1 << 20))


def _measure_copy(backend: Backend, nbytes: int, budget_s: float, rounds: int,
                  clock: Clock) -> tuple[CopyResult | None, str | None]:
    start = clock()
    best: float | None = None
    error: str | None = None
    for i in range(max(1, rounds)):
        if i and clock() - start >= budget_s:
            break
        try:
            secs = _valid_seconds(backend.copy(nbytes))
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as exc:  # noqa: BLE001 - reported, the matmul sweep still runs
            error = error or _one_line(exc)
            continue
        if secs is None:
            error = error or "the backend returned no valid time"
            continue
        best = secs if best is None else min(best, secs)
    if best is None:
        return None, error or "no copy was timed"
    return CopyResult(nbytes, best), None


def _unsupported(backend: Backend, dtype: str) -> str | None:
    if dtype not in DTYPES:
        return f"unknown dtype {dtype!r}"
    try:
        why = backend.unsupported(dtype)
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as exc:  # noqa: BLE001 - a backend that cannot tell: not measured, said
        return f"could not tell whether {dtype} matmuls run here: {_one_line(exc)}"
    return None if why is None else (str(why) or "not supported")


def run_calibration(backend: Backend, settings: SweepSettings = DEFAULT, *,
                    dtypes: Sequence[str] = DTYPES, clock: Clock = time.monotonic,
                    progress: Progress | None = None,
                    now: Callable[[], datetime] | None = None,
                    live: Callable[[Calibration], object] | None = None) -> Calibration:
    """Copy, warm-up, then one sweep per supported dtype, all within ``settings.seconds``.

    The copy gets ``copy_share`` of the budget; what is left is split evenly between the dtypes
    still to come (time a dtype does not use passes to the next). A dtype the device lacks is
    skipped with the backend's reason (a backend that cannot tell, raising, too). ``live`` is
    handed the record as soon as it exists; it fills in as the run goes (see
    :func:`run_watched`)."""
    info = backend.device_info()
    started = (now or (lambda: datetime.now(UTC)))()
    cal = Calibration(device=info, started=started, budget_s=settings.seconds)
    if live is not None:
        live(cal)
    t0 = clock()
    deadline = t0 + settings.seconds

    def report(at: float) -> tuple[float, float]:
        return at - t0, settings.seconds

    def say(phase: str, message: str) -> None:
        if progress is not None:
            progress(ProgressEvent(phase, clock() - t0, settings.seconds, message))

    nbytes = _copy_bytes(settings, info)
    say("copy", f"device-to-device copy of {nbytes / GiB:.2f} GiB")
    cal.copy, cal.copy_error = _measure_copy(backend, nbytes,
                                             settings.copy_share * settings.seconds,
                                             settings.copy_rounds, clock)
    if cal.copy is not None:
        say("copy", f"stream {cal.copy.bytes_s / 1e12:.2f} TB/s")

    runnable: list[str] = []
    for dtype in dict.fromkeys(dtypes):
        why = _unsupported(backend, dtype)
        if why:
            cal.dtypes.append(DtypeResult(dtype=dtype, skipped=why, stopped="skipped"))
        else:
            runnable.append(dtype)

    if runnable:
        warm = min(settings.warmup_s, settings.warmup_share * settings.seconds)
        search = ShapeSearch(settings, dtype=runnable[0], mem_bytes=info.mem_bytes)
        seed = search.propose(None)
        tw = clock()
        say("warm-up", f"warming the device up for {warm:.0f} s")
        while seed is not None and clock() - tw < warm:
            try:
                backend.matmul(seed.m, seed.n, seed.k, runnable[0])
            except (KeyboardInterrupt, SystemExit):
                raise
            except Exception:  # noqa: BLE001 - the sweep will report the shape's failure
                break
        cal.warmup_s = clock() - tw

    for i, dtype in enumerate(runnable):
        budget = max(0.0, (deadline - clock()) / (len(runnable) - i))
        res = DtypeResult(dtype=dtype, stopped=RUNNING)
        cal.dtypes.append(res)  # (before it runs: the watchdog's record of it)
        sweep_dtype(backend, dtype, budget, settings, clock=clock, mem_bytes=info.mem_bytes,
                    progress=progress, report=report, out=res)
    order = {d: j for j, d in enumerate(dict.fromkeys(dtypes))}
    cal.dtypes.sort(key=lambda r: order.get(r.dtype, len(order)))
    cal.elapsed_s = clock() - t0
    say("done", "finished")
    return cal


class RunStalled(RuntimeError):
    """The watchdog gave up on a run before it had a record to keep; ``str(exc)`` is one line
    fit for a user."""


def run_watched(backend: Backend, settings: SweepSettings = DEFAULT, *,
                dtypes: Sequence[str] = DTYPES, clock: Clock = time.monotonic,
                progress: Progress | None = None,
                now: Callable[[], datetime] | None = None) -> tuple[Calibration, str | None]:
    """:func:`run_calibration` on a thread of its own, watched on ``clock``: a run that is not
    over :data:`WATCHDOG_MARGIN_S` after its budget (a device call that never returned) is
    given up. Returns the calibration and ``None``, or what was measured before the call that
    did not return and the reason (said in the ``stopped`` of the dtype it was sweeping and in
    the ``skipped`` of those it never reached). The run's own exceptions are raised here; the
    given-up thread is a daemon, left in its call. Raises :class:`RunStalled` when the device
    could not even be described in time."""
    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["result"] = run_calibration(backend, settings, dtypes=dtypes, clock=clock,
                                            progress=progress, now=now,
                                            live=lambda cal: box.setdefault("live", cal))
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            box["error"] = exc
        finally:
            done.set()

    t0 = clock()
    limit = settings.seconds + WATCHDOG_MARGIN_S
    threading.Thread(target=work, daemon=True, name="calibrate sweep").start()
    while not done.wait(WATCHDOG_POLL_S) and clock() - t0 < limit:
        pass
    if done.is_set():
        if "error" in box:
            raise box["error"]
        result: Calibration = box["result"]
        return result, None
    why = (f"a device call did not return within the budget ({settings.seconds:g} s) plus "
           f"{WATCHDOG_MARGIN_S:g} s; the run was ended there")
    live: Calibration | None = box.get("live")
    if live is None:
        raise RunStalled(why)
    return _given_up(live, dtypes, why, clock() - t0), why


def _given_up(live: Calibration, dtypes: Sequence[str], why: str,
              elapsed: float) -> Calibration:
    """A copy of what a given-up run had measured, each dtype saying where it stood."""
    out: list[DtypeResult] = []
    for r in list(live.dtypes):
        r = replace(r, errors=list(r.errors), history=list(r.history))
        if r.stopped == RUNNING:
            r.stopped = "watchdog: a device call did not return"
            if r.best is None:
                r.skipped = f"not measured: {why}"
        out.append(r)
    swept = {r.dtype for r in out}
    out += [DtypeResult(dtype=d, skipped=f"not reached: {why}", stopped="watchdog")
            for d in dict.fromkeys(dtypes) if d not in swept]
    order = {d: j for j, d in enumerate(dict.fromkeys(dtypes))}
    out.sort(key=lambda r: order.get(r.dtype, len(order)))
    copy_error = live.copy_error or (None if live.copy is not None else why)
    return replace(live, dtypes=out, elapsed_s=elapsed, copy_error=copy_error)
