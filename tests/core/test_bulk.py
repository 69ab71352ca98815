"""The collector pause around bulk parsing never leaves the collector in the wrong state."""

from __future__ import annotations

import gc

import pytest

from roofline_tui.core.bulk import collector_paused


def test_paused_inside_and_back_on_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_back_on_after_an_exception() -> None:
    with pytest.raises(ValueError), collector_paused():
        raise ValueError("bad row")
    assert gc.isenabled()


def test_left_off_when_it_was_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
