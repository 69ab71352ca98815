"""Real profiler output from the wild (issue 13), on the trimmed fixtures in tests/fixtures/wild.

Totals are checked against an independent sum computed here straight from the file (json.load /
csv), never against numbers the importer produced."""

from __future__ import annotations

import csv
import json
import sqlite3
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.finish import finish_import
from roofline_tui.importers.nsys import import_nsys
from roofline_tui.importers.rocprof import import_rocprofv3, rocpd_uri
from roofline_tui.importers.torch import TorchOptions, import_torch, parse_step
from tests.paths import REAL_FORMATS, REPO_ROOT, WILD_FIXTURES

F = WILD_FIXTURES


def _gpu_sums(doc: dict, cats: set[str]) -> tuple[dict[str, list[float]], float]:
    per: dict[str, list[float]] = defaultdict(list)
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and str(e.get("cat")).lower() in cats:
            per[e["name"]].append(float(e["dur"]))
    return per, sum(sum(v) for v in per.values())


# ------------------------------------------------------------------------------- item 1


def test_kineto_1_8_dialect_is_read() -> None:
    """PyTorch 1.8: ``Kernel``/``Memcpy``/``Memset``/``Runtime``/``Operator``, ``Input Dims``,
    ``external id``. Total = the independent sum of the 15 GPU events' ``dur``."""
    raw = json.loads((F / "kineto_1.8_resnet50_trimmed.json").read_text())
    per, total = _gpu_sums(raw, {"kernel", "memcpy", "memset"})
    res = import_torch(F / "kineto_1.8_resnet50_trimmed.json", TorchOptions(top=100), progress=False)
    doc = res.doc
    assert doc["num_kernel_launches"] == sum(len(v) for v in per.values()) == 15
    assert doc["total_gpu_time_ms"] == round(total / 1000, 4)
    for k in doc["top_kernels"]:
        assert k["calls"] == len(per[k["name"]])
    # shapes come from the Operator around the Runtime launch ("Input Dims")
    conv = next(k for k in doc["top_kernels"] if k["short_name"].startswith("volta_scudnn"))
    assert conv["shapes"][0][:2] == [[32, 3, 224, 224], [64, 3, 7, 7]]
    assert res.device_info is not None and res.device_info.arch == "sm_70"


def test_no_gpu_events_says_what_the_trace_holds(tmp_path: Path) -> None:
    raw = json.loads((F / "kineto_1.8_resnet50_trimmed.json").read_text())
    raw["traceEvents"] = [e for e in raw["traceEvents"]
                          if str(e.get("cat")).lower() not in ("kernel", "memcpy", "memset")]
    n_ops = sum(1 for e in raw["traceEvents"] if e.get("cat") == "Operator")
    del raw["deviceProperties"]
    p = tmp_path / "cpu_only.json"
    p.write_text(json.dumps(raw))
    with pytest.raises(ImportProblem) as exc:
        import_torch(p, progress=False)
    msg = str(exc.value)
    assert "no GPU events" in msg and "CPU-only trace" in msg
    assert f"{n_ops:,} operator" in msg and "no deviceProperties" in msg


# ------------------------------------------------------------------------------- item 2


def test_cpu_step_markers_give_phases_through_correlation() -> None:
    """SGLang: the steps are CPU ``user_annotation`` spans only; each kernel is attributed via
    its launch (correlation, else ac2g flow). ``execute_32_context_0(...)_generation_32(...)``
    encloses ``step[DECODE bs=32]``: one decode step of batch 32, not two."""
    doc = import_torch(F / "sglang_mi300x_decode_trimmed.json", TorchOptions(top=100), progress=False).doc
    sv = doc["serving"]
    assert (sv["n_prefill_steps"], sv["n_decode_steps"], sv["decode_batch_captured"]) == (0, 1, 32)
    raw = json.loads((F / "sglang_mi300x_decode_trimmed.json").read_text())
    step = next(e for e in raw["traceEvents"] if e["name"].startswith("execute_"))
    launches = {e["args"]["correlation"]: e["ts"] for e in raw["traceEvents"]
                if e.get("cat") == "cuda_runtime"}
    inside = [e for e in raw["traceEvents"] if e.get("cat") == "kernel"
              and step["ts"] <= launches.get(e["args"]["correlation"], -1)
              <= step["ts"] + step["dur"]]
    assert inside  # the launches happened inside the CPU step
    measured = sum(k.get("phase_calls_measured", {}).get("decode", 0) for k in doc["top_kernels"])
    assert measured == len(inside)
    assert all(k.get("phase") == "decode" for k in doc["top_kernels"]
               if k.get("phase_calls_measured"))


