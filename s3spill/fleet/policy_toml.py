"""tomlkit's parser, noting the line of every key and table header (the policy file's positions).

Its own module so that :mod:`s3spill.fleet.policy_file` imports tomlkit only when it reads a
file: a process with no policy file (most CLI commands, every hook) never pays for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tomlkit.parser import Parser

if TYPE_CHECKING:
    from s3spill.fleet.policy_file import Path_


class Positions(Parser):
    """tomlkit's parser, noting the line of every key and table header it parses."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.lines: dict[Path_, int] = {}
        self._table: Path_ = ()
        self._depth = 0

    def _line(self) -> int:
        return self._src.count("\n", 0, self._idx) + 1

    def _parse_table(self, parent_name: Any = None, parent: Any = None) -> Any:
        line = self._line()
        with self._state(restore=True):
            self.inc()
            if self._current == "[":
                self.inc()
            self._table = tuple(part.key for part in self._parse_key())
        self.lines.setdefault(self._table, line)
        return super()._parse_table(parent_name, parent)

    def _parse_key_value(self, parse_comment: bool = False) -> Any:
        outer, line = self._depth == 0, self._line()
        self._depth += 1
        try:
            key, item = super()._parse_key_value(parse_comment)
        finally:
            self._depth -= 1
        if outer:
            self.lines.setdefault(self._table + tuple(part.key for part in key), line)
        return key, item
