"""A model's ``config.json`` from the local Hugging Face cache, when no file sits beside the run.

A serving run names its model by Hub repo id (``Qwen/Qwen3-8B``). When that model was loaded on
this machine, the Hub client left its ``config.json`` in the local cache
(``<cache>/models--Qwen--Qwen3-8B/snapshots/<commit>/config.json``, with ``refs/main`` naming the
commit). :func:`find_cached_config` finds that file without touching the network.

Strictly offline: ``huggingface_hub.try_to_load_from_cache`` only reads the file system, whatever
``HF_HUB_OFFLINE`` says. The cache folder is resolved here, at call time, from the same variables
the Hub client reads (``HF_HUB_CACHE``, ``HUGGINGFACE_HUB_CACHE``, ``HF_HOME``,
``XDG_CACHE_HOME``), because ``huggingface_hub.constants`` freezes them when first imported.
``huggingface_hub`` itself is imported inside the function, so importing this module costs nothing
at start-up.
"""

from __future__ import annotations

import os
from pathlib import Path

from roofline_tui.core.lazy_re import lazy_compile
from roofline_tui.core.store import check_regular
from roofline_tui.core.textsafe import printable

__all__ = ["find_cached_config", "hf_cache_dir"]

CONFIG_NAME = "config.json"

# ``org/name``: one slash, each side the characters the Hub allows in a name.
_REPO_ID = lazy_compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")


def hf_cache_dir() -> Path:
    """The Hugging Face hub cache folder, resolved now from the environment.

    The order follows ``huggingface_hub.constants``: ``HF_HUB_CACHE``, then the older
    ``HUGGINGFACE_HUB_CACHE``, then ``$HF_HOME/hub``, then ``$XDG_CACHE_HOME/huggingface/hub``,
    then ``~/.cache/huggingface/hub``; ``~`` and ``$VARS`` are expanded.
    """

    def expand(value: str) -> str:
        return os.path.expandvars(os.path.expanduser(value))

    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        value = os.environ.get(var)
        if value:
            return Path(expand(value))
    home = os.environ.get("HF_HOME")
    if not home:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        home = os.path.join(xdg, "huggingface")
    return Path(expand(home)) / "hub"


def _looks_like_path(model: str) -> bool:
    """True for a string meant as a file-system path rather than a Hub repo id."""
    if model.startswith(("/", ".", "~")) or "\\" in model or model.count("/") > 1:
        return True
    if model.endswith(".json"):
        return True
    try:
        return Path(model).exists()
    except (OSError, ValueError):
        return False


def find_cached_config(model: str) -> tuple[Path | None, str]:
    """The cached ``config.json`` of Hub repo ``model`` and one line on how it was found.

    Returns ``(path, account)`` when the local Hugging Face cache holds the file for the
    revision ``refs/main`` points at, and ``(None, reason)`` otherwise:

    - ``model`` looks like a local path (absolute, ``./``, ``~``, more than one ``/``, a
      ``.json`` file, or something that exists relative to the working directory): ``None``,
      since reading a path is the caller's other branch, not a cache lookup;
    - ``model`` is not an ``org/name`` repo id (a bare name, odd characters, ``--``/``..``):
      ``None`` with the reason;
    - the cache has no folder for the repo, no snapshot for ``main``, records the file as
      absent, or the file found is not a regular file: ``None`` with the reason.

    Never makes a network call and never raises.
    """
    if not isinstance(model, str) or not model.strip():
        return None, "no model name to look up in the Hugging Face cache"
    name = model.strip()
    shown = printable(name, limit=120)
    if _looks_like_path(name):
        return None, f"{shown!r} is a local path, not a Hub repo id; not looked up in the cache"
    if not _REPO_ID.fullmatch(name):
        return None, f"{shown!r} is not a Hugging Face repo id of the form org/name"

    try:
        from huggingface_hub import try_to_load_from_cache
        from huggingface_hub.utils import (  # type: ignore[attr-defined, unused-ignore]  # lazy __all__
            HFValidationError,
            validate_repo_id,
        )
    except ImportError:
        return None, "huggingface_hub is not installed; the Hugging Face cache was not searched"

    try:
        validate_repo_id(name)
    except HFValidationError as exc:
        why = printable(str(exc).splitlines()[0] if str(exc) else "invalid", limit=160)
        return None, f"{shown!r} is not a valid Hugging Face repo id: {why}"

    cache = hf_cache_dir()
    where = printable(str(cache), limit=200)
    try:
        found = try_to_load_from_cache(name, CONFIG_NAME, cache_dir=cache)
    except Exception as exc:  # noqa: BLE001 - an unreadable cache is a reason, not a crash
        return None, f"the Hugging Face cache {where} could not be read ({type(exc).__name__})"

    if found is None:
        repo_dir = cache / ("models--" + name.replace("/", "--"))
        if not repo_dir.is_dir():
            return None, f"{shown} is not in the Hugging Face cache {where}"
        return None, (f"the Hugging Face cache {where} holds {shown} but no {CONFIG_NAME} "
                      "for the revision refs/main names")
    if not isinstance(found, str):
        # huggingface_hub's _CACHED_NO_EXIST: the Hub told an earlier download there is none.
        return None, f"the Hugging Face cache {where} records that {shown} has no {CONFIG_NAME}"

    path = Path(found)
    problem = check_regular(path)
    if problem is not None:
        return None, f"cached {CONFIG_NAME} of {shown} at {printable(found, limit=200)}: {problem}"
    revision = path.parent.name
    return path, (f"{CONFIG_NAME} of {shown} from the Hugging Face cache {where} "
                  f"(snapshot {printable(revision, limit=40)})")