def test_sglang_extend_step_is_prefill(tmp_path: Path) -> None:
    raw = json.loads((F / "sglang_mi300x_decode_trimmed.json").read_text())
    for e in raw["traceEvents"]:
        if e.get("cat") == "user_annotation":
            e["name"] = "step[EXTEND bs=15 toks=15360]" if e["name"].startswith("step[") \
                else "python_wrapper"
    p = tmp_path / "extend.json"
    p.write_text(json.dumps(raw))
    doc = import_torch(p, progress=False).doc
    assert (doc["serving"]["n_prefill_steps"], doc["serving"]["n_decode_steps"]) == (1, 0)
    k = next(k for k in doc["top_kernels"] if k.get("est_shape"))
    assert k["est_shape"]["prefill"]["M"] == 15360
    assert parse_step("step[DECODE bs=32]", {}) == ("decode", 0, 32)
    assert parse_step("step[IDLE]", {}) is None


# ------------------------------------------------------------------------------- item 3


def test_graph_capture_warns_launches_far_outnumber_kernels(cli, tmp_path: Path) -> None:
    """60 hip*LaunchKernel calls, 10 GPU events (7 kernels + 3 memcpy): the Top-N misses the
    kernels launched inside the capture; said in the notes, the typed field and on stderr."""
    doc = import_torch(F / "vllm_graph_capture_trimmed.json", progress=False).doc
    gr = doc["graph_replay"]
    assert (gr["launch_calls"], gr["kernel_events"], gr["graph_launches"]) == (60, 10, 0)
    assert "misses" in gr["warning"] and any("graph replay" in n for n in doc["notes"])
    proc = cli("torch", F / "vllm_graph_capture_trimmed.json", "--out", tmp_path / "r")
    assert proc.returncode == 0
    assert "warning: graph replay: 60 kernel launch calls" in proc.stderr
    md = (tmp_path / "r" / "profile_topN.md").read_text()
    assert "graph replay" in md
    from roofline_tui.core.inputs import load_topn
    topn, _problems, _inc = load_topn(tmp_path / "r" / "profile_topN.json")
    assert topn is not None and topn.graph_replay is not None
    assert topn.graph_replay.launch_calls == 60 and "misses" in (topn.graph_replay.warning or "")
    # analyze carries it into the artifact's typed field (the dashboard's) and its markdown
    run = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(tmp_path / "r")],
                         capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    art = json.loads((tmp_path / "r" / "profile_roofline.json").read_text())
    assert art["graph_replay"]["kernel_events"] == 10
    assert art["graph_replay"]["warning"].startswith("graph replay: 60 kernel launch calls")
    assert "**Graph replay**" in (tmp_path / "r" / "profile_roofline.md").read_text()


def test_graph_launch_replayed_kernels_name_why_they_have_no_shapes() -> None:
    doc = import_torch(F / "sglang_mi300x_decode_trimmed.json", progress=False).doc
    assert doc["graph_replay"]["graph_launches"] == 1
    replayed = [k for k in doc["top_kernels"] if k.get("notes")]
    assert replayed and all(k["shapes"] == [] for k in replayed)
    assert "replayed from a CUDA/HIP graph" in replayed[0]["notes"][0]


# ------------------------------------------------------------------------------- item 4


def _console_rows(path: Path) -> list[tuple[int, int, str]]:
    """(total ns, instances, name) of the kernel table, parsed by hand."""
    out: list[tuple[int, int, str]] = []
    on = False
    for line in path.read_text().splitlines():
        if "cuda_gpu_kern_sum):" in line:
            on = True
            continue
        if on and line.strip().startswith("---"):
            continue
        if on and line.strip().startswith("Time"):
            continue
        if on and not line.strip():
            if out:
                break
            continue
        if on:
            parts = line.split()
            out.append((int(parts[1].replace(",", "")), int(parts[2].replace(",", "")),
                        " ".join(parts[8:])))
    return out


