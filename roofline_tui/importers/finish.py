"""What every importer does after parsing: write the round, record the device, and say in a
few lines what was written, what was noticed and what to run next. The CLI glue only prints
these lines."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from roofline_tui.core import units
from roofline_tui.core.textsafe import printable
from roofline_tui.core.layout import CONFIG_NAME, CONFIG_SOURCE_NAME
from roofline_tui.importers.common import ImportProblem, write_round
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


@dataclass(frozen=True)
class ConfigChoice:
    """The model config.json for the round, already read and found to describe a model, and
    how it was found: named by the user (``--model-config`` or ``--model``), or looked up from
    what the trace records (``importers.model_search``, whose ``evidence`` lines go into
    ``config.source.json``)."""

    path: Path
    how: str
    data: bytes
    evidence: tuple[str, ...] = ()


def choose_model_config(config_file: Path | None, model: str | None) -> ConfigChoice | None:
    """The config ``import --model-config FILE`` / ``--model ORG/NAME`` names, checked (it must
    describe a model as ``analyze`` reads one); ``None`` when neither was given. Raises
    :class:`ImportProblem` (one line) when the named file is unusable or the model is not in
    the local Hugging Face cache: nothing is written then."""
    if config_file is None and not model:
        return None  # (nothing named: the config reader and its models are never loaded)
    from roofline_tui.core.model_config import load_model_config
    from roofline_tui.core.model_lookup import find_cached_config
    from roofline_tui.core.store import MAX_READ_BYTES, ReadProblem, read_bytes

    if config_file is not None:
        path, how = Path(config_file), f"--model-config {printable(config_file)}"
    elif model:
        found, account = find_cached_config(model)
        if found is None:
            raise ImportProblem(f"--model {printable(model, limit=120)}: {printable(account)}; "
                                "give the file with --model-config FILE")
        path, how = found, f"--model {printable(model, limit=120)}: {printable(account)}"
    else:
        return None
    shape, problems = load_model_config(path)
    if shape is None:
        raise ImportProblem(f"{how}: {printable(problems[0] if problems else 'unusable')}")
    try:
        data = read_bytes(path, max_bytes=MAX_READ_BYTES)
    except ReadProblem as exc:
        raise ImportProblem(f"{how}: {printable(exc.reason)}") from None
    return ConfigChoice(path=path, how=how, data=data)


def copy_model_config(out_dir: Path, choice: ConfigChoice) -> str:
    """``ROUND/config.json`` from the chosen file, with ``ROUND/config.source.json`` saying
    where it came from (path, how it was found, its sha256); a config already in the round is
    never replaced. Returns the line to print."""
    import hashlib
    import json

    from roofline_tui.core.store import write_new_file

    target = Path(out_dir) / CONFIG_NAME
    if target.exists() or target.is_symlink():
        return (f"kept the existing {printable(target)} ({choice.how} not copied over it: "
                "remove it to use that one)")
    if not write_new_file(target, choice.data):
        return f"kept the existing {printable(target)} (it appeared meanwhile)"
    source: dict[str, object] = {
        "copied_from": str(choice.path), "how": choice.how,
        "sha256": hashlib.sha256(choice.data).hexdigest(), "bytes": len(choice.data)}
    if choice.evidence:
        source["evidence"] = list(choice.evidence)
    text = json.dumps(source, indent=2, ensure_ascii=False) + "\n"
    write_new_file(Path(out_dir) / CONFIG_SOURCE_NAME, text.encode("utf-8"))
    return f"copied the model config into {printable(target)} ({choice.how})"


def finish_import(doc: dict[str, Any], out_dir: Path, *, tool: str,
                  device: DeviceInfo | None, notes: list[str] | None = None,
                  workload: dict[str, int] | None = None,
                  config: ConfigChoice | None = None,
                  config_missing: str | None = None) -> Finished:
    """Write ``profile_topN.json`` (+ ``.md``), then ``env_report.json`` when the round has
    none, and the chosen model config; raises :class:`ImportProblem` when the Top-N cannot be
    written. ``config_missing``: why the model's config was not found from the trace (said in
    the note when the round ends up without one)."""
    path = write_round(doc, out_dir)
    done = Finished(topn_path=path, env_path=None)
    if config is not None:
        try:
            done.stdout.append(copy_model_config(Path(out_dir), config))
        except OSError as exc:
            done.stderr.append(f"warning: the model config was not copied into the round "
                               f"({printable(exc.strerror or exc)})")
    done.stdout.append(summary(doc, path))
    for note in notes if notes is not None else doc.get("notes", []):
        done.stderr.append(f"warning: {printable(note, limit=400)}")
    try:
        env_path, line = write_env_report(Path(out_dir), device, tool, workload=workload)
    except OSError as exc:
        env_path, line = None, f"env_report.json not written ({exc.strerror or exc})"
    done.env_path = env_path
    done.stdout.append(line)
    done.stdout.extend(next_steps(Path(out_dir), env_path, config_missing=config_missing))
    return done
