from __future__ import annotations

import csv
import sqlite3
from collections import defaultdict
from pathlib import Path

import pytest

from roofline_tui.importers.common import ImportProblem
from roofline_tui.importers.nsys import import_nsys
from roofline_tui.importers.rocprof import import_rocprofv3

from .conftest import REAL, need

ROC = REAL / "rocprofv3"
KERNEL_TRACES = [
    "rocm-systems_rocprof-compute_MI300A_vecCopy_kernel_trace.csv",   # 22 columns, "Agent 2"
    "rocprofiler-sdk_docs_kernel_trace_2024-09.csv",                  # 18 columns, int agent
    "rocprofiler-sdk_docs_kernel_trace_latest.csv",                   # 19 columns
]
NSYS = [
    "polyfhe_cuda_gpu_kern_sum_phantom-L36.csv",
    "polyfhe_cuda_gpu_kern_sum_with_preamble_evalstall-exectime-phantom.csv",
]


def _by_agent(path: Path) -> dict[str, dict[str, list[int]]]:
    out: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            out[row["Agent_Id"]][row["Kernel_Name"]].append(
                int(row["End_Timestamp"]) - int(row["Start_Timestamp"]))
    return out


@pytest.mark.parametrize("sample", KERNEL_TRACES)
def test_rocprofv3_kernel_trace_versions(sample: str) -> None:
    path = need(ROC / sample)
    agents = _by_agent(path)
    assert len(agents) == 1
    per = next(iter(agents.values()))
    total_ns = sum(sum(v) for v in per.values())
    doc = import_rocprofv3([path], top=100).doc
    assert doc["source"] == "rocprofv3"
    assert doc["total_gpu_time_ms"] == round(total_ns / 1e6, 4)
    assert doc["num_kernel_launches"] == sum(len(v) for v in per.values())
    assert doc["num_distinct_kernels"] == len(per)
    for k in doc["top_kernels"]:
        durs = per[k["name"]]
        assert k["calls"] == len(durs)
        assert k["total_ms"] == round(sum(durs) / 1e6, 4)
        assert k["pct_gpu_time"] == round(100 * sum(durs) / total_ns, 2)
        assert k["shapes"] == [] and k["dtypes"] == []


def test_vecopy_exact_figures() -> None:
    path = need(ROC / KERNEL_TRACES[0])
    k = import_rocprofv3([path]).doc["top_kernels"][0]
    assert k["short_name"] == "vecCopy"
    assert k["calls"] == 3
    # 8292 + 5528 + 5488 ns from the three rows
    assert k["total_ms"] == round((8292 + 5528 + 5488) / 1e6, 4)


def test_two_agents_pick_the_busiest_and_device_index(tmp_path: Path) -> None:
    a = need(ROC / KERNEL_TRACES[0])  # agent 2
    b = need(ROC / KERNEL_TRACES[1])  # agent 1, more time
    res = import_rocprofv3([a, b])
    assert "using agent 1" in res.device_message
    assert res.doc["top_kernels"][0]["short_name"] == "addition_kernel"
    res2 = import_rocprofv3([a, b], device_index=2)
    assert res2.doc["top_kernels"][0]["short_name"] == "vecCopy"


def test_counter_collection_is_refused() -> None:
    path = need(ROC / "rocm-systems_docs_counter_collection_latest.csv")
    with pytest.raises(ImportProblem, match="counter_collection"):
        import_rocprofv3([path])


def test_memory_copy_trace_adds_memcpy(tmp_path: Path) -> None:
    kt = need(ROC / KERNEL_TRACES[0])
    mc = tmp_path / "memory_copy_trace.csv"
    mc.write_text(
        '"Kind","Direction","Stream_Id","Source_Agent_Id","Destination_Agent_Id",'
        '"Correlation_Id","Start_Timestamp","End_Timestamp"\n'
        '"MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",0,"Agent 0","Agent 2",7,100,20100\n')
    doc = import_rocprofv3([kt, mc]).doc
    first = doc["top_kernels"][0]
    assert first["name"] == "Memcpy HtoD" and first["classification"] == "memory"
    assert doc["total_gpu_time_ms"] == round((8292 + 5528 + 5488 + 20000) / 1e6, 4)


