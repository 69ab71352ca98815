"""No import circles in ``roofline_tui/`` beyond a shrinking list (issue 37).

The import graph is read from the source (the AST), not from ``sys.modules``: every ``import``
statement counts, at module level, inside a function and under ``if TYPE_CHECKING:`` (a lazy or
typing-only import still ties two modules together: neither can be read, moved or tested
without the other). Relative imports are resolved against the importing module's package, and
``from pkg import name`` is an edge to ``pkg.name`` when that is a module of the package, else
to ``pkg``. Importing ``a.b`` runs ``a/__init__.py`` too, but that implicit edge to a parent
package is not counted (import-linter's graph does not count it either).

A circle is a strongly connected component of more than one module. Each circle still there is
listed in :data:`KNOWN_CIRCLES` with why it is left; a listed circle that is gone, or whose
members changed, fails the test until its line is updated, so the list only shrinks.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import PACKAGE

# circle (module names without the ``roofline_tui.`` prefix) -> why it is still there (none:
# the last ones, in importers/ and app/, went with issue 37 items 1 and 3)
KNOWN_CIRCLES: dict[frozenset[str], str] = {}


def module_name(path: Path, root: Path) -> str:
    """``roofline_tui/importers/nsys/__init__.py`` -> ``roofline_tui.importers.nsys``."""
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imported(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    """The dotted names one import statement may refer to: for ``from X import a, b`` both
    ``X.a`` and ``X.b`` (resolved to ``X`` below when they are names, not modules)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        parts = package.split(".")
        base_parts = parts[: len(parts) - node.level + 1]
        base = ".".join(base_parts + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    return [f"{base}.{alias.name}" for alias in node.names]


def import_graph(root: Path) -> dict[str, set[str]]:
    """Module -> the modules of the package under ``root`` it imports anywhere in its file."""
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            for target in _imported(node, package):
                while target and target not in files:  # a name in a module -> that module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.add(frozenset(component))
    return found


def _short(circle: frozenset[str]) -> frozenset[str]:
    prefix = PACKAGE.name + "."
    return frozenset(m.removeprefix(prefix) for m in circle)


def _shown(group: set[frozenset[str]]) -> list[str]:
    return sorted(" <-> ".join(sorted(c)) for c in group)


def test_no_import_circles_beyond_the_known_ones() -> None:
    found = {_short(c) for c in circles(import_graph(PACKAGE))}
    new = found - KNOWN_CIRCLES.keys()
    assert not new, f"import circles (break them; see KNOWN_CIRCLES): {_shown(new)}"
    gone = set(KNOWN_CIRCLES) - found
    assert not gone, f"no longer circles as listed: update or drop from KNOWN_CIRCLES: {_shown(gone)}"


def test_every_known_circle_says_why() -> None:
    assert all(reason.strip() for reason in KNOWN_CIRCLES.values())


def test_the_graph_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The check can fail: a circle made of a function-level import, a TYPE_CHECKING import,
    a relative import and ``from pkg import module`` is found; imports of names, of outside
    modules and of a parent package are not edges."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "import os\n\ndef f():\n    from pkg.sub import b\n",
        "sub/__init__.py": "from .b import NAME\n",
        "sub/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .. import c\n",
        "c.py": "from pkg import a\nfrom pkg.sub.b import NAME\n",
        "d.py": "import pkg.a\nfrom . import sub\n",
        "e.py": "from pkg.d import missing_name\n",
    }
    for rel, text in files.items():
        (pkg / rel).write_text(text, encoding="utf-8")
    graph = import_graph(pkg)
    assert graph == {
        "pkg": set(),
        "pkg.a": {"pkg.sub.b"},
        "pkg.sub": {"pkg.sub.b"},
        "pkg.sub.b": {"pkg.c"},
        "pkg.c": {"pkg.a", "pkg.sub.b"},
        "pkg.d": {"pkg.a", "pkg.sub"},
        "pkg.e": {"pkg.d"},
    }
    assert circles(graph) == {frozenset({"pkg.a", "pkg.sub.b", "pkg.c"})}


def test_the_package_graph_holds_function_level_imports() -> None:
    """The real graph has the edges a module-level-only scan would miss."""
    graph = import_graph(PACKAGE)
    name = PACKAGE.name
    # `roofline import nsys` imports its importer inside the command's function
    assert f"{name}.importers.nsys" in graph[f"{name}.cli.imports"]
    # the nsys face imports its SQLite reader only for a database
    assert f"{name}.importers.nsys.sqlite" in graph[f"{name}.importers.nsys"]