def test_nsys_console_table_with_separators_and_cut_names() -> None:
    path = F / "nsys2025_console_llamacpp_trimmed.txt"
    rows = _console_rows(path)
    assert len(rows) == 6
    res = import_nsys(path, top=100)
    doc = res.doc
    assert doc["num_kernel_launches"] == sum(r[1] for r in rows)
    assert doc["total_gpu_time_ms"] == round(sum(r[0] for r in rows) / 1e6, 4)
    top = doc["top_kernels"][0]
    # 16,650,623,556 ns over 253,109 instances: the first row of the real table
    assert (top["short_name"], top["calls"], top["total_ms"]) == ("mul_mat_vec", 253109,
                                                                  16650.6236)
    assert top["name"].endswith("…")
    assert any("cut with '…'" in n for n in doc["notes"])


def test_nsys_old_layout_is_read(tmp_path: Path) -> None:
    """The 2020-era "CUDA Kernel Statistics" console layout (``Time(%)``, ``Total Time`` in
    ns, ``Instances``); the table is constructed in that layout for this test."""
    p = tmp_path / "old.txt"
    p.write_text(
        "CUDA Kernel Statistics (nanoseconds)\n\n"
        " Time(%)  Total Time  Instances   Average   Minimum   Maximum  Name\n"
        " -------  ----------  ---------  --------  --------  --------  ----------------------\n"
        "    75.0     3000000        100   30000.0     29000     31000  void gemm_kernel<float>(float*)\n"
        "    25.0     1000000         50   20000.0     19000     21000  relu_kernel(float*, int)\n")
    doc = import_nsys(p).doc
    assert doc["total_gpu_time_ms"] == 4.0 and doc["num_kernel_launches"] == 150
    assert [k["short_name"] for k in doc["top_kernels"]] == ["gemm_kernel", "relu_kernel"]


def test_nsys_multi_report_without_kernel_data_is_refused_plainly() -> None:
    with pytest.raises(ImportProblem) as exc:
        import_nsys(F / "mineru_nsys2025.1.1_stats_multi_report_TRIMMED.csv")
    msg = str(exc.value)
    assert "does not contain CUDA kernel data" in msg and "osrt_sum" in msg
    assert "Name, Total Time" not in msg  # no longer lists the very columns it asks for


def test_nsys_kernel_table_found_after_other_reports(tmp_path: Path) -> None:
    """A multi-report CSV dump whose kernel table comes after osrt_sum (its own header also
    starts with ``Time (%)``): the osrt rows must not be read as kernels."""
    head = (F / "mineru_nsys2025.1.1_stats_multi_report_TRIMMED.csv").read_text()
    head = head[: head.index("Processing [/data/MinerU/pipeline_nsys.sqlite] with "
                             "[/opt/nvidia/nsight-compute/2025.1.1/host/target-linux-x64/"
                             "reports/cuda_gpu_kern_sum.py]")]
    kern = (F / "doc_nsys2025.3.2_armv8_cuda_gpu_kern_sum_stdout.csv").read_text()
    p = tmp_path / "multi.csv"
    p.write_text(head + kern.split("\n", 1)[1])
    doc = import_nsys(p).doc
    assert doc["num_distinct_kernels"] == 1
    assert doc["top_kernels"][0]["short_name"] == "saxpyKernel"
    assert doc["total_gpu_time_ms"] == 179.1066  # 179,106,560 ns


# ------------------------------------------------------------------------------- item 5


def test_bad_rows_are_skipped_counted_and_reported(cli, tmp_path: Path) -> None:
    """20 rows, two with EndNs < BeginNs (lines 10 and 19): 18 kept, total = their sum."""
    path = F / "llm170_rocprof_results_first20rows_RDNA.csv"
    rows = list(csv.DictReader(path.open()))
    good = [int(r["EndNs"]) - int(r["BeginNs"]) for r in rows if int(r["EndNs"]) >= int(r["BeginNs"])]
    assert len(rows) == 20 and len(good) == 18
    res = import_rocprofv3([path])
    assert res.skipped == 2
    assert res.doc["num_kernel_launches"] == 18
    assert res.doc["total_gpu_time_ms"] == round(sum(good) / 1e6, 4)
    assert any("2 row(s) skipped: end before start" in n for n in res.doc["notes"])
    proc = cli("rocprofv3", path, "--out", tmp_path / "r")
    assert proc.returncode == 0 and "warning:" in proc.stderr and "skipped" in proc.stderr
    assert "skipped" in (tmp_path / "r" / "profile_topN.md").read_text()


