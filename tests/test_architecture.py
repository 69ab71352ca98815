"""The architecture contract, read from the source (issue 11).

* The engine (``roofline_tui/core``) imports none of textual, rich, plotext, matplotlib or
  watchfiles — the one documented exception: ``core/plot.py`` may import matplotlib, inside a
  function (lazily, for ``analyze --plot``), when that module exists.
* Only the dashboard (``roofline_tui/app``) imports textual.
* The engine imports no front end (dashboard, CLI, importers).

Every ``import`` statement counts, at module level or inside a function. ``lint-imports`` (config
in pyproject.toml, run by ``.ci/run``) checks the engine rules on the import graph as well.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import PACKAGE

UI_LIBRARIES = {"textual", "textual_plotext", "rich", "plotext", "matplotlib", "watchfiles"}
FRONT_ENDS = {"app", "commands", "cli", "rounds_cli", "importers", "plot"}
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
