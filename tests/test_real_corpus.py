"""Every file in the shared real-formats folder (earlier samples and ``wild/``), when present.

Each file either imports with totals and its top kernel's summed time equal to independent sums
computed here another way (``json.load`` / ``csv`` / plain SQL / a hand split of the console
table), or is refused with the exact line in :data:`REFUSALS`. Counter files go through ``load_counters`` and must yield measurements whose
dispatch counts equal the file's own, or one-line problems.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections import defaultdict
from pathlib import Path

import pytest

from roofline_tui.core.measured import load_counters
from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.proton import import_proton
from roofline_tui.importers.rpd import import_rpd
from roofline_tui.importers.nsys import import_nsys
from roofline_tui.importers.rocprof import import_rocprofv3
from roofline_tui.importers.torch import TorchOptions, import_torch
from tests.paths import REAL_FORMATS

REAL = REAL_FORMATS
FILES = sorted(p for p in REAL.rglob("*") if p.is_file() and p.name != "PROVENANCE.tsv") \
    if REAL.is_dir() else []
GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}
NAMES_WHAT = ("no GPU events", "SKIPPED", "Nsight", "rocprof", "counter", "sysinfo",
              "agent_info", "PyTorch", "kernel trace")

pytestmark = pytest.mark.skipif(not FILES, reason="/work/shared/real-formats not present")


def _text(path: Path) -> str:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return data.decode("utf-8", "replace")


def _route(path: Path, text: str) -> str:
    if "REF_kernel_summary" in path.name:
        return "reference"
    if path.name in REFUSALS:
        return "refused"
    if text.startswith("SQLite format 3"):
        return "rpd" if path.suffix == ".rpd" else "nsys-sqlite"
    if "ROCPROFV3 KERNEL_DISPATCH SUMMARY:" in text:
        return "rocprofv3-summary"
    if path.parent.parent.name == "configs" and path.name == "config.json":
        return "config"
    head = text.lstrip()[:300]
    if head.startswith("{") and "rocprofiler-sdk-tool" in head:
        return "rocprofv3-json"
    if head.startswith("[") and '"process_name"' in head and '"GPU' in text[:2000] \
            and '"desc":"' in text[:64 * 1024]:
        return "rpd-json"
    if head.startswith("[") and '"frame"' in head:
        return "proton"
    if head.startswith(("{", "[")):
        return "torch"
    if "Time (%)" in text or "Time(%)" in text or "SKIPPED:" in text:
        return "nsys"
    first = next((line for line in text.splitlines() if line.startswith(('"', "I", "D", "N", "w",
                                                                         "C", "G"))), "")
    low = first.lower()
    if "totaldurationns" in low:
        return "stats"
    if ("beginns" in low or "start_timestamp" in low) and "counter_name" not in low and not any(
            t in first for t in ("SQ_", "TCC_", "TCP_", "GRBM_")):
        return "kernel-trace"
    return "counters"


def _one_line_naming(exc: ImportProblem) -> None:
    msg = str(exc)
    assert "\n" not in msg and msg
    assert any(w in msg for w in NAMES_WHAT), msg


def _check_torch(path: Path, text: str) -> None:
    doc_raw = json.loads(text)
    events = doc_raw["traceEvents"] if isinstance(doc_raw, dict) else doc_raw
    per_dev: dict[int, float] = defaultdict(float)
    calls: dict[int, int] = defaultdict(int)
    by_name: dict[tuple[object, str], float] = defaultdict(float)
    for e in events:
        if e.get("ph") == "X" and str(e.get("cat")).lower() in GPU_CATS:
            dev = (e.get("args") or {}).get("device", e.get("pid"))
            per_dev[dev] += float(e["dur"])
            calls[dev] += 1
            by_name[(dev, str(e.get("name")))] += float(e["dur"])
    try:
        doc = import_torch(path, TorchOptions(top=10_000), progress=False).doc
    except ImportProblem as exc:
        assert not per_dev, f"{path.name}: refused although it has GPU events: {exc}"
        _one_line_naming(exc)
        return
    dev = max(sorted(per_dev), key=lambda d: per_dev[d])
    assert doc["total_gpu_time_ms"] == pytest.approx(per_dev[dev] / 1000, abs=1e-4)
    assert doc["num_kernel_launches"] == calls[dev]
    top_us = max(t for (d, _n), t in by_name.items() if d == dev)
    assert doc["top_kernels"][0]["total_ms"] == pytest.approx(top_us / 1000, abs=1e-3)


def _check_rocprofv3_json(path: Path, text: str) -> None:
    proc = json.loads(text)["rocprofiler-sdk-tool"]
    total = sum(d["end_timestamp"] - d["start_timestamp"] for p in proc
                for d in p["buffer_records"]["kernel_dispatch"])
    n = sum(len(p["buffer_records"]["kernel_dispatch"]) for p in proc)
    doc = import_rocprofv3([path], top=10_000).doc
    assert doc["num_kernel_launches"] == n
    assert doc["total_gpu_time_ms"] == pytest.approx(total / 1e6, abs=1e-4)


def _check_kernel_trace(path: Path, text: str) -> None:
    rows = list(csv.DictReader(io.StringIO(text)))
    header = {h.strip().lower() for h in (rows[0].keys() if rows else [])}
    if {"domain", "function"} <= header and not header & {"kernel_name", "kernelname"}:
        # an API trace (HIP/HSA calls), not kernels: refused, naming what it is
        with pytest.raises(ImportProblem) as refused:
            import_rocprofv3([path], top=10_000)
        _one_line_naming(refused.value)
        assert "API trace" in str(refused.value)
        return
    per: dict[str, float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    by_name: dict[tuple[str, str], float] = defaultdict(float)
    for r in rows:
        start = r.get("Start_Timestamp") or r.get("BeginNs")
        end = r.get("End_Timestamp") or r.get("EndNs")
        agent = r.get("Agent_Id") or r.get("gpu-id") or r.get("GPU_ID") or ""
        if start and end and int(end) >= int(start):
            per[agent] += int(end) - int(start)
            calls[agent] += 1
            name = r.get("Kernel_Name") or r.get("KernelName") or ""
            by_name[(agent, name)] += int(end) - int(start)
    res = import_rocprofv3([path], top=10_000)
    agent = max(sorted(per), key=lambda a: per[a])
    assert res.doc["total_gpu_time_ms"] == pytest.approx(per[agent] / 1e6, abs=1e-4)
    top_ns = max(t for (a, _n), t in by_name.items() if a == agent)
    assert res.doc["top_kernels"][0]["total_ms"] == pytest.approx(top_ns / 1e6, abs=1e-4)
    assert res.doc["num_kernel_launches"] == calls[agent]
    assert res.skipped == len(rows) - sum(calls.values())


def _check_stats(path: Path, text: str) -> None:
    rows = list(csv.DictReader(io.StringIO(text)))
    if "api_stats" in path.name or "domain_stats" in path.name:
        # another domain's --stats table (API calls): refused, naming the file to use
        with pytest.raises(ImportProblem) as refused:
            import_rocprofv3([path], top=10_000)
        assert "not kernels" in str(refused.value) and "kernel_stats" in str(refused.value)
        return
    doc = import_rocprofv3([path], top=10_000).doc
    assert doc["total_gpu_time_ms"] == pytest.approx(
        sum(int(r["TotalDurationNs"]) for r in rows) / 1e6, abs=1e-4)
    assert doc["top_kernels"][0]["total_ms"] == pytest.approx(
        max(int(r["TotalDurationNs"]) for r in rows) / 1e6, abs=1e-4)
    assert doc["num_kernel_launches"] == sum(int(r["Calls"]) for r in rows)


def _nsys_kernel_rows(text: str) -> list[tuple[float, int]]:
    """(total ns, instances) of the kernel table, by a split of its own."""
    lines = text.splitlines()
    # the kernel report by its name (nsys 2023+: cuda_gpu_kern_sum; nsys 2022: gpukernsum),
    # wherever it stands in a --stats dump
    markers = [i for i, line in enumerate(lines)
               if "cuda_gpu_kern_sum" in line or "'gpukernsum'" in line]
    start = markers[0] if markers else 0
    out: list[tuple[float, int]] = []
    header_seen = False
    is_csv = False
    for line in lines[start:]:
        s = line.strip()
        if not header_seen:
            header_seen = s.startswith(("Time (%)", "Time(%)"))
            is_csv = "," in s
            continue
        if s.startswith("---"):
            continue
        if not s:
            if out:
                break
            continue
        if is_csv:
            cells = next(csv.reader([s]))
            out.append((float(cells[1].replace(",", "")), int(cells[2].replace(",", ""))))
        else:
            parts = s.split()
            out.append((float(parts[1].replace(",", "")), int(parts[2].replace(",", ""))))
    return out


def _check_nsys(path: Path, text: str) -> None:
    rows = _nsys_kernel_rows(text)
    try:
        doc = import_nsys(path, top=10_000).doc
    except ImportProblem as exc:
        assert not rows, f"{path.name}: refused although it has a kernel table: {exc}"
        _one_line_naming(exc)
        return
    assert doc["total_gpu_time_ms"] == pytest.approx(sum(r[0] for r in rows) / 1e6, abs=1e-4)
    assert doc["num_kernel_launches"] == sum(r[1] for r in rows)
    assert doc["top_kernels"][0]["total_ms"] == pytest.approx(max(rows)[0] / 1e6, abs=1e-4)


def _check_counters(path: Path, text: str) -> None:
    siblings = [p for p in path.parent.glob("*sysinfo*.csv") if p != path]
    cs = load_counters([path, *siblings])
    for line in cs.problems:
        assert "\n" not in line
    if not cs.measurements:
        assert cs.problems, f"{path.name}: neither measurements nor a reason"
        return
    rows = list(csv.reader(io.StringIO(text)))
    hdr = next(i for i, r in enumerate(rows) if any(
        c.strip().lower() in ("kernel_name", "kernel name", "kernelname") for c in r))
    head = [c.strip().lower() for c in rows[hdr]]
    id_col = next(head.index(c) for c in ("dispatch_id", "id", "index", "correlation_id")
                  if c in head)
    ids = {r[id_col] for r in rows[hdr + 1:] if len(r) > id_col and r[id_col].strip()}
    n = sum(m.dispatches for m in cs.measurements.values())
    assert n == len(ids), f"{path.name}: {n} dispatches measured, the file has {len(ids)}"


def _check_config(path: Path, text: str) -> None:
    """A model's public config.json (an input of analyze, not profiler output): it normalises
    to a model shape whose hidden size and layer count are the file's own."""
    from roofline_tui.core.model_config import load_model_config

    raw = json.loads(text)
    raw = raw.get("text_config", raw)
    shape, problems = load_model_config(path)
    assert shape is not None, problems
    assert shape.hidden_size == raw["hidden_size"]
    assert shape.num_layers == raw["num_hidden_layers"]


