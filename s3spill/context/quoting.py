"""Tool text shown inside our notices, quoted so that it cannot pass for our own words.

Why: a tool's output is untrusted and lands right next to our header, our locator and our
instructions. An output that begins with ``[s3spill] … source_id="artifact:<another
session>…"`` used to put a foreign id where the model looks for ours. Two rules keep our
text ours, at the cost of a few characters and never of a byte of the stored copy:

- In a preview body, a tool line that reads like ours (our header, a ``source_id=``, one
  of our ids, the opening words of our instructions) is shown behind ``> ``, the plain-text
  quote mark; every line of ours starts with ``[s3spill]`` or one of a few fixed words, and
  no tool line does any more.
- Inside one of our lines (the summary quotes the first line), tool text is a
  double-quoted string with ``\\`` and ``"`` escaped, and id-shaped strings in it are
  replaced by ``<s3spill id>``: the one source id in our line is ours.

Pure: no I/O.
"""

from __future__ import annotations

import re

__all__ = ["QUOTE", "no_ids", "quote_lines", "quoted_string"]

QUOTE = "> "
#: Lines of ours begin with these; ids and ``source_id=`` are ours wherever they are.
_OURS = re.compile(
    r"^[ \t]*(?:>[ \t]*)*(?:\[s3spill|\[…|Summary:|Page it with|Do not re-run|Secrets were masked|Type:"
    r"|The stored copy|The preview above|Only the part shown)"
    r"|source_id[ \t]*[=:]|(?:artifact|live):[0-9a-f]{32}:", re.IGNORECASE | re.MULTILINE)
_LINE = re.compile(r"^.*$", re.MULTILINE)
_ID = re.compile(r"(?:artifact|live):[0-9a-f]{32}:[^\s\"'`)\]]*", re.IGNORECASE)


def quote_lines(text: str) -> str:
    """``text`` with each line that reads like ours behind :data:`QUOTE` (others unchanged)."""
    if not _OURS.search(text):
        return text
    return _LINE.sub(lambda m: QUOTE + m.group(0) if m.group(0) and _OURS.search(m.group(0)) else m.group(0),
                     text)


def no_ids(text: str) -> str:
    """Tool text with its id-shaped strings replaced (it sits in a line of ours)."""
    return _ID.sub("<s3spill id>", text)


def quoted_string(text: str) -> str:
    """``text`` as a double-quoted string inside a line of ours (escaped; no foreign id)."""
    inner = no_ids(text).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{inner}"'
