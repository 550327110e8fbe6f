"""`$in` over strings by set membership in the embedded MongoDB-wire server (issue 29),
applied by `services.ops.stack.secantus_tuned.tune`.

SecantusDB matches a document against `{field: {$in: [...]}}` by comparing the field with
each element in turn, in Python: a statement that names n documents by `_id` costs n x n
comparisons (an ad-hoc probe, 2026-12-07: 256 vector records read by `_id: {$in}`, 0.23 ms a
document against 0.06 to insert one; the adapters already split such lists, see
`engine.adapters.mongo.changes.RESTAMP_CHUNK` and `transcripts.THREADS_PER_READ`). Here, when
every element of the list is a plain string and every value the document holds there is a
plain string, and no collation applies, the answer is set membership, which is what the
comparisons decide for strings: equal strings. Any other list, value or collation (numbers,
which compare across types; regular expressions; arrays; a missing field) goes the original
way. A list's set is made once per statement: the filter hands the same list object for
every document, and the set is kept beside it for as long as it is that object."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

_sets = threading.local()
"""The last `$in` list seen on this thread and its set (`_sets.last`: (list, frozenset or
None when the list is not all plain strings))."""


def _strings(arg: list[Any], validate: Callable[[str, Any], None]) -> frozenset[str] | None:
    """`arg`'s set when every element is a plain string (None otherwise), made and the list
    validated (`validate`, as the original does) once per list object."""
    last = getattr(_sets, "last", None)
    if last is not None and last[0] is arg:
        found: frozenset[str] | None = last[1]
        return found
    validate("$in", arg)
    found = frozenset(arg) if all(type(a) is str for a in arg) else None
    _sets.last = (arg, found)
    return found


def fast_in(query_module: Any) -> None:
    original: Callable[..., bool] = query_module._op_matches

    def op_matches(
        values: list[Any], op: str, arg: Any, collation: Any = None, **kwargs: Any
    ) -> bool:
        if (
            op == "$in"
            and collation is None
            and type(arg) is list
            and values
            and all(type(v) is str for v in values)
        ):
            strings = _strings(arg, query_module._validate_in_arg)
            if strings is not None:
                return any(v in strings for v in values)
        return original(values, op, arg, collation, **kwargs)

    query_module._op_matches = op_matches


NEEDS = ("_op_matches", "_validate_in_arg")
"""What `fast_in` replaces or calls in `secantus.query`."""
