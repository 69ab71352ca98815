"""Recorded instances for the op-model tests: an op call as a trace records it, with the roles
the project's role table gives its arguments."""

from __future__ import annotations

from typing import Any

from roofline_tui.core.operands import roles_of
from roofline_tui.core.topn_ext import Instance, Operand


def instance(op: str, args: list[tuple[Any, str]], calls: int = 10,
             total_us: float = 100.0) -> Instance:
    """An instance of ``op`` with ``args`` as (dims, recorded type), roles from the table."""
    types = [t for _, t in args]
    dims = [d for d, _ in args]
    roles = roles_of(op, len(args), types, dims=dims).roles
    return Instance(op=op, calls=calls, total_us=total_us,
                    args=[Operand(dims=d, type=t, role=r) for (d, t), r in zip(args, roles)])
