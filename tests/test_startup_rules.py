"""Issue 37 item 2: the start-up rules the engine, the CLI and the dashboard keep, checked on
their source (the AST), so a new module cannot quietly break them.

* regular expressions are compiled on first use (``core.lazy_re.lazy_compile``), not at import,
  in every module of the package (the importers, the ingest and calibrate included): the start
  path imports some 90 patterns and a run uses about half; a module-level ``re.compile`` is
  allowed only in the list below, each with its reason;
* a pydantic ``Field`` default is ``empty_list``/``empty_dict`` (``core.empty``), never the bare
  ``list``/``dict`` builtins: one spelling, typed, that every model shares;
* the collector is paused one way (``core.bulk.CollectorPause``);
* a module that defines a pydantic model does not postpone its annotations
  (``from __future__ import annotations``): pydantic would then resolve every field's string
  annotation at class creation (an ``eval`` per field on every start)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.paths import REPO_ROOT

PACKAGE = REPO_ROOT / "roofline_tui"

# module -> why its patterns are compiled at import
EAGER_REGEX_OK = {
    "core/textsafe.py": "the sanitiser every printed, written or drawn string goes through: "
                        "every run uses its patterns, so compiling them later saves nothing",
}
MODEL_BASES = {"BaseModel", "Record", "RootModel"}


def _modules(*subpackages: str) -> list[Path]:
    return sorted(p for sub in subpackages for p in (PACKAGE / sub).rglob("*.py"))


def _rel(p: Path) -> str:
    return p.relative_to(PACKAGE).as_posix()


def _is_re_compile(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "compile" and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "re")


def _eager_lines(tree: ast.Module) -> list[int]:
    """Lines of the ``re.compile`` calls that run at import (module level, class bodies)."""
    lines: list[int] = []
    for stmt in tree.body:  # inside a function it runs when called
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = stmt.body if isinstance(stmt, ast.ClassDef) else [stmt]
        lines += [n.lineno for s in body if not isinstance(
            s, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(s)
            if isinstance(n, ast.Call) and _is_re_compile(n)]
    return lines


def _bare_factories(tree: ast.Module) -> list[int]:
    """Lines of ``Field(default_factory=list|dict)``."""
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and (
        getattr(node.func, "id", None) == "Field" or getattr(node.func, "attr", None) == "Field")
        for kw in node.keywords if kw.arg == "default_factory"
        and isinstance(kw.value, ast.Name) and kw.value.id in ("list", "dict")]


def _postponed_models(tree: ast.Module) -> list[str]:
    """The pydantic models of a module that postpones its annotations."""
    future = any(isinstance(n, ast.ImportFrom) and n.module == "__future__"
                 and any(a.name == "annotations" for a in n.names) for n in tree.body)
    return [n.name for n in tree.body if future and isinstance(n, ast.ClassDef) and any(
        getattr(b, "id", getattr(b, "attr", None)) in MODEL_BASES for b in n.bases)]


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def test_regular_expressions_on_the_start_path_are_compiled_on_first_use() -> None:
    eager = {_rel(p): lines for p in _modules("") if (lines := _eager_lines(_parse(p)))}
    assert set(eager) <= set(EAGER_REGEX_OK), {
        k: v for k, v in eager.items() if k not in EAGER_REGEX_OK}
    assert set(EAGER_REGEX_OK) <= set(eager), "an allow-list entry no longer needed: remove it"


def test_pydantic_field_defaults_are_the_shared_factories() -> None:
    bare = {_rel(p): lines for p in _modules("") if (lines := _bare_factories(_parse(p)))}
    assert bare == {}


def test_model_modules_do_not_postpone_their_annotations() -> None:
    postponed = {_rel(p): m for p in _modules("") if (m := _postponed_models(_parse(p)))}
    assert postponed == {}


def test_the_rules_see_what_they_forbid() -> None:
    """Each check finds its breach in a module that has all three."""
    tree = ast.parse("from __future__ import annotations\nimport re\nfrom pydantic import "
                     "BaseModel, Field\nX = re.compile('a')\nclass M(BaseModel):\n    Y = "
                     "re.compile('b')\n    xs: list[int] = Field(default_factory=list)\n"
                     "    def f(self) -> None:\n        re.compile('c')\n")
    assert _eager_lines(tree) == [4, 6]  # not the one inside the method
    assert _bare_factories(tree) == [7]
    assert _postponed_models(tree) == ["M"]


def test_the_collector_is_paused_one_way() -> None:
    """``core.bulk.CollectorPause`` (and its block form ``collector_paused``) is the only code
    that switches the cyclic collector off and on: the CLI's start-up and the dashboard's first
    frame use it, so none of them can leave it off or switch on a caller's disabled one."""
    calls = {}
    for path in _modules(""):
        found = [n.lineno for n in ast.walk(_parse(path)) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Attribute) and n.func.attr in ("disable", "enable")
                 and isinstance(n.func.value, ast.Name) and n.func.value.id == "gc"]
        if found:
            calls[_rel(path)] = found
    assert set(calls) == {"core/bulk.py"}, calls