# Files refused on purpose: (command, the exact line it prints after "roofline import: error: ")
REFUSALS: dict[str, tuple[str, str]] = {
    "tracelens_jax_MI300_conv_minimal.xplane.pb": (
        "torch", "tracelens_jax_MI300_conv_minimal.xplane.pb: a JAX/XLA profile (XSpace "
        "protobuf, .xplane.pb), not for `roofline import torch`; not supported: this tool "
        "reads PyTorch (Kineto), rocprofv3 and Nsight Systems profiles; profile the run with "
        "one of them"),
    "hta_cpu_only_rank34.pt.trace.json.gz": (
        "torch", "hta_cpu_only_rank34.pt.trace.json.gz: no GPU events (kernel/memcpy/memset) "
        "in the trace: CPU-only trace: 11 user_annotation, 4 cpu_op, 1 trace events, no "
        "deviceProperties"),
    "rocm-systems_docs_hip_api_stats.csv": (
        "rocprofv3", "rocm-systems_docs_hip_api_stats.csv: a rocprofv3 --stats hip_api_stats.csv "
        "(HIP API calls), not kernels; import the kernel_stats.csv of the same --stats run "
        "instead"),
    "rocm-systems_docs_rocpd2csv_api_trace.csv": (
        "rocprofv3", "rocm-systems_docs_rocpd2csv_api_trace.csv: a rocpd2csv API trace "
        "(HIP_COMPILER_API_EXT, HIP_RUNTIME_API_EXT: one row per API call, no kernels), not a "
        "kernel trace; import the kernel trace CSV of the same run instead (rocpd2csv writes it "
        "as *_kernel_trace.csv)"),
    "xplacer_ncu2020_csv_V100_aws_bfs_graph4096.log": (
        "nsys", "xplacer_ncu2020_csv_V100_aws_bfs_graph4096.log: an Nsight Compute (ncu / "
        "nv-nsight-cu-cli) CSV log (counters per kernel), not for `roofline import nsys`; give "
        "it to `roofline analyze --counters`"),
}


