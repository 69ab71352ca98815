"""The ``peaks.md`` section ``roofline calibrate`` writes, and where it may write it.

The section is the format :func:`roofline_tui.core.peaks.load_peak_table` reads: a heading, a
paragraph of prose, one fenced ``yaml`` block. This run's compute ceilings go in
``measured_flops`` (with their ``source``, ``stack``, ``date`` and best ``shape``), which the
engine divides by in preference to the data sheet; the copy's stream rate goes in
``measured_hbm_bw_bytes_s``. When the bundled table knows this very part, its data-sheet
``flops``, pin-rate ``hbm_bw_bytes_s`` and caches are carried beside them (the memory roof
stays the pin rate, as the table's rule says); when it does not, the measurements are all the
section holds, ``hbm_bw_bytes_s`` is the stream rate and ``source`` is ``measured``. A
``calibration`` mapping (ignored by the loader) records how the numbers were obtained.

The output rule: without ``--out`` the section goes to ``./peaks.measured.md`` and an existing
file there is never replaced (the run refuses before it measures anything, and the final link
refuses too if a file appeared meanwhile). A file named with ``--out`` is created, or replaced
when it already is a regular file: naming it is the permission. Either way the file is written
atomically (temp file, fsync, rename): a reader sees the old file or the new one.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roofline_tui.calibrate.sweep import DTYPES, Calibration, DeviceInfo, DtypeResult
from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.peaks import PeakSection, match_product, sized_board_product
from roofline_tui.core.store import atomic_write_text
from roofline_tui.core.textsafe import printable

__all__ = [
    "DEFAULT_OUT",
    "MEASURED_SOURCE",
    "OutputChoice",
    "choose_output",
    "data_sheet_for",
    "render_section",
    "stack_line",
    "write_section",
]

DEFAULT_OUT = Path("peaks.measured.md")


# --------------------------------------------------------------------------- where to write


@dataclass(frozen=True)
class OutputChoice:
    path: Path
    replace: bool                 # an existing file may be replaced (the user named it)
    problem: str | None = None    # why nothing can be written there; None when fine


def choose_output(out: Path | None, cwd: Path | None = None) -> OutputChoice:
    """Apply the output rule before anything is measured (see the module docstring)."""
    named = out is not None
    path = Path(out) if out is not None else (cwd / DEFAULT_OUT if cwd else DEFAULT_OUT)
    shown = printable(os.fsdecode(path), limit=200)
    if not named and (path.exists() or path.is_symlink()):
        return OutputChoice(path, False, (
            f"{shown} already exists and is not replaced unless named: pass --out "
            f"{shown} to replace it, or --out another file"))
    if named and path.exists() and not path.is_file():
        return OutputChoice(path, True, f"{shown} is not a regular file")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        return OutputChoice(path, named, f"the directory of {shown} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        return OutputChoice(path, named, f"cannot write into the directory of {shown}")
    return OutputChoice(path, named)


def write_section(path: Path, text: str, *, replace: bool) -> Path:
    """Write ``text`` to ``path`` atomically. With ``replace=False`` an existing ``path`` is
    never touched: the finished file is linked into place, which fails if a file appeared there
    meanwhile (``FileExistsError``); on a file system without hard links the check is made just
    before the rename."""
    path = Path(path)
    if replace:
        return atomic_write_text(path, text)
    if path.exists() or path.is_symlink():
        raise FileExistsError(17, "already exists", os.fsdecode(path))
    staged = path.with_name(f".{path.name}.calibrate-{os.getpid()}")
    atomic_write_text(staged, text)
    try:
        os.link(staged, path)
    except FileExistsError:
        raise
    except OSError:  # no hard links here: check, then rename
        if path.exists() or path.is_symlink():
            raise FileExistsError(17, "already exists", os.fsdecode(path)) from None
        os.replace(staged, path)
        return path
    finally:
        with contextlib.suppress(OSError):
            os.unlink(staged)
    return path


# --------------------------------------------------------------------------- the data sheet


def data_sheet_for(device: DeviceInfo, sections: Sequence[PeakSection]
                   ) -> tuple[PeakSection | None, str]:
    """The bundled table's section for this very part, and a line saying what was found.

    Only a product match counts (the arch's default section may be another part), and only
    when arch and CU/SM count agree: a partition (an MI300X in CPX mode shows 38 of its 304
    CUs) or another SKU must not inherit the whole part's figures."""
    sec = match_product(device.name, sections)
    if sec is None:
        board = sized_board_product(device.name, device.mem_bytes)
        sec = match_product(board, sections) if board else None
    name = printable(device.name, limit=80)
    if sec is None:
        return None, f"the bundled table has no section for {name}"
    label = printable(sec.title or sec.product or sec.gfx, limit=120)
    if sec.gfx != device.arch:
        return None, (f"the bundled section {label} is {sec.gfx}, but the device reports "
                      f"{device.arch}; not used")
    if sec.cu and device.cu and sec.cu != device.cu:
        return None, (f"the device reports {device.cu} CUs/SMs, the bundled section {label} "
                      f"{sec.cu} (a partition or another SKU); its figures are not used")
    return sec, f"data-sheet figures from the bundled section {label}"


# --------------------------------------------------------------------------- what to write


def _yaml_float(value: float) -> str:
    # d.dddde+XX: a float to every YAML 1.1 reader (PyYAML reads 8.0e12 as a string)
    return f"{value:.4e}"


def _yaml_scalar(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "null"
        return _yaml_float(value) if abs(value) >= 1e6 else repr(round(value, 6))
    # a JSON string is a YAML double-quoted scalar, with every control character escaped
    return json.dumps(str(value), ensure_ascii=True)


_PLAIN_KEY = lazy_compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _yaml_key(key: object) -> str:
    text = str(key)
    return text if _PLAIN_KEY.match(text) else json.dumps(text, ensure_ascii=True)


def _yaml_lines(data: Mapping[str, Any], indent: int = 0) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for raw_key, value in data.items():
        key = _yaml_key(raw_key)
        if isinstance(value, Mapping):
            if value:
                lines.append(f"{pad}{key}:")
                lines += _yaml_lines(value, indent + 2)
            else:
                lines.append(f"{pad}{key}: {{}}")
        else:
            lines.append(f"{pad}{key}: {_yaml_scalar(value)}")
    return lines


def stack_line(device: DeviceInfo) -> str:
    """``torch 2.5.1+cu124, CUDA 12.4`` (+ the recorded knobs): the ``stack`` of the
    measurement."""
    parts = [f"torch {device.torch}" if device.torch else "torch version unknown"]
    if device.hip:
        parts.append(f"HIP {device.hip}")
    elif device.cuda:
        parts.append(f"CUDA {device.cuda}")
    parts += [f"{k}={v}" for k, v in device.env.items()]
    return ", ".join(parts)


def _why_not(r: DtypeResult) -> str:
    return r.skipped or (r.errors[0] if r.errors else "no shape was timed")


def _measured_flops(cal: Calibration, date: str) -> dict[str, Any]:
    """The ``measured_flops`` mapping the loader reads: shared ``source``/``stack``/``date``,
    ``unmeasured`` for the dtypes without a figure, one ``{flops, shape}`` per measured dtype."""
    out: dict[str, Any] = {
        "source": MEASURED_SOURCE,
        "stack": stack_line(cal.device),
        "date": date,
    }
    missing = [f"{r.dtype}: {_why_not(r)}" for r in cal.dtypes if r.best is None]
    swept = {r.dtype for r in cal.dtypes}
    others = [d for d in DTYPES if d not in swept]
    tail = ("not asked for: " + ", ".join(others) + "; " if others else "") + \
        "roofline calibrate sweeps only bf16, fp16 and fp8"
    out["unmeasured"] = "; ".join([*missing, tail])
    for r in cal.dtypes:
        if r.best is not None:
            out[r.dtype] = {"flops": r.best.flops_s, "shape": str(r.best.shape)}
    return out


# what the loader shows as the measured ceilings' source
MEASURED_SOURCE = ("roofline calibrate on this machine: bounded MAMF-style matmul sweep, "
                   "device-event timing, best of repeats")


def _calibration_block(cal: Calibration, command: str, tool: str, sheet: PeakSection | None,
                       sheet_note: str) -> dict[str, Any]:
    dev = cal.device
    stack: dict[str, Any] = {"torch": dev.torch}
    if dev.hip:
        stack["hip"] = dev.hip
    if dev.cuda:
        stack["cuda"] = dev.cuda
    stack.update(dict(dev.env))
    matmul: dict[str, Any] = {}
    for r in cal.dtypes:
        if r.best is not None:
            matmul[r.dtype] = {
                "tflops": round(r.best.flops_s / 1e12, 2),
                "shape_mxnxk": str(r.best.shape),
                "shapes_tried": r.tried,
                "seconds": round(r.seconds, 2),
                "stopped": r.stopped,
            }
        else:
            matmul[r.dtype] = {"skipped": _why_not(r)}
    block: dict[str, Any] = {
        "tool": tool,
        "command": command,
        "date": cal.started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "device_name": dev.name,
        "device_index": dev.index,
    }
    if dev.arch_raw and dev.arch_raw != dev.arch:
        block["arch_reported"] = dev.arch_raw
    block["stack"] = stack
    block["data_sheet"] = sheet_note
    block["budget_s"] = round(cal.budget_s, 1)
    block["elapsed_s"] = round(cal.elapsed_s, 1)
    if cal.copy is not None:
        hbm: dict[str, Any] = {
            "method": "device-to-device copy_, bytes = 2 x size (read + write)",
            "copy_bytes": cal.copy.nbytes,
            "stream_bytes_s": cal.copy.bytes_s,
        }
        if sheet is not None:
            hbm["share_of_pin_rate"] = round(cal.copy.bytes_s / sheet.hbm_bw_bytes_s, 4)
        hbm["memory_roof"] = ("the data sheet's pin rate (the table's rule; the stream figure "
                              "is recorded beside it)" if sheet is not None else
                              "the measured stream rate (no data-sheet pin rate for this part)")
        block["hbm"] = hbm
    block["matmul"] = matmul
    return block


def render_section(cal: Calibration, *, sheet: PeakSection | None = None,
                   sheet_note: str = "no data-sheet section given",
                   command: str = "roofline calibrate", tool: str = "roofline_tui") -> str:
    """The whole ``peaks.md`` document for one calibrated device.

    With ``sheet`` (the bundled section of this very part, :func:`data_sheet_for`) the section
    carries that part's data-sheet ``flops``, pin-rate ``hbm_bw_bytes_s``, caches and source,
    and this run's figures beside them: ``measured_flops`` (the compute roofs) and
    ``measured_hbm_bw_bytes_s`` (the copy's stream rate, the §8.2 sanity check of the memory
    roof). Without one, the measured figures are all there is: ``hbm_bw_bytes_s`` is the stream
    rate and ``source`` is ``measured``. Measured bf16/fp16 are written as measured; the loader
    makes the §8.2 check on them.

    Raises ``ValueError`` when the calibration has no copy result: the loader needs a bandwidth
    to accept a section."""
    if cal.copy is None:
        raise ValueError(f"no bandwidth was measured ({cal.copy_error or 'copy not run'})")
    dev = cal.device
    name = printable(" ".join(dev.name.split()) or "unknown GPU", limit=120)
    arch = printable(dev.arch, limit=40)
    date = cal.started.strftime("%Y-%m-%d")
    stream = cal.copy.bytes_s

    data: dict[str, Any] = {"gfx": dev.arch, "product": dev.name, "default": True}
    if dev.cu or (sheet is not None and sheet.cu):
        data["cu"] = dev.cu or (sheet.cu if sheet is not None else None)
    data["hbm_bw_bytes_s"] = sheet.hbm_bw_bytes_s if sheet is not None else stream
    if sheet is not None and sheet.flops:
        data["flops"] = dict(sheet.flops)
    if cal.measured:
        data["measured_flops"] = _measured_flops(cal, date)
    data["measured_hbm_bw_bytes_s"] = stream
    l2 = dev.l2_bytes or (sheet.l2_bytes if sheet is not None else None)
    if l2:
        data["l2_bytes"] = l2
    if sheet is not None and sheet.mall_bytes:
        data["mall_bytes"] = sheet.mall_bytes
    if sheet is not None:
        data["source"] = (f"{sheet.source or 'bundled data sheet'}; copied from the bundled "
                          f"table by roofline calibrate on {date}")
    else:
        data["source"] = "measured"
    data["calibration"] = _calibration_block(cal, command, tool, sheet, sheet_note)

    measured = ", ".join(
        f"{r.dtype} {r.best.flops_s / 1e12:.1f} TFLOP/s at {r.best.shape}"
        for r in cal.dtypes if r.best is not None) or "no matmul rate"
    skipped = [f"{r.dtype} ({printable(_why_not(r), limit=160)})"
               for r in cal.dtypes if r.best is None]
    if sheet is not None:
        memory = (f"`hbm_bw_bytes_s` stays the data sheet's pin rate, as in the bundled table "
                  f"(the memory `target_eff` of 0.90 is set against it); the copy streamed "
                  f"{stream / 1e12:.3g} TB/s, {stream / sheet.hbm_bw_bytes_s:.0%} of it "
                  "(`measured_hbm_bw_bytes_s`; trivial streaming tops out near 0.85, spec §8.2)")
    else:
        memory = (f"the bundled table has no data sheet for this part, so `hbm_bw_bytes_s` is "
                  f"the copy's stream rate, {stream / 1e12:.3g} TB/s: memory-axis ratios "
                  "against it read higher than against a pin rate")
    prose = [
        "# Measured peaks",
        "",
        f"Written by `{printable(command, limit=200)}` ({tool}) on {date}. "
        "`measured_flops` holds the ceilings this GPU reached on this software stack, not "
        "data-sheet figures (spec §8.2): per dtype the best rate of a bounded MAMF-style sweep "
        "of `matmul` shapes (multiples of 256, device-event timing, best of several repeats "
        "after warm-up); a verdict is judged against them where they exist. The memory figure "
        "is a large device-to-device copy, bytes counted twice (read and write). Use the file "
        "with `roofline analyze ROUND_DIR --peaks FILE`.",
        "",
        f"## {arch} — {name} (measured {date})",
        "",
        f"Measured on device {dev.index} ({printable(stack_line(dev), limit=300)}) in "
        f"{cal.elapsed_s:.0f} s: {measured}. Memory: {memory}. Data sheet: "
        f"{printable(sheet_note, limit=200)}.",
    ]
    if skipped:
        prose.append(f"Not measured: {'; '.join(skipped)}.")
    body = "\n".join(_yaml_lines(data))
    return "\n".join(prose) + "\n\n```yaml\n" + body + "\n```\n"