def test_only_bad_rows_is_refused(tmp_path: Path) -> None:
    path = F / "llm170_rocprof_results_first20rows_RDNA.csv"
    lines = path.read_text().splitlines()
    p = tmp_path / "bad.csv"
    p.write_text("\n".join([lines[0], lines[9], lines[18]]) + "\n")
    with pytest.raises(ImportProblem, match="2 bad rows skipped, none valid"):
        import_rocprofv3([p])


# ------------------------------------------------------------------------------- item 6


def test_rocprofv3_json_is_streamed() -> None:
    path = F / "rocprofv3_mi350x_results_trimmed.json"
    raw = json.loads(path.read_text())["rocprofiler-sdk-tool"][0]
    disp = raw["buffer_records"]["kernel_dispatch"]
    total = sum(d["end_timestamp"] - d["start_timestamp"] for d in disp)
    res = import_rocprofv3([path], top=100)
    assert res.doc["num_kernel_launches"] == len(disp) == 30
    assert res.doc["total_gpu_time_ms"] == round(total / 1e6, 4)
    assert res.device_info is not None and res.device_info.arch == "gfx950"
    names = {s["kernel_id"]: s["demangled_kernel_name"] for s in raw["kernel_symbols"]}
    assert {k["name"] for k in res.doc["top_kernels"]} <= set(names.values())


def test_rocprofv3_json_huge_integers_never_overflow(tmp_path: Path) -> None:
    """A 400-digit timestamp is one bad record, not an OverflowError."""
    text = (F / "rocprofv3_mi350x_results_trimmed.json").read_text()
    first = json.loads(text)["rocprofiler-sdk-tool"][0]["buffer_records"]["kernel_dispatch"][0]
    text = text.replace(f'"end_timestamp":{first["end_timestamp"]}',
                        '"end_timestamp":' + "9" * 400, 1)
    p = tmp_path / "huge.json"
    p.write_text(text)
    res = import_rocprofv3([p])
    assert res.doc["num_kernel_launches"] == 29 and res.skipped == 1


def test_legacy_rocprof_stats_csv() -> None:
    path = F / "rocprofv1_MI250X_stencils_results.stats.csv"
    rows = list(csv.DictReader(path.open()))
    doc = import_rocprofv3([path], top=100).doc
    assert doc["num_kernel_launches"] == sum(int(r["Calls"]) for r in rows) == 1023
    assert doc["total_gpu_time_ms"] == round(sum(int(r["TotalDurationNs"]) for r in rows) / 1e6, 4)
    assert doc["top_kernels"][0]["short_name"] == "compute_fd_z_kernel"


def test_unsupported_formats_are_named() -> None:
    with pytest.raises(ImportProblem, match="rocprofv3 --output-format json"):
        import_torch(F / "rocprofv3_mi350x_results_trimmed.json", progress=False)
    with pytest.raises(ImportProblem, match="rocprof-compute pmc_perf.csv"):
        import_nsys(F / "vcopy_MI350" / "pmc_perf.csv")
    with pytest.raises(ImportProblem, match="Nsight Systems kernel summary"):
        import_rocprofv3([F / "doc_nsys2025.3.2_armv8_cuda_gpu_kern_sum_stdout.csv"])


# ------------------------------------------------------------------------------- item 7