def _check_refused(path: Path, text: str) -> None:
    """The exact line, through the command line (exit 1, nothing written)."""
    import subprocess
    import sys
    import tempfile

    command, line = REFUSALS[path.name]
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run([sys.executable, "-m", "roofline_tui", "import", command,
                               str(path), "--out", str(Path(tmp) / "r")],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 1
        assert proc.stderr.strip() == f"roofline import: error: {line}"
        assert not (Path(tmp) / "r" / "profile_topN.json").exists()


def _check_nsys_sqlite(path: Path, text: str) -> None:
    """Totals per device by plain SQL (kernels + memcpys + memsets), the busiest device; the
    top kernel's summed time by name."""
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        per_dev: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                      "CUPTI_ACTIVITY_KIND_MEMSET"):
            if table in tables:
                for dev, ns, n in con.execute(f"SELECT deviceId, SUM(end - start), COUNT(*) "
                                              f"FROM {table} GROUP BY deviceId"):
                    per_dev[dev][0] += ns
                    per_dev[dev][1] += n
        dev = max(sorted(per_dev), key=lambda d: per_dev[d][0])
        top_ns = con.execute("SELECT SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                             "JOIN StringIds s ON s.id = k.demangledName WHERE k.deviceId = ? "
                             "GROUP BY s.value ORDER BY 1 DESC LIMIT 1", (dev,)).fetchone()[0]
    finally:
        con.close()
    doc = import_nsys(path, top=10_000).doc
    assert doc["total_gpu_time_ms"] == pytest.approx(per_dev[dev][0] / 1e6, abs=1e-4)
    assert doc["num_kernel_launches"] == per_dev[dev][1]
    assert doc["top_kernels"][0]["total_ms"] == pytest.approx(top_ns / 1e6, abs=1e-4)


