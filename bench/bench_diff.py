"""`roofline diff` benchmark, as a ratio (run through ``bench/run``; this file alone runs just
this: ``python bench/bench_diff.py [--quick] [--tree DIR ...]``).

Two rounds of 100,000 Top-N entries each (A, and B: the same run on another build), both
analysed once before anything is timed (``profile_roofline.json`` written, as a user who
compares two analysed runs has them). Every entry past the demo round's own carries what an
imported trace records of its launches (``x_roofline.instances``: the launching op, its
module, the input and weight dims and dtypes), so ops are matched by op key, as across two
builds: B's kernels have other names (another library's), 95 % of the ops are in both rounds
(B's time per op 0.8–1.3× A's), 2.5 % only in A and 2.5 % only in B. The demo round's own
entries (no instances) are matched by kernel name, and its env_report and model config are each
round's. (The engine keeps the 2,000 biggest rows of a Top-N that large as entries and sums the
rest: those are what is matched.)

Figure: the whole ``roofline diff A B`` process (both rounds analysed, matched and printed) over
one ``roofline analyze A``, measured interleaved in the same loop.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from harness import BENCH, PYTHON, Context, Figure, Probe, child_env, compile_tree

ROUND = "round_2"
ROWS = 100_000
ONLY_SHARE = 0.025  # of the padded entries: only in A, and as many only in B

FIGURES = [
    Figure("diff_100k", "`roofline diff A B`, two analysed 100,000-entry rounds",
           "one `roofline analyze` of A", 2.0, "{tree}:diff_100k", "{tree}:diff_analyze_a"),
]

_KINDS = [("Cijk_Alik_Bljk_BBS_BH_MT128x128x64_MI16x16x1", "aten::mm", "MLP/Linear"),
          ("Cijk_Ailk_Bljk_F8BS_MT64x64x128_MI32x32x1", "aten::_scaled_mm", "Attention/Linear"),
          ("rms_norm_kernel", "vllm::rms_norm", "Layer/RMSNorm"),
          ("act_and_mul_kernel", "vllm::silu_and_mul", "MLP/SiluAndMul"),
          ("fused_moe_kernel", "vllm::moe_forward", "MoE/FusedMoE"),
          ("paged_attention_v2", "vllm::unified_attention", "Attention/Attention")]


def _row(i: int, side: str) -> dict[str, object]:
    """Entry ``i`` of side ``side``: one kernel launched by one op with one signature. Its op
    key is unique to ``i`` (the weight's second dim, or the input's last); B's kernel name is
    another library's."""
    kernel, op, module = _KINDS[i % len(_KINDS)]
    calls = 40 + i % 200
    scale = 1.0 if side == "A" else 0.8 + (i % 6) / 10
    avg_us = round((10.0 + i % 50) * scale, 3)
    total_us = round(avg_us * calls, 3)
    n_dim = 1024 + i  # the key's identity dim: one op per entry
    if op in ("aten::mm", "aten::_scaled_mm"):
        dtype = "c10::Float8_e4m3fn" if op == "aten::_scaled_mm" else "c10::BFloat16"
        args = [{"dims": [64, 4096], "type": dtype, "role": "input"},
                {"dims": [4096, n_dim], "type": dtype, "role": "weight"}]
    else:
        args = [{"dims": [64, n_dim], "type": "c10::BFloat16", "role": "input"}]
    name = f"{kernel}_{i}" if side == "A" else f"other_lib_{kernel}_{i}"
    return {"name": name, "calls": calls, "total_ms": round(total_us / 1000, 6),
            "avg_us": avg_us, "pct_gpu_time": round(0.0005 + (i % 7) / 5000, 4),
            "shapes": [[a["dims"] for a in args]], "dtypes": [args[0]["type"]],
            "base_latency_ms": {"decode": round(avg_us / 1000, 6)},
            "calls_per_step": {"decode": 40.0}, "served_regimes": ["decode"],
            "x_roofline": {"instances": [{
                "op": op, "args": args, "source": "launch",
                "module": f"Qwen3Model/Qwen3DecoderLayer/{module}", "calls": calls,
                "total_us": total_us}]}}


# one padded entry in ONLY_EVERY is only in A, the next one only in B
ONLY_EVERY = round(1 / ONLY_SHARE)


def diff_topn(path: Path, n_entries: int, side: str) -> None:
    """Pad a round's profile_topN.json to ``n_entries`` entries of ``side`` (``_row``)."""
    data = json.loads(path.read_text())
    rows = list(data["top_kernels"])
    skip = 1 if side == "A" else 0  # B has no entry i % ONLY_EVERY == 0, A none == 1
    i = len(rows)
    while len(rows) < n_entries:
        if i % ONLY_EVERY != skip:
            rows.append(_row(i, side))
        i += 1
    data["top_kernels"] = rows
    path.write_text(json.dumps(data))


def generate(path: Path, n_entries: int, side: str) -> None:
    """Run :func:`diff_topn` in a child process (the bench process stays small)."""
    code = (f"import sys; sys.path.insert(0, {str(BENCH)!r}); import bench_diff as b; "
            f"from pathlib import Path; b.diff_topn(Path({str(path)!r}), {n_entries}, "
            f"{side!r})")
    subprocess.run([PYTHON, "-c", code], check=True, timeout=600)


def add_probes(ctx: Context) -> None:
    n = ctx.cfg["analyze_runs"]
    for tree in ctx.trees:
        if not (tree.path / "roofline_tui" / "cli" / "diff.py").is_file():
            continue
        compile_tree(tree)
        rounds = {}
        for side in ("A", "B"):
            dst = ctx.work / tree.label / "diff" / side
            dst.mkdir(parents=True, exist_ok=True)
            for f in (tree.demo / "profile" / ROUND).iterdir():
                if f.is_file() and not f.name.startswith("profile_roofline."):
                    shutil.copyfile(f, dst / f.name)
            for name in ("env_report.json", "config.json"):  # the device and the model
                if (tree.demo / name).is_file():
                    shutil.copyfile(tree.demo / name, dst / name)
            generate(dst / "profile_topN.json", ROWS, side)
            # analysed once: the artifact pair is written, as two analysed runs have it
            subprocess.run([PYTHON, "-m", "roofline_tui", "analyze", str(dst)],
                           env=child_env(tree), cwd=str(tree.path), capture_output=True,
                           timeout=600, check=True)
            rounds[side] = dst
        ctx.probes.append(Probe(f"{tree.label}:diff_analyze_a",
                                [PYTHON, "-m", "roofline_tui", "analyze", str(rounds["A"])],
                                tree, n=n, warmup=True))
        ctx.probes.append(Probe(f"{tree.label}:diff_100k",
                                [PYTHON, "-m", "roofline_tui", "diff", str(rounds["A"]),
                                 str(rounds["B"])], tree, n=n, warmup=True))


if __name__ == "__main__":
    import run_all

    raise SystemExit(run_all.main(["--only", "diff", *sys.argv[1:]]))