def make_rocpd(path: Path, dispatches: list[tuple[str, int, int, int]]) -> Path:
    """A rocpd database shaped like rocprofv3's (tables + the `kernels` view of data_views.sql).

    ``dispatches`` holds (kernel name, agent absolute index, start ns, end ns)."""
    con = sqlite3.connect(path)
    con.executescript(
        """
        CREATE TABLE rocpd_string (id INTEGER PRIMARY KEY, guid TEXT, string TEXT);
        CREATE TABLE rocpd_info_agent (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER,
            pid INTEGER, type TEXT, absolute_index INTEGER, logical_index INTEGER,
            type_index INTEGER, name TEXT);
        CREATE TABLE rocpd_info_kernel_symbol (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER,
            pid INTEGER, code_object_id INTEGER, kernel_name TEXT, display_name TEXT,
            sgpr_count INTEGER, arch_vgpr_count INTEGER, accum_vgpr_count INTEGER);
        CREATE TABLE rocpd_kernel_dispatch (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER,
            pid INTEGER, tid INTEGER, agent_id INTEGER, kernel_id INTEGER,
            dispatch_id INTEGER, queue_id INTEGER, stream_id INTEGER, start INTEGER,
            end INTEGER, private_segment_size INTEGER, group_segment_size INTEGER,
            workgroup_size_x INTEGER, workgroup_size_y INTEGER, workgroup_size_z INTEGER,
            grid_size_x INTEGER, grid_size_y INTEGER, grid_size_z INTEGER);
        CREATE VIEW kernels AS SELECT K.id, K.guid, S.display_name AS name, K.dispatch_id,
            K.kernel_id, K.start, K.end, (K.end - K.start) AS duration,
            K.grid_size_x AS grid_x, K.grid_size_y AS grid_y, K.grid_size_z AS grid_z,
            K.workgroup_size_x AS workgroup_x, K.workgroup_size_y AS workgroup_y,
            K.workgroup_size_z AS workgroup_z, K.group_segment_size AS lds_size,
            K.private_segment_size AS scratch_size, S.sgpr_count,
            S.arch_vgpr_count AS vgpr_count, S.accum_vgpr_count,
            A.absolute_index AS agent_abs_index
          FROM rocpd_kernel_dispatch K
          INNER JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
          INNER JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid;
        """
    )
    names = sorted({d[0] for d in dispatches})
    agents = sorted({d[1] for d in dispatches})
    for i, n in enumerate(names, 1):
        con.execute("INSERT INTO rocpd_info_kernel_symbol (id, guid, kernel_name, display_name,"
                    " sgpr_count, arch_vgpr_count, accum_vgpr_count) VALUES (?,?,?,?,16,32,0)",
                    (i, "g", n + ".kd", n))
    for i, a in enumerate(agents, 1):
        con.execute("INSERT INTO rocpd_info_agent (id, guid, type, absolute_index, name) "
                    "VALUES (?,?,?,?,?)", (i, "g", "GPU", a, "gfx942"))
    for j, (n, a, s, e) in enumerate(dispatches, 1):
        con.execute("INSERT INTO rocpd_kernel_dispatch (id, guid, agent_id, kernel_id, "
                    "dispatch_id, start, end, grid_size_x, grid_size_y, grid_size_z, "
                    "workgroup_size_x, workgroup_size_y, workgroup_size_z) "
                    "VALUES (?,?,?,?,?,?,?,1024,1,1,256,1,1)",
                    (j, "g", agents.index(a) + 1, names.index(n) + 1, j, s, e))
    con.commit()
    con.close()
    return path


def test_rocpd_database(tmp_path: Path) -> None:
    gemm = "Cijk_Alik_Bljk_BBS_BH_MT256x224x64_MI16x16x1"
    norm = "void vllm::rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*)"
    db = make_rocpd(tmp_path / "results.db", [
        (gemm, 2, 0, 150_000), (gemm, 2, 200_000, 360_000), (norm, 2, 400_000, 410_000),
        (norm, 3, 0, 5_000),
    ])
    res = import_rocprofv3([db])
    doc = res.doc
    assert "using agent 2" in res.device_message
    assert doc["total_gpu_time_ms"] == 0.32
    g, n = doc["top_kernels"]
    assert (g["name"], g["calls"], g["total_ms"], g["avg_us"]) == (gemm, 2, 0.31, 155.0)
    assert g["pct_gpu_time"] == round(100 * 310 / 320, 2)
    assert g["classification"] == "library_gemm" and g["backend_guess"] == "hipblaslt"
    assert (n["calls"], n["total_ms"]) == (1, 0.01)
    assert n["classification"] == "reduction_norm"
    only3 = import_rocprofv3([db], device_index=3).doc
    assert only3["num_kernel_launches"] == 1


def test_sqlite_without_kernels_view(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(ImportProblem, match="kernels"):
        import_rocprofv3([db])


def _nsys_rows(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Time (%)"))
    return list(csv.DictReader(lines[start:]))


@pytest.mark.parametrize("sample", NSYS)
def test_nsys_kern_sum(sample: str) -> None:
    path = need(REAL / "nsys" / sample)
    rows = _nsys_rows(path)
    total_ns = sum(int(r["Total Time (ns)"]) for r in rows)
    doc = import_nsys(path, top=1000).doc
    assert doc["source"] == "nsys"
    assert doc["num_distinct_kernels"] == len(rows)
    assert doc["num_kernel_launches"] == sum(int(r["Instances"]) for r in rows)
    assert doc["total_gpu_time_ms"] == round(total_ns / 1e6, 4)
    by_name = {r["Name"]: r for r in rows}
    for k in doc["top_kernels"]:
        r = by_name[k["name"]]
        assert k["calls"] == int(r["Instances"])
        assert k["total_ms"] == round(int(r["Total Time (ns)"]) / 1e6, 4)
        # nsys's own Time (%) has one decimal; ours must agree to within its rounding
        assert k["pct_gpu_time"] == pytest.approx(float(r["Time (%)"]), abs=0.051)
    assert doc["top_kernels"][0]["name"] == max(rows, key=lambda r: int(r["Total Time (ns)"]))[
        "Name"]


def test_nsys_preamble_is_skipped() -> None:
    path = need(REAL / "nsys" / NSYS[1])
    assert not path.read_text().startswith("Time (%)")
    doc = import_nsys(path).doc
    assert doc["top_kernels"][0]["short_name"] == "compose_array_kernel"
    assert len(doc["top_kernels"]) == 25