def _check_rocprofv3_summary(path: Path, text: str) -> None:
    """The KERNEL_DISPATCH table split by hand: NAME | DOMAIN | CALLS | DURATION (nsec)."""
    lines = text.splitlines()
    at = lines.index("ROCPROFV3 KERNEL_DISPATCH SUMMARY:")
    rows = []
    for line in lines[at + 4:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append((int(cells[3]), int(cells[2])))
    doc = import_rocprofv3([path], top=10_000).doc
    assert doc["num_kernel_launches"] == sum(r[1] for r in rows)
    assert doc["total_gpu_time_ms"] == pytest.approx(sum(r[0] for r in rows) / 1e6, abs=1e-4)
    assert doc["top_kernels"][0]["total_ms"] == pytest.approx(max(rows)[0] / 1e6, abs=1e-4)


# Files the readers do not handle yet, each with the open issue that covers it. strict: the
# test fails as soon as one of them passes, so this list cannot outlive its fix.
KNOWN_GAPS: dict[str, str] = {}


def _check_rpd(path: Path, text: str) -> None:
    """Plain SQL over rocpd_op: every op's end - start, kernels (KernelExecution, Task) and
    copies alike, on the GPU with the most time; the top entry is the largest name's sum."""
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        rows = con.execute("SELECT o.gpuId, o.end - o.start, d.string, t.string FROM rocpd_op o "
                           "JOIN rocpd_string d ON d.id = o.description_id "
                           "JOIN rocpd_string t ON t.id = o.opType_id").fetchall()
    finally:
        con.close()
    per: dict[int, float] = defaultdict(float)
    by_name: dict[tuple[int, str], float] = defaultdict(float)
    for gpu, dur, desc, optype in rows:
        per[gpu] += dur
        by_name[(gpu, desc if optype in ("KernelExecution", "Task") else optype)] += dur
    dev = max(sorted(per), key=lambda d: per[d])
    doc = import_rpd(path, top=10_000).doc
    assert doc["total_gpu_time_ms"] == pytest.approx(per[dev] / 1e6, abs=1e-4)
    assert doc["num_kernel_launches"] == sum(1 for r in rows if r[0] == dev)
    top = max(t for (d, _n), t in by_name.items() if d == dev)
    assert doc["top_kernels"][0]["total_ms"] == pytest.approx(top / 1e6, abs=1e-4)


def _check_rpd_json(path: Path, text: str) -> None:
    """The X events of the processes named GPU<n> (durations in µs strings), by hand."""
    events = json.loads(text)
    gpus = {e["pid"] for e in events if isinstance(e, dict) and e.get("ph") == "M"
            and e.get("name") == "process_name" and str(e["args"]["name"]).startswith("GPU")}
    durs = [float(e["dur"]) for e in events if isinstance(e, dict) and e.get("ph") == "X"
            and e.get("pid") in gpus]
    doc = import_rpd(path, top=10_000).doc
    assert doc["num_kernel_launches"] == len(durs)
    assert doc["total_gpu_time_ms"] == pytest.approx(sum(durs) / 1000, abs=1e-4)


def _check_proton(path: Path, text: str) -> None:
    """Leaves of the call tree with a count: their time on the busiest device, by hand."""
    per: dict[str, float] = defaultdict(float)
    stack = [json.loads(text)[0]]
    while stack:
        node = stack.pop()
        if node.get("children"):
            stack.extend(node["children"])
        elif node["metrics"].get("count"):
            per[str(node["metrics"]["device_id"])] += node["metrics"]["time (ns)"]
    dev = max(sorted(per), key=lambda d: per[d])
    doc = import_proton(path, top=10_000).doc
    assert doc["total_gpu_time_ms"] == pytest.approx(per[dev] / 1e6, abs=1e-6)
    counters = load_counters([path])
    assert counters.measurements, counters.problems


def _param(path: Path) -> object:
    gap = KNOWN_GAPS.get(path.name)
    marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
    return pytest.param(path, marks=marks, id=str(path.relative_to(REAL)))


@pytest.mark.parametrize("path", [_param(p) for p in FILES])
def test_every_real_file(path: Path) -> None:
    text = _text(path)
    route = _route(path, text)
    if route == "reference":
        pytest.skip("a TraceLens reference summary, checked in test_tracelens_reference")
    {"torch": _check_torch, "rocprofv3-json": _check_rocprofv3_json,
     "kernel-trace": _check_kernel_trace, "stats": _check_stats, "nsys": _check_nsys,
     "counters": _check_counters, "config": _check_config, "refused": _check_refused,
     "nsys-sqlite": _check_nsys_sqlite, "rpd": _check_rpd, "rpd-json": _check_rpd_json,
     "proton": _check_proton,
     "rocprofv3-summary": _check_rocprofv3_summary}[route](path, text)


def test_tracelens_reference() -> None:
    """TraceLens's own kernel summary of the H100 trace: its kernel total equals the sum of our
    kernel entries (the trace's memset/memcpy events are extra in our total)."""
    ref = REAL / "wild" / "tracelens_h100_qwen1.5-0.5b.REF_kernel_summary.csv"
    trace = REAL / "wild" / "tracelens_h100_qwen1.5-0.5b.json.gz"
    if not (ref.exists() and trace.exists()):
        pytest.skip("reference pair not present")
    rows = list(csv.DictReader(io.StringIO(ref.read_text())))
    ref_us = sum(float(r["Kernel duration (µs)_sum"]) for r in rows)
    ref_calls = sum(int(r["Kernel duration (µs)_count"]) for r in rows)
    doc = import_torch(trace, TorchOptions(top=10_000), progress=False).doc
    kernels = [k for k in doc["top_kernels"] if k["classification"] != "memory"
               and not k["name"].startswith(("Memset", "Memcpy"))]
    assert sum(k["calls"] for k in kernels) == ref_calls
    assert sum(k["total_ms"] for k in kernels) == pytest.approx(ref_us / 1000, abs=0.01)
