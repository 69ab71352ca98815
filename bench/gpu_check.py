"""GPU end-to-end check (CUDA machine with PyTorch; written for an H200).

    python bench/gpu_check.py [--out DIR] [--device H200] [--gfx sm_90]

1. profiles three ops with torch.profiler (record_shapes=True): a large bf16 GEMM, a large
   device-to-device copy and a tiny elementwise op;
2. exports the Kineto chrome trace and imports it with ``roofline import torch``;
3. writes ``env_report.json`` (gfx sm_90, product H200) beside the round;
4. runs ``roofline analyze ROUND_DIR --device H200 --json`` and prints each head's verdict;
5. checks the expected verdicts: the GEMM compute-bound at a plausible fraction of peak, the
   copy memory-bound near the bandwidth roof, the tiny op dispatch-bound (latency, no verdict).

Exit status 0 when all three expectations hold, 1 otherwise (2 when no CUDA device).
"""

from __future__ import annotations

import argparse
import json
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


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None, help="work directory (default: temp)")
    ap.add_argument("--device", default="H200", help="device name for roofline analyze")
    ap.add_argument("--gfx", default="sm_90", help="arch written into env_report.json")
    ap.add_argument("--trace", type=Path, default=None,
                    help="skip profiling and check this existing Kineto trace instead")
    args = ap.parse_args()
    work = args.out or Path(tempfile.mkdtemp(prefix="roofline_gpu_check_"))
    work.mkdir(parents=True, exist_ok=True)
    if args.trace is not None:
        return check(args.trace, work / "profile" / "round_0", args)
    try:
        import torch
    except ImportError:
        print("gpu_check: PyTorch is not installed", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("gpu_check: no CUDA device visible", file=sys.stderr)
        return 2

    trace = work / "trace.json"
    info = profile(trace)
    print(f"profiled on {info['gpu']} (torch {info['torch']}); trace {trace} "
          f"({trace.stat().st_size / 1e6:.1f} MB)")
    return check(trace, work / "profile" / "round_0", args)


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
