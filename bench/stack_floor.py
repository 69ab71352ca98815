"""The stack floor of a command: Python + pydantic + models with the same fields as the ones the
command builds, and nothing else of roofline_tui.

    python bench/stack_floor.py spec OUT.json -- roofline ARGS...   (PYTHONPATH = the tree)
    python bench/stack_floor.py build SPEC.json [--no-gc]           (no tree: the floor itself)

``spec`` runs the command in this process, then walks every pydantic model that roofline_tui
defined in it (and, through ``model_fields``, every model their fields name) and writes each
one's fields as type expressions. ``build`` reads that file, imports pydantic and builds the
same models with :func:`pydantic.create_model`, in dependency order: the work any program with
this schema pays at start-up. The spec is generated from the code of the tree under test, so
the floor follows the models as they change.
"""

from __future__ import annotations

import sys


def _spec(out: str, argv: list[str]) -> None:
    import json
    import types
    import typing
    from pathlib import Path

    from pydantic import BaseModel

    from roofline_tui.cli import main

    try:
        main(argv)
    except SystemExit:
        pass

    def subclasses(cls: type) -> list[type]:
        found = []
        for sub in cls.__subclasses__():
            found.append(sub)
            found += subclasses(sub)
        return found

    ours = [m for m in subclasses(BaseModel) if m.__module__.startswith("roofline_tui")]
    models: dict[type, str] = {}
    todo = list(dict.fromkeys(ours))
    while todo:  # models named by fields, ours or not, come along
        m = todo.pop()
        if m in models:
            continue
        models[m] = f"M{len(models)}_{m.__name__}"
        for f in m.model_fields.values():
            todo += [t for t in _named_models(f.annotation, BaseModel) if t not in models]

    def expr(t: typing.Any, deps: set[str]) -> str:
        if t is None or t is type(None):
            return "None"
        if t is typing.Any:
            return "Any"
        if isinstance(t, type) and issubclass(t, BaseModel) and t in models:
            deps.add(models[t])
            return models[t]
        origin = typing.get_origin(t)
        args = typing.get_args(t)
        if origin is typing.Literal:
            return "Literal[" + ", ".join(repr(a) for a in args) + "]"
        if origin is typing.Annotated:
            return expr(args[0], deps)
        if origin in (typing.Union, types.UnionType):
            return "Union[" + ", ".join(expr(a, deps) for a in args) + "]"
        if origin in (list, dict, tuple, set, frozenset):
            if not args:
                return origin.__name__
            inner = ", ".join("..." if a is Ellipsis else expr(a, deps) for a in args)
            return f"{origin.__name__}[{inner}]"
        if t in (int, float, str, bool, bytes):
            return t.__name__
        if t is Path:
            return "Path"
        return "Any"

    out_models = []
    for m, name in models.items():
        deps: set[str] = set()
        fields = {}
        for fname, f in m.model_fields.items():
            fields[fname] = {"type": expr(f.annotation, deps), "required": f.is_required()}
        extra = m.model_config.get("extra")
        out_models.append({"name": name, "of": f"{m.__module__}.{m.__qualname__}",
                           "extra": extra if isinstance(extra, str) else None,
                           "fields": fields, "deps": sorted(deps - {name})})
    Path(out).write_text(json.dumps({"command": argv, "models": out_models}, indent=1))


def _named_models(t: object, base: type) -> list[type]:
    import typing

    if isinstance(t, type) and issubclass(t, base):
        return [t]
    out: list[type] = []
    for a in typing.get_args(t):
        out += _named_models(a, base)
    return out


def _build(spec_path: str) -> None:
    import json
    from pathlib import Path
    from typing import Any, Literal, Union

    from pydantic import ConfigDict, create_model

    spec = json.loads(Path(spec_path).read_text())
    ns: dict[str, Any] = {"Any": Any, "Literal": Literal, "Union": Union, "Path": Path}
    pending = {m["name"]: m for m in spec["models"]}
    while pending:
        ready = [m for m in pending.values() if all(d in ns for d in m["deps"])]
        if not ready:  # a cycle: its members refer to each other as Any
            ready = [next(iter(pending.values()))]
            ready[0]["deps"] = []
            for f in ready[0]["fields"].values():
                f["type"] = "Any" if any(n in f["type"] for n in pending) else f["type"]
        for m in ready:
            fields: dict[str, Any] = {}
            for fname, f in m["fields"].items():
                typ = eval(f["type"], ns)  # the spec is ours, written by _spec above
                fields[fname] = (typ, ...) if f["required"] else (typ, None)
            config = ConfigDict(extra=m["extra"]) if m["extra"] else None
            ns[m["name"]] = create_model(m["name"], __config__=config, **fields)
            del pending[m["name"]]
    print(json.dumps({"models": len(spec["models"])}))


if __name__ == "__main__":
    if sys.argv[1] == "spec":
        _spec(sys.argv[2], sys.argv[4:] if sys.argv[3] == "--" else sys.argv[3:])
    else:
        if "--no-gc" in sys.argv[3:]:  # the floor a program pays with its collector off
            import gc

            gc.disable()
        _build(sys.argv[2])
