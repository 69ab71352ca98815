"""GPU end-to-end check (CUDA machine with PyTorch; written for an H200).

    python bench/gpu_check.py [--out DIR] [--device H200] [--gfx sm_90]
                              [--skip-calibrate | --calibrate-only] [--device-index I]

1. profiles three ops with torch.profiler (record_shapes=True): a large bf16 GEMM, a large
   device-to-device copy and a tiny elementwise op;
2. exports the Kineto chrome trace and imports it with ``roofline import torch``;
3. writes ``env_report.json`` (gfx sm_90, product H200) beside the round;
4. runs ``roofline analyze ROUND_DIR --device H200 --json`` and prints each head's verdict;
5. checks the expected verdicts: the GEMM compute-bound at a plausible fraction of peak, the
   copy memory-bound near the bandwidth roof, the tiny op dispatch-bound (latency, no verdict);
6. runs the real ``roofline calibrate --quick`` on the same GPU, loads the section it wrote with
   the engine's peak-table loader, prints each measured ceiling beside the Maximum Achievable
   Matmul FLOPS (MAMF) table's figure for the device as a ratio (and the copy's stream rate
   beside the data sheet's pin rate), and runs ``roofline analyze --peaks`` on the round with it.

Exit status 0 when every expectation holds, 1 otherwise (2 when no CUDA device).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

GEMM_N = 8192                # 8192^3 bf16: 1.1 TFLOP per call
COPY_BYTES = 1 << 30         # 1 GiB read + 1 GiB written per call
TINY_ELEMS = 1024
REPS = 10


def profile(trace_path: Path) -> dict[str, str]:
    import torch
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    dev = torch.device("cuda")
    a = torch.randn(GEMM_N, GEMM_N, device=dev, dtype=torch.bfloat16)
    b = torch.randn(GEMM_N, GEMM_N, device=dev, dtype=torch.bfloat16)
    src = torch.empty(COPY_BYTES // 2, device=dev, dtype=torch.bfloat16).normal_()
    dst = torch.empty_like(src)
    tiny = torch.ones(TINY_ELEMS, device=dev, dtype=torch.float32)

    def work() -> None:
        for _ in range(REPS):
            torch.mm(a, b)
        for _ in range(REPS):
            dst.copy_(src)
        for _ in range(REPS):
            tiny.add_(1.0)

    for _ in range(3):  # warm-up: cuBLAS heuristics, allocator, clocks
        work()
    torch.cuda.synchronize()
    with torch_profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                       record_shapes=True) as prof:
        work()
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace_path))
    return {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}


def run(cmd: list[str]) -> subprocess.CompletedProcess[str]:
    print("$", " ".join(cmd), flush=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.stdout.strip():
        print(proc.stdout.strip() if "--json" not in cmd else "(artifact JSON captured)")
    if proc.stderr.strip():
        print(proc.stderr.strip(), file=sys.stderr)
    return proc


def _role(entry: dict) -> str | None:
    name = (entry.get("name") or "").lower()
    if any(w in name for w in ("gemm", "nvjet", "cutlass", "xmma", "cijk")):
        return "gemm"
    if "memcpy" in name or "copy" in name:
        return "copy"
    if "add" in name or "elementwise" in name or "fill" in name:
        return "tiny"
    return None


# The MAMF table (stas00/ml-engineering, compute/accelerator/README.md): the best mean TFLOP/s
# of a torch matmul over a brute-force shape search, per accelerator, bf16 and fp8 (e4m3).
MAMF_TFLOPS: dict[str, dict[str, float]] = {
    "MI300X": {"bf16": 668.4},
    "MI325X": {"bf16": 784.9},
    "MI355X": {"bf16": 1565.0},
    "A100 SXM": {"bf16": 271.2},
    "H100 SXM": {"bf16": 794.5, "fp8": 1402.6},
    "H200": {"bf16": 794.5, "fp8": 1453.4},
    "GH200": {"bf16": 828.6, "fp8": 1535.0},      # the 144 GB HBM3e, 900 W part
    "B200": {"bf16": 1745.0, "fp8": 3432.5},
    "GB200": {"bf16": 1822.0, "fp8": 3615.6},
}


def mamf_row(device_name: str) -> str | None:
    """The MAMF table row for a device as ``torch.cuda.get_device_name`` prints it, or None
    (PCIe and NVL boards are other parts, with other figures)."""
    name = re.sub(r"[^a-z0-9]+", " ", device_name.lower())
    words = set(name.split())
    squashed = name.replace(" ", "")
    if "pcie" in words or "nvl" in words:
        return None
    if "gh200" in squashed:  # the MAMF row is the 144 GB HBM3e part, not the 96 GB HBM3 one
        return "GH200" if ("hbm3e" in squashed or "144g" in squashed) else None
    for key in ("GB200", "B200", "H200", "MI355X", "MI325X", "MI300X"):
        if key.lower() in squashed:
            return key
    if "h100" in squashed:
        return "H100 SXM"
    if "a100" in squashed and ("sxm" in squashed or "pg509" in squashed):
        return "A100 SXM"
    return None


def calibrate_step(work: Path, round_dir: Path | None, args: argparse.Namespace) -> bool:
    """Run the real quick calibration, load what it wrote, compare it with the MAMF table."""
    sys.path.insert(0, str(REPO))
    from roofline_tui.core.peaks import load_peak_table, resolve_peaks

    out = work / "peaks.measured.md"
    if out.exists():
        out.unlink()
    py = sys.executable
    cal = run([py, "-m", "roofline_tui", "calibrate", "--quick", "--out", str(out),
               "--device-index", str(args.device_index)])
    checks: list[tuple[str, bool]] = [("calibrate --quick exit 0", cal.returncode == 0)]
    sections, problems = load_peak_table(out) if out.exists() else ([], ["not written"])
    checks.append(("the section loads (one section, no loader problems)",
                   len(sections) == 1 and not problems))
    for p in problems:
        print(f"  loader: {p}")
    if sections:
        sec = sections[0]
        peaks = resolve_peaks(sections, gfx=sec.gfx)
        row = mamf_row(sec.product or "")
        print(f"calibrated {sec.product} ({sec.gfx}); MAMF row: {row or 'none for this device'}")
        measured = {d: m.flops for d, m in sec.measured_flops.items()}
        for dtype in ("bf16", "fp16", "fp8"):
            if dtype not in measured:
                print(f"  {dtype:<5} not measured ({sec.unmeasured or 'no reason given'})")
                continue
            tf = measured[dtype] / 1e12
            ref = MAMF_TFLOPS.get(row or "", {}).get(dtype)
            shape = sec.measured_flops[dtype].shape
            vs = f"MAMF {ref:.1f} -> ratio {tf / ref:.3f}" if ref else "no MAMF figure"
            print(f"  {dtype:<5} measured {tf:8.1f} TFLOP/s at {shape:<18} {vs}")
        bf16_ref = MAMF_TFLOPS.get(row or "", {}).get("bf16")
        if bf16_ref and "bf16" in measured:
            ratio = measured["bf16"] / 1e12 / bf16_ref
            checks.append((f"bf16 within 0.6..1.15 of the MAMF figure (ratio {ratio:.3f}; a "
                           "10 s sweep may stop short of the best shape)", 0.6 <= ratio <= 1.15))
        stream = None
        text = out.read_text()
        m = re.search(r"^measured_hbm_bw_bytes_s:\s*(\S+)", text, re.M)
        if m:
            stream = float(m.group(1))
            pin = sec.hbm_bw_bytes_s
            print(f"  HBM   stream {stream / 1e12:.3f} TB/s; memory roof in the section "
                  f"{pin / 1e12:.3f} TB/s -> {stream / pin:.3f}")
            checks.append(("copy stream within 0.5..1.0 of the memory roof",
                           0.5 <= stream / pin <= 1.0 + 1e-9))
        print(f"  compute check: {peaks.compute_check}")
        if round_dir is not None and (round_dir / "profile_topN.json").exists():
            ana = run([py, "-m", "roofline_tui", "analyze", str(round_dir), "--peaks", str(out),
                       "--head-threshold", "0", "--json"])
            ok = ana.returncode == 0
            if ok:
                art = json.loads(ana.stdout[ana.stdout.index("{"):])
                basis = (art.get("peaks") or {}).get("flops_basis") or {}
                print(f"  analyze --peaks: peaks {json.dumps(art.get('peaks'))[:300]}")
                ok = not basis or basis.get("bf16") == "measured"
            checks.append(("roofline analyze --peaks FILE loads it (bf16 roof measured)", ok))
    ok = True
    for label, passed in checks:
        ok &= passed
        print(f"{'PASS' if passed else 'FAIL'}: {label}")
    print(f"measured peaks: {out}")
    return ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="work directory (default: temp)")
    ap.add_argument("--device", default="H200", help="device name for roofline analyze")
    ap.add_argument("--gfx", default="sm_90", help="arch written into env_report.json")
    ap.add_argument("--trace", type=Path, default=None,
                    help="skip profiling and check this existing Kineto trace instead")
    ap.add_argument("--device-index", type=int, default=0, help="GPU for roofline calibrate")
    step = ap.add_mutually_exclusive_group()
    step.add_argument("--skip-calibrate", action="store_true",
                      help="do not run the roofline calibrate step")
    step.add_argument("--calibrate-only", action="store_true",
                      help="run only the roofline calibrate step")
    args = ap.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="roofline_gpu_check_"))
    work.mkdir(parents=True, exist_ok=True)
    round_dir = work / "profile" / "round_0"
    if args.trace is not None:
        code = check(args.trace, round_dir, args)
        return code
    try:
        import torch
    except ImportError:
        print("gpu_check: PyTorch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("gpu_check: no CUDA device visible", file=sys.stderr)
        return 2
    if args.calibrate_only:
        return 0 if calibrate_step(work, None, args) else 1

    trace = work / "trace.json"
    info = profile(trace)
    print(f"profiled on {info['gpu']} (torch {info['torch']}); trace {trace} "
          f"({trace.stat().st_size / 1e6:.1f} MB)")
    code = check(trace, round_dir, args)
    if args.skip_calibrate:
        return code
    torch.cuda.empty_cache()  # the profile's tensors must not crowd the calibration's
    calibrated = calibrate_step(work, round_dir, args)
    return code or (0 if calibrated else 1)


def check(trace: Path, round_dir: Path, args: argparse.Namespace) -> int:

    py = sys.executable
    imp = run([py, "-m", "roofline_tui", "import", "torch", str(trace), "--out", str(round_dir)])
    if imp.returncode != 0:
        print("gpu_check: FAIL import", file=sys.stderr)
        return 1
    env = {"gfx": args.gfx, "product": args.device, "gpu_ids": ["0"], "backend": "torch",
           "trace_sources": ["torch"], "verdict": "ok", "blockers": [], "limitations": []}
    (round_dir / "env_report.json").write_text(json.dumps(env, indent=2) + "\n")
    topn = json.loads((round_dir / "profile_topN.json").read_text())
    for k in topn["top_kernels"]:
        print(f"  topN #{k['rank']}: {k['short_name']:<40} {k['pct_gpu_time']:6.2f}%  "
              f"avg {k['avg_us']:9.2f} us  calls {k['calls']}  shapes {k['shapes'][:1]} "
              f"{k['dtypes']}")

    ana = run([py, "-m", "roofline_tui", "analyze", str(round_dir), "--device", args.device,
               "--head-threshold", "0", "--max-heads", "10", "--json"])
    if ana.returncode != 0:
        print("gpu_check: FAIL analyze", file=sys.stderr)
        return 1
    artifact = json.loads(ana.stdout[ana.stdout.index("{"):])
    print(f"peaks: {json.dumps(artifact.get('peaks'))[:300]}")
    seen: dict[str, dict] = {}
    for e in artifact.get("entries", []):
        role = _role(e)
        print(f"  verdict {e.get('short_name') or e.get('name')!s:<40} role={role} "
              f"op_class={e.get('op_class')} bound={e.get('bound_type')} "
              f"roofline_pct={e.get('roofline_pct')} hbm_util={e.get('hbm_util')} "
              f"compute_util={e.get('compute_util')} headroom={e.get('headroom_class')} "
              f"t_ms={e.get('t_ms')}")
        if role and role not in seen:
            seen[role] = e
    checks = []
    g = seen.get("gemm", {})
    checks.append(("GEMM compute-bound at 0.4..1.0 of the bf16 peak",
                   g.get("bound_type") == "compute"
                   and 0.4 <= float(g.get("roofline_pct") or 0) <= 1.0))
    c = seen.get("copy", {})
    checks.append(("copy memory-bound at >= 0.6 of HBM bandwidth",
                   c.get("bound_type") == "memory"
                   and float(c.get("roofline_pct") or 0) >= 0.6))
    t = seen.get("tiny", {})
    checks.append(("tiny op dispatch-bound (latency, no verdict)",
                   t.get("bound_type") == "latency" and t.get("headroom_class") == "unknown"))
    ok = True
    for label, passed in checks:
        ok &= passed
        print(f"{'PASS' if passed else 'FAIL'}: {label}")
    print(f"artifact: {round_dir / 'profile_roofline.json'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