def test_import_records_the_device_and_says_what_next(cli, tmp_path: Path) -> None:
    out = tmp_path / "profile" / "round_0"
    proc = cli("torch", F / "sglang_mi300x_decode_trimmed.json", "--out", out)
    assert proc.returncode == 0, proc.stderr
    env = json.loads((out / "env_report.json").read_text())
    assert env["gfx"] == "gfx942" and env["product"] == "mi300x"
    assert env["device_props"]["numSms"] == 304 and "deviceProperties" in env["source"]
    assert f"next: roofline analyze {out}" in proc.stdout
    assert "needs one for kernels without recorded shapes" in proc.stdout
    # analyze then runs on that device without flags
    run = subprocess.run([sys.executable, "-m", "roofline_tui", "analyze", str(out)],
                         capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert run.returncode == 0, run.stderr
    art = json.loads((out / "profile_roofline.json").read_text())
    assert art["gfx"] == "gfx942"
    # a second import never overwrites the report, even a hand-edited one
    (out / "env_report.json").write_text('{"gfx": "gfx950", "product": "mi355x"}')
    # (--force: the round's Top-N is replaced only when asked)
    proc = cli("rocprofv3", F / "rocprofv3_mi350x_results_trimmed.json", "--out", out, "--force")
    assert proc.returncode == 0
    assert json.loads((out / "env_report.json").read_text())["product"] == "mi355x"
    assert "kept the existing" in proc.stdout


def test_env_report_in_a_parent_is_respected(tmp_path: Path) -> None:
    (tmp_path / "env_report.json").write_text('{"gfx": "gfx950"}')
    res = import_rocprofv3([F / "rocprofv3_mi350x_results_trimmed.json"])
    done = finish_import(res.doc, tmp_path / "profile" / "round_0", tool="rocprofv3",
                         device=res.device_info)
    assert done.env_path is None and not (tmp_path / "profile" / "round_0" /
                                          "env_report.json").exists()


# ------------------------------------------------------------------ issue 16 (importers)


def test_huge_torch_dur_is_a_skipped_event_not_a_crash(tmp_path: Path) -> None:
    raw = json.loads((F / "kineto_1.8_resnet50_trimmed.json").read_text())
    text = json.dumps(raw)
    k = next(e for e in raw["traceEvents"] if e.get("cat") == "Kernel")
    text = text.replace(f'"dur": {k["dur"]}, "args": {{"queued"', '"dur": ' + "9" * 400
                        + ', "args": {"queued"', 1)
    p = tmp_path / "huge.json"
    p.write_text(text)
    res = import_torch(p, progress=False)
    assert res.doc["num_kernel_launches"] == 14
    assert any("1 GPU events without a usable" in n for n in res.notes)


def test_lone_surrogate_names_do_not_crash_import_torch(cli, tmp_path: Path) -> None:
    raw = json.loads((F / "kineto_1.8_resnet50_trimmed.json").read_text())
    text = json.dumps(raw).replace('"name": "volta_scudnn', '"name": "\\ud800volta_scudnn', 1)
    p = tmp_path / "sur.json"
    p.write_text(text)
    proc = cli("torch", p, "--out", tmp_path / "r")
    assert proc.returncode == 0, proc.stderr
    json.loads((tmp_path / "r" / "profile_topN.json").read_text(encoding="utf-8"))


def test_escape_and_pipe_names_are_sanitised_in_the_summary_and_md(cli, tmp_path: Path) -> None:
    evil = "\x1b]52;c;aGk=\x07\x1b[2J|x|"
    raw = {"traceEvents": [{"ph": "X", "cat": "kernel", "name": evil, "pid": 0, "tid": 1,
                            "ts": 1, "dur": 5, "args": {"device": 0}}]}
    p = tmp_path / "evil.json"
    p.write_text(json.dumps(raw))
    proc = cli("torch", p, "--out", tmp_path / "r")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    top_line = next(line for line in proc.stdout.splitlines() if line.startswith("wrote"))
    assert "\\x1b]52" in top_line
    md = (tmp_path / "r" / "profile_topN.md").read_text()
    assert "\x1b" not in md
    row = next(line for line in md.splitlines() if line.startswith("| 1 |"))
    assert row.count("|") - row.count("\\|") == 12  # 11 cells: no unescaped pipe from the name


def _rocpd(path: Path, view_sql: str | None = None) -> Path:
    con = sqlite3.connect(path)
    if view_sql:
        con.execute(view_sql)
    else:
        con.execute("CREATE TABLE kernels (name TEXT, start INTEGER, \"end\" INTEGER, "
                    "agent_abs_index INTEGER)")
        con.execute("INSERT INTO kernels VALUES ('k', 0, 1000, 0)")
    con.commit()
    con.close()
    return path


def test_rocpd_uri_is_quoted_and_creates_nothing(tmp_path: Path) -> None:
    db = _rocpd(tmp_path / "evil?mode=rwc&x=.db")
    assert "%3F" in rocpd_uri(db) and rocpd_uri(db).endswith("?mode=ro")
    before = sorted(p.name for p in tmp_path.iterdir())
    doc = import_rocprofv3([db]).doc
    assert doc["num_kernel_launches"] == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no `evil` created


def test_rocpd_runaway_view_is_stopped_by_the_budget(tmp_path: Path, monkeypatch) -> None:
    db = _rocpd(tmp_path / "bomb.db",
                "CREATE VIEW kernels AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 "
                "FROM c) SELECT 'k' AS name, x AS start, x+1 AS \"end\", 0 AS agent_abs_index "
                "FROM c WHERE x < 0")
    import roofline_tui.importers.rocprof as rocprof
    monkeypatch.setattr(rocprof, "ROCPD_TIME_BUDGET_S", 1.0)
    with pytest.raises(ImportProblem, match="time budget"):
        import_rocprofv3([db])


def test_rocpd_schema_is_checked(tmp_path: Path) -> None:
    db = _rocpd(tmp_path / "odd.db", "CREATE TABLE kernels (foo TEXT)")
    with pytest.raises(ImportProblem, match="lacks the expected columns"):
        import_rocprofv3([db])


def test_pmc_perf_times_name_the_device_beside_them() -> None:
    """rocprof-compute ``sysinfo.csv`` next to the file names the arch (gfx950 on MI350)."""
    res = import_rocprofv3([F / "vcopy_MI350" / "pmc_perf.csv"])
    assert res.device_info is not None and res.device_info.arch == "gfx950"
    assert any("counter-collection run" in n for n in res.doc["notes"])


def test_a_100k_digit_integer_is_one_bad_event(tmp_path: Path) -> None:
    raw = {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 1, "ts": 1, "dur": 7,
         "args": {"device": 0}},
        {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 1, "ts": 1, "dur": 8,
         "args": {"device": 0}}]}
    p = tmp_path / "t.json"
    p.write_text(json.dumps(raw).replace('"dur": 8', '"dur": ' + "9" * 100_000))
    doc = import_torch(p, progress=False).doc
    assert doc["num_kernel_launches"] == 1 and doc["total_gpu_time_ms"] == 0.007


