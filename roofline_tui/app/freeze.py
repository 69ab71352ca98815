"""The collector around the dashboard's imports (issue 26).

What the imports build (modules, classes, Textual's and the engine's tables, the models) lives
as long as the program: the cyclic collector is off while they run (a collection then would walk
only objects that are never garbage) and they are frozen out of its passes after. A collector the
caller had turned off stays off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def imports_frozen() -> Iterator[None]:
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()
