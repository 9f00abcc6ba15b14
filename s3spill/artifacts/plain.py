"""Plain records of the read path: frozen dataclasses with the few pydantic methods callers use.

Why not pydantic here: ``s3spill read`` and ``grep`` are each a process of their own that
a model starts on every page, and pydantic's import plus the build of the page, match and
index models was most of such a process (issue 35). These records are built by our own
code from verified data, so they need no validation; what crosses a trust boundary (the
index, read from storage) is checked by hand in :mod:`.index_fields`.

:meth:`PlainRecord.model_dump_json` writes what pydantic's ``model_dump_json`` wrote for
the same fields (compact, UTF-8, fields in declaration order, nested dataclasses as
objects, tuples as arrays): orjson's output for these types is the same bytes, and the
``--json`` output of a read is pinned by ``tests/cli/test_read_outputs.py``.
"""

from __future__ import annotations

import dataclasses

TYPE_CHECKING = False  # not from typing (~2 ms), and orjson (~10 ms) only when JSON is asked for
if TYPE_CHECKING:
    from typing import Any, TypeVar

    R = TypeVar("R", bound="PlainRecord")

__all__ = ["PlainRecord"]


class PlainRecord:
    """Mixin of a frozen (slotted) dataclass: ``model_copy``, ``model_dump``, ``model_dump_json``."""

    __slots__ = ()

    def model_copy(self: R, *, update: dict[str, Any] | None = None) -> R:
        """A copy with ``update``'s fields replaced (as pydantic's, without validation)."""
        return dataclasses.replace(self, **(update or {}))  # type: ignore[type-var]

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        """The fields as a dict; ``mode="json"``: as the JSON would hold them (lists, not tuples)."""
        if mode == "json":
            import orjson

            out: dict[str, Any] = orjson.loads(self.model_dump_json())
            return out
        return dataclasses.asdict(self)  # type: ignore[call-overload, no-any-return]

    def model_dump_json(self) -> str:
        import orjson

        return orjson.dumps(self).decode()

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))  # type: ignore[arg-type]
