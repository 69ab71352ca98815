"""``roofline import {torch,rocprofv3,nsys}``: raw profiler output -> ``profile_topN.json``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from roofline_tui.importers.common import DEFAULT_TOP, ImportProblem


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def register(subparsers: Any) -> None:
    imp = subparsers.add_parser(
        "import", help="build profile_topN.json from raw profiler output",
        description="Build a round's profile_topN.json from a PyTorch trace, a rocprofv3 "
                    "kernel trace / rocpd database, or an nsys cuda_gpu_kern_sum report.")
    kinds = imp.add_subparsers(dest="import_kind", metavar="KIND")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--out", required=True, type=Path, metavar="ROUND_DIR",
                       help="round directory to write profile_topN.json (+ .md) into")
        p.add_argument("--top", type=_positive, default=DEFAULT_TOP,
                       help=f"number of kernels to keep (default {DEFAULT_TOP})")

    t = kinds.add_parser("torch", help="PyTorch profiler (Kineto) chrome trace, .json or .gz")
    t.add_argument("trace", type=Path, metavar="TRACE.json[.gz]")
    common(t)
    t.add_argument("--isl", type=_non_negative, default=None, help="input sequence length")
    t.add_argument("--osl", type=_non_negative, default=None, help="output sequence length")
    t.add_argument("--conc", type=_non_negative, default=None, help="benchmark concurrency")
    t.add_argument("--capture-sizes", default="", metavar="N,N,...",
                   help="cudagraph capture sizes (decode M is snapped up to one)")
    t.add_argument("--device-index", type=int, default=None, metavar="I",
                   help="device to keep when the trace holds several")
    t.set_defaults(func=_run_torch)

    r = kinds.add_parser("rocprofv3", help="rocprofv3 kernel_trace.csv or rocpd .db")
    r.add_argument("files", type=Path, nargs="+", metavar="FILE",
                   help="kernel_trace.csv (any version), memory_copy_trace.csv, or rocpd .db")
    common(r)
    r.add_argument("--device-index", type=int, default=None, metavar="I",
                   help="agent to keep when the profile holds several (the N of 'Agent N')")
    r.set_defaults(func=_run_rocprof)

    n = kinds.add_parser("nsys", help="nsys stats --report cuda_gpu_kern_sum --format csv")
    n.add_argument("csv", type=Path, metavar="cuda_gpu_kern_sum.csv")
    common(n)
    n.set_defaults(func=_run_nsys)

    imp.set_defaults(func=lambda _a: _usage(imp))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help(sys.stderr)
    return 2


def _fail(exc: BaseException | str) -> int:
    from roofline_tui.core.textsafe import printable

    print(f"roofline import: error: {printable(str(exc), limit=500)}", file=sys.stderr)
    return 1


def _finish(doc: dict[str, Any], out: Path, tool: str, device: Any,
            notes: list[str] | None = None) -> int:
    from roofline_tui.importers.finish import finish_import

    done = finish_import(doc, out, tool=tool, device=device, notes=notes)
    for line in done.stderr:
        print(line, file=sys.stderr)
    for line in done.stdout:
        print(line)
    return 0


def _capture_sizes(text: str) -> list[int]:
    out = []
    for part in text.split(","):
        part = part.strip()
        if part:
            if not part.isdigit():
                raise ImportProblem(f"--capture-sizes: {part!r} is not a positive integer")
            out.append(int(part))
    return out


def _run_torch(args: argparse.Namespace) -> int:
    from roofline_tui.importers.torch_trace import import_torch

    try:
        result = import_torch(args.trace, top=args.top, device_index=args.device_index,
                              isl=args.isl, osl=args.osl, conc=args.conc,
                              capture_sizes=_capture_sizes(args.capture_sizes))
        if len(result.device.devices) > 1:
            print(result.device.message)
        return _finish(result.doc, args.out, "torch", result.device_info, result.notes)
    except ImportProblem as exc:
        return _fail(exc)
    except MemoryError:
        return _fail("out of memory while reading the trace")


def _run_rocprof(args: argparse.Namespace) -> int:
    from roofline_tui.importers.tables import import_rocprofv3

    try:
        result = import_rocprofv3(args.files, top=args.top, device_index=args.device_index)
        if result.device_message.startswith("profile has"):
            print(result.device_message)
        return _finish(result.doc, args.out, "rocprofv3", result.device_info)
    except ImportProblem as exc:
        return _fail(exc)


def _run_nsys(args: argparse.Namespace) -> int:
    from roofline_tui.importers.tables import import_nsys

    try:
        result = import_nsys(args.csv, top=args.top)
        return _finish(result.doc, args.out, "nsys", None)
    except ImportProblem as exc:
        return _fail(exc)
