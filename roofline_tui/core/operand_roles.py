"""The vocabulary of operand roles: what an argument position of a launching op is.

:mod:`roofline_tui.core.operands` explains each role and answers which role each position of a
call has; :mod:`roofline_tui.core.operand_table` holds the table it answers from, one row per
op schema. Both share the words defined here.
"""

from collections.abc import Mapping
from typing import Literal, NamedTuple, cast

Role = Literal["input", "output", "inplace", "weight", "bias", "scale", "cache", "index",
               "workspace", "scalar", "other"]
ROLES: frozenset[str] = frozenset(Role.__args__)  # type: ignore[attr-defined]

# How an output that is not an argument is sized (OpRoles.writes_output, output_dims):
#   like:<i>   the dims of argument i
#   gemm       matmul of operand A (first ``input``) by B (first ``weight``, stored [..., K, N])
#   linear     A (first ``input``) by B (first ``weight``) stored [N, K]: A[:-1] + [N]
#   broadcast  the broadcast of the ``input``/``index`` arguments (0-d ones included)
#   cat        the TensorList concatenated (see output_dims for the axis)
#   stack      the TensorList stacked along a new axis 0
#   attention  the query (arg 0) with its last axis taken from the value (arg 2)
#   embedding  the indices (arg 1) followed by the table's (arg 0) row dims
#   index_select  arg 0 with axis 0 resized to the element count of the index (arg 2)
#   0-d        one element
#   unknown    an output exists but its size depends on values the trace does not record
WRITES_KINDS = ("gemm", "linear", "broadcast", "cat", "stack", "attention", "embedding",
                "index_select", "0-d", "unknown")

CODES: Mapping[str, Role] = {r: cast(Role, r) for r in ROLES}  # role word -> Role


class Row(NamedTuple):
    """One schema (an overload or a version) of an op: the role of each position."""

    roles: tuple[Role, ...]
    writes: str | None
    schema: str
    rest: Role = "scalar"  # the role of positions beyond ``roles``
    out_arg: int | None = None  # an optional out=: when it holds a tensor nothing is allocated
    paged: tuple[int, tuple[int, ...]] | None = None  # (block_table position, key/value positions)
    writes_cache: bool = False
    note: str = ""
    tail: bool = False  # the schema's trailing arguments are summarised by ``rest`` on purpose
