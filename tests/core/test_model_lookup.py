"""Tests for roofline_tui.core.model_lookup: a model's config.json from the local HF cache."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from roofline_tui.core.model_config import load_model_config
from roofline_tui.core.model_lookup import find_cached_config, hf_cache_dir
from tests.paths import REAL_FORMATS, REPO_ROOT, need

QWEN3_CONFIG = REAL_FORMATS / "configs" / "Qwen3-8B" / "config.json"
COMMIT = "b968826d9c46dd6066d109eabc6255188de91218"  # any 40-hex commit id


def make_cache(root: Path, repo_id: str, config: bytes, *, commit: str = COMMIT,
               ref: bool = True) -> Path:
    """A hub cache as huggingface_hub writes it: the file's bytes under blobs/<sha256>,
    snapshots/<commit>/config.json a relative symlink to the blob, refs/main naming the
    commit (no trailing newline, as the client writes it)."""
    repo = root / ("models--" + repo_id.replace("/", "--"))
    blob = repo / "blobs" / hashlib.sha256(config).hexdigest()
    blob.parent.mkdir(parents=True)
    blob.write_bytes(config)
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(os.path.relpath(blob, snap))
    if ref:
        (repo / "refs").mkdir()
        (repo / "refs" / "main").write_text(commit)
    return snap / "config.json"


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Any socket connect fails the test; HF_HUB_OFFLINE is deliberately unset."""
    attempts: list[object] = []

    def refuse(self: socket.socket, address: object) -> None:
        attempts.append(address)
        raise AssertionError(f"network connect attempted to {address!r}")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    return attempts


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "hf-cache"
    root.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(root))
    return root


def test_finds_the_real_config_in_a_fake_cache(cache: Path, no_network: list[object]) -> None:
    raw = need(QWEN3_CONFIG).read_bytes()
    expected = make_cache(cache, "Qwen/Qwen3-8B", raw)

    path, account = find_cached_config("Qwen/Qwen3-8B")

    assert path == expected
    assert path is not None and path.read_bytes() == raw
    assert "Qwen/Qwen3-8B" in account and COMMIT in account and "\n" not in account
    assert no_network == []
    # what it found is a config the normaliser reads
    shape, problems = load_model_config(path)
    assert problems == [] and shape is not None
    assert (shape.hidden_size, shape.num_attention_heads, shape.num_kv_heads) == (4096, 32, 8)


def test_hf_home_is_honoured_when_hub_cache_is_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[object]
) -> None:
    raw = need(QWEN3_CONFIG).read_bytes()
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    expected = make_cache(tmp_path / "home" / "hub", "Qwen/Qwen3-8B", raw)

    assert hf_cache_dir() == tmp_path / "home" / "hub"
    assert find_cached_config("Qwen/Qwen3-8B")[0] == expected


def test_cache_variable_changed_after_import_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[object]
) -> None:
    # huggingface_hub.constants freezes HF_HUB_CACHE at import; the lookup must not.
    import huggingface_hub  # noqa: F401 - imported first on purpose

    raw = need(QWEN3_CONFIG).read_bytes()
    for name in ("one", "two"):
        root = tmp_path / name
        expected = make_cache(root, "Qwen/Qwen3-8B", raw)
        monkeypatch.setenv("HF_HUB_CACHE", str(root))
        assert find_cached_config("Qwen/Qwen3-8B")[0] == expected


def test_missing_repo_gives_a_reason(cache: Path, no_network: list[object]) -> None:
    path, reason = find_cached_config("Org/Absent-Model")
    assert path is None
    assert "Org/Absent-Model" in reason and "not in the Hugging Face cache" in reason
    assert str(cache) in reason and "\n" not in reason
    assert no_network == []


def test_repo_without_a_main_snapshot_gives_a_reason(
    cache: Path, no_network: list[object]
) -> None:
    # a snapshot but no refs/main: the lookup does not guess a revision
    make_cache(cache, "Org/Name", b'{"hidden_size": 8}', ref=False)
    path, reason = find_cached_config("Org/Name")
    assert path is None and "no config.json" in reason and "refs/main" in reason


def test_recorded_absence_gives_a_reason(cache: Path, no_network: list[object]) -> None:
    repo = cache / "models--Org--Name"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    (repo / "snapshots" / COMMIT).mkdir(parents=True)
    (repo / ".no_exist" / COMMIT).mkdir(parents=True)
    (repo / ".no_exist" / COMMIT / "config.json").write_bytes(b"")
    path, reason = find_cached_config("Org/Name")
    assert path is None and "records that Org/Name has no config.json" in reason


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_only_a_regular_file_is_returned(cache: Path, no_network: list[object]) -> None:
    snap = cache / "models--Org--Name" / "snapshots" / COMMIT
    snap.mkdir(parents=True)
    (cache / "models--Org--Name" / "refs").mkdir()
    (cache / "models--Org--Name" / "refs" / "main").write_text(COMMIT)
    os.mkfifo(snap / "config.json")
    path, reason = find_cached_config("Org/Name")  # must not block on the FIFO
    assert path is None and reason


@pytest.mark.parametrize(
    "bad",
    ["gpt2", "org/na me", "org/name--x", "org/..", "org/-name", "org/name.git", "", "   ",
     "org/name\x1b[2J"],
)
def test_strings_that_are_not_repo_ids_are_refused(
    bad: str, cache: Path, no_network: list[object]
) -> None:
    path, reason = find_cached_config(bad)
    assert path is None
    assert reason and "\n" not in reason and "\x1b" not in reason


def test_not_a_string_is_refused(cache: Path) -> None:
    path, reason = find_cached_config(None)  # type: ignore[arg-type]
    assert path is None and reason


@pytest.mark.parametrize("local", ["/models/Qwen3-8B", "./Qwen3-8B", "~/models/x",
                                   "a/b/c", "run/config.json", "C:\\models\\x"])
def test_local_path_strings_are_left_to_the_path_branch(
    local: str, cache: Path, no_network: list[object]
) -> None:
    path, reason = find_cached_config(local)
    assert path is None and "local path" in reason


def test_an_existing_relative_directory_is_a_path(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, no_network: list[object]
) -> None:
    make_cache(cache, "Qwen/Qwen3-8B", b'{"hidden_size": 8}')
    (tmp_path / "work" / "Qwen" / "Qwen3-8B").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "work")
    path, reason = find_cached_config("Qwen/Qwen3-8B")
    assert path is None and "local path" in reason


def test_importing_the_module_does_not_import_huggingface_hub() -> None:
    code = ("import sys, roofline_tui.core.model_lookup; "
            "print('huggingface_hub' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=REPO_ROOT, check=True)
    assert out.stdout.strip() == "False"
