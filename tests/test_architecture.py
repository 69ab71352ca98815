"""The architecture contract, read from the source (issue 11).

* The engine (``roofline_tui/core``) imports none of textual, rich, plotext, matplotlib or
  watchfiles — the one documented exception: ``core/plot.py`` may import matplotlib, inside a
  function (lazily, for ``analyze --plot``), when that module exists.
* Only the dashboard (``roofline_tui/app``) imports textual.
* The engine imports no front end (dashboard, CLI, importers).
* No function of the package is over 80 lines (a shrinking list of known long ones aside).
* No module imports another package's private (``_name``) module.

Every ``import`` statement counts, at module level or inside a function. ``lint-imports`` (config
in pyproject.toml, run by ``.ci/run``) checks the engine rules on the import graph as well.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from tests.paths import PACKAGE

UI_LIBRARIES = {"textual", "textual_plotext", "rich", "plotext", "matplotlib", "watchfiles"}
FRONT_ENDS = {"app", "commands", "cli", "rounds_cli", "importers", "ingest", "plot"}
LAZY_MATPLOTLIB = PACKAGE / "core" / "plot.py"  # the documented exception


def imports(path: Path) -> list[tuple[str, int, bool]]:
    """``(module, line, at_module_level)`` for every import in ``path`` (relative ones resolved
    against the package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    top_level = {id(node) for node in tree.body}
    out: list[tuple[str, int, bool]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno, id(node) in top_level) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = parts[: len(parts) - node.level + (1 if path.name == "__init__.py" else 0)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.append((name, node.lineno, id(node) in top_level))
    return out


def violations() -> list[str]:
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        in_core = rel.startswith("core/")
        in_app = rel.startswith("app/")
        for module, line, top in imports(path):
            root = module.split(".")[0]
            where = f"{rel}:{line} imports {module}"
            if in_core and root in UI_LIBRARIES:
                lazy_plot = path == LAZY_MATPLOTLIB and root == "matplotlib" and not top
                if not lazy_plot:
                    found.append(where + " (the engine imports no UI library)")
            if not in_app and root in ("textual", "textual_plotext"):
                found.append(where + " (only roofline_tui/app imports textual)")
            if in_core and module.startswith("roofline_tui.") and (
                module.split(".")[1] in FRONT_ENDS
            ):
                found.append(where + " (the engine imports no front end)")
    return found


def test_the_architecture_contract_holds() -> None:
    assert violations() == []


def test_the_scanner_sees_imports_at_any_depth() -> None:
    """The check can fail: the dashboard's textual imports and a function-level import are seen."""
    app_imports = {m for m, _, _ in imports(PACKAGE / "app" / "app.py")}
    assert any(m.startswith("textual") for m in app_imports)
    nested = [(m, top) for m, _, top in imports(PACKAGE / "core" / "inputs.py")]
    assert nested, "inputs.py imports something"
    lazy = [m for p in PACKAGE.rglob("*.py") for m, _, top in imports(p) if not top]
    assert lazy, "function-level imports exist in the package and are scanned"


# --------------------------------------------------------------------------- function size

MAX_FUNCTION_LINES = 80
# Functions still longer than MAX_FUNCTION_LINES, each with the length it may not grow past and
# why. Issue 24 emptied it for core/; issue 37 put the whole package under the rule (importers/,
# app/, cli/ and the top-level modules: the torch collector's inline reader, the rank merge,
# the rocprof readers and the import parser split) and emptied it again. It stays as the one
# place an exception would have to be argued for. A listed function that is gone, or now
# fits, fails the test until its line is removed.
LONG_FUNCTIONS: dict[str, int] = {}


def function_lengths(root: Path) -> dict[str, int]:
    """``"file.py:function"`` → lines (decorators excluded) for every function under
    ``root``, nested ones included."""
    out: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                end = node.end_lineno or node.lineno
                key = f"{rel}:{node.name}"
                out[key] = max(out.get(key, 0), end - node.lineno + 1)
    return out


def test_no_function_is_over_80_lines() -> None:
    lengths = function_lengths(PACKAGE)
    too_long = {k: n for k, n in lengths.items()
                if n > LONG_FUNCTIONS.get(k, MAX_FUNCTION_LINES)}
    assert too_long == {}, f"over {MAX_FUNCTION_LINES} lines (split it): {too_long}"
    stale = sorted(k for k in LONG_FUNCTIONS if lengths.get(k, 0) <= MAX_FUNCTION_LINES)
    assert stale == [], f"now {MAX_FUNCTION_LINES} lines or fewer: drop from LONG_FUNCTIONS: {stale}"


def test_the_size_check_sees_a_long_function(tmp_path: Path) -> None:
    """The measure can fail: a 90-line function is measured as 90 lines."""
    body = "\n".join(f"    x{i} = {i}" for i in range(89))
    (tmp_path / "m.py").write_text(f"def long_one() -> None:\n{body}\n", encoding="utf-8")
    assert function_lengths(tmp_path) == {"m.py:long_one": 90}



MAX_APP_MODULE_LINES = 400  # issue 24: the dashboard in rooms a newcomer can read


def test_no_dashboard_module_and_not_the_app_class_is_over_400_lines() -> None:
    long_modules = {p.relative_to(PACKAGE).as_posix(): n
                    for p in sorted((PACKAGE / "app").rglob("*.py"))
                    if (n := len(p.read_text(encoding="utf-8").splitlines()))
                    > MAX_APP_MODULE_LINES}
    assert long_modules == {}, f"split these into rooms: {long_modules}"
    tree = ast.parse((PACKAGE / "app" / "app.py").read_text(encoding="utf-8"))
    app = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RooflineApp")
    lines = (app.end_lineno or app.lineno) - app.lineno + 1
    assert 100 < lines < MAX_APP_MODULE_LINES, lines

# --------------------------------------------------------------------------- private modules


def private_imports() -> list[str]:
    """Imports of a private module (``_name.py``) from outside the package that holds it."""
    found: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        importer = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        for module, line, _ in imports(path):
            parts = module.split(".")
            private = next((i for i, p in enumerate(parts) if p.startswith("_")
                            and not p.startswith("__")), None)
            if private is None or parts[0] != PACKAGE.name:
                continue
            owner = ".".join(parts[:private])
            if not (importer == owner or importer.startswith(owner + ".")):
                found.append(f"{path.relative_to(PACKAGE).as_posix()}:{line} imports {module}")
    return found


def test_no_module_imports_another_packages_private_module() -> None:
    """``core/measured/_util.py`` is the measured package's own: the importers use the public
    ``core/measured/sqlite_ro.py`` (lint-imports checks the same for the importers)."""
    assert private_imports() == []


def test_the_private_import_check_sees_one(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / PACKAGE.name
    (pkg / "core" / "measured").mkdir(parents=True)
    (pkg / "importers").mkdir()
    (pkg / "importers" / "x.py").write_text(
        f"from {PACKAGE.name}.core.measured._util import csv_rows\n", encoding="utf-8")
    (pkg / "core" / "measured" / "y.py").write_text("from ._util import csv_rows\n",
                                                    encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", pkg)
    assert private_imports() == [
        f"importers/x.py:1 imports {PACKAGE.name}.core.measured._util"]
