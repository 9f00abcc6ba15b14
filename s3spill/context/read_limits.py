"""The read tools' default and largest sizes, on their own.

Why a module of constants: the CLI's flags and the agent's tool specs show them in their
help, and building a parser must not import the paging, grep and hexdump modules (and
pydantic with them) that use them. Those modules re-export them under their old names.
"""

from __future__ import annotations

__all__ = ["DEFAULT_BYTES", "DEFAULT_ELEMENTS", "DEFAULT_LIMIT", "DEFAULT_MAX_CHARS", "DEFAULT_MAX_MATCHES",
           "DEFAULT_RECORDS", "MAX_BYTES"]

#: Lines of a page when the caller does not say.
DEFAULT_LIMIT = 2000
#: A page's size in characters, header and footer included.
DEFAULT_MAX_CHARS = 40_000
#: Matching lines a grep shows (the rest are counted).
DEFAULT_MAX_MATCHES = 100
#: Bytes of a hexdump page when the caller does not say (256 rows of 16), and the most.
DEFAULT_BYTES = 4096
MAX_BYTES = 64 * 1024
#: Elements of a JSON page, and records of a CSV/TSV page, when the caller does not say.
DEFAULT_ELEMENTS = 100
DEFAULT_RECORDS = 500
