"""Round labels and names are valid Unicode whatever bytes the directory name holds."""

from __future__ import annotations

import os
from pathlib import Path

from roofline_tui.core.layout import round_label, round_name


def test_non_utf8_bytes_are_written_as_visible_escapes() -> None:
    odd = Path(os.fsdecode(b"/p/round_\xff\xfeab"))
    assert round_label(odd) == "\\xff\\xfeab"
    assert round_name(odd) == "round_\\xff\\xfeab"
    label = round_label(odd)
    assert isinstance(label, str)
    label.encode("utf-8")  # would raise for a lone surrogate


def test_ordinary_names_are_unchanged() -> None:
    assert round_label(Path("/p/round_12")) == 12
    assert round_label(Path("/p/round_tuning")) == "tuning"
    assert round_label(Path("/p/round_ü")) == "ü"
    assert round_label(Path("/p/round_²")) == "²"  # a digit to isdigit(), not to int()
    assert round_name(Path("/p/round_3")) == "round_3"