def test_dashboard_degraded_pane_shows_the_graph_replay_warning() -> None:
    from rich.console import Console

    from roofline_tui.app.view import degraded_view
    from roofline_tui.core.artifact import Artifact, GraphReplayInfo

    art = Artifact(graph_replay=GraphReplayInfo(launch_calls=428, graph_launches=0,
                                                kernel_events=7, warning="graph replay: 428 "
                                                "kernel launch calls but only 7 GPU events"),
                   profile_notes=["x.csv: 2 row(s) skipped: end before start"])
    console = Console(width=120, record=True)
    console.print(degraded_view(art))
    text = console.export_text()
    assert "profile (2)" in text and "428 kernel launch calls" in text and "2 row(s)" in text


def test_kernel_trace_names_the_device_from_agent_info_beside_it(tmp_path: Path) -> None:
    """rocprofv3 writes ``<pid>_agent_info.csv`` next to the kernel trace; its GPU row
    (``Name=gfx950``) names the arch. Built from two real files of the shared folder."""
    real = REAL_FORMATS / "rocprofv3"
    trace = real / "rocm-systems_rocprof-compute_MI300A_vecCopy_kernel_trace.csv"
    info = real / "hipkittens_gfx950_bank_test_agent_info.csv"
    if not (trace.exists() and info.exists()):
        pytest.skip("shared real-formats not present")
    (tmp_path / "1_kernel_trace.csv").write_bytes(trace.read_bytes())
    (tmp_path / "1_agent_info.csv").write_bytes(info.read_bytes())
    res = import_rocprofv3([tmp_path / "1_kernel_trace.csv"])
    assert res.device_info is not None and res.device_info.arch == "gfx950"
