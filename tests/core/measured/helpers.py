"""Independent readers for the real sample files (plain csv module, no project code)."""

from __future__ import annotations

import csv
from pathlib import Path

from tests.paths import MEASURED_FIXTURES, REAL_FORMATS, UPSTREAM_SAMPLES

REAL = REAL_FORMATS
UPSTREAM = UPSTREAM_SAMPLES
FIXTURES = MEASURED_FIXTURES
ROCPROF = REAL / "rocprofv3"
NCU = REAL / "ncu"


def num(text: str) -> float:
    return float(text.replace(",", ""))


def long_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def ncu_rows(path: Path) -> list[dict[str, str]]:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith('"ID","Process ID"'))
    return list(csv.DictReader(lines[start:]))


UNIT = {
    "byte": 1.0,
    "Kbyte": 1e3,
    "Mbyte": 1e6,
    "Gbyte": 1e9,
    "nsecond": 1e-9,
    "usecond": 1e-6,
    "msecond": 1e-3,
    "inst": 1.0,
    "": 1.0,
}
