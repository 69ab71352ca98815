"""What every importer does after parsing: write the round, record the device, and say in a
few lines what was written, what was noticed and what to run next. The CLI glue only prints
these lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline_tui.core import units
from roofline_tui.core.textsafe import printable
from roofline_tui.importers.common import write_round
from roofline_tui.importers.device import DeviceInfo, next_steps, write_env_report


@dataclass
class Finished:
    topn_path: Path
    env_path: Path | None
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)


def summary(doc: dict[str, Any], path: Path) -> str:
    """The ``wrote …`` line; every string that came from the profile is sanitised."""
    head = doc["top_kernels"][0]
    return (f"wrote {printable(path)}: {printable(doc['source'])}, "
            f"{units.millis(doc['total_gpu_time_ms'])} GPU time, "
            f"{doc['num_kernel_launches']} launches, {doc['num_distinct_kernels']} kernels; "
            f"top: {printable(head['short_name'], limit=60)} "
            f"{units.pct_points(head['pct_gpu_time'])}")


def finish_import(doc: dict[str, Any], out_dir: Path, *, tool: str,
                  device: DeviceInfo | None, notes: list[str] | None = None,
                  workload: dict[str, int] | None = None) -> Finished:
    """Write ``profile_topN.json`` (+ ``.md``), then ``env_report.json`` when the round has
    none; raises :class:`ImportProblem` when the Top-N cannot be written."""
    path = write_round(doc, out_dir)
    done = Finished(topn_path=path, env_path=None)
    done.stdout.append(summary(doc, path))
    for note in notes if notes is not None else doc.get("notes", []):
        done.stderr.append(f"warning: {printable(note, limit=400)}")
    try:
        env_path, line = write_env_report(Path(out_dir), device, tool, workload=workload)
    except OSError as exc:
        env_path, line = None, f"env_report.json not written ({exc.strerror or exc})"
    done.env_path = env_path
    done.stdout.append(line)
    done.stdout.extend(next_steps(Path(out_dir), env_path))
    return done
