"""Pricing text in tokens (the budget a text must fit is :mod:`s3spill.context.budget`).

The counter is pluggable because the only price that matters is the one the model is
billed with (docs/design-notes.md, "Hard cap and soft budget": price with the provider's
own calculator). By default we use tiktoken when it happens to be installed and can load
its encoding offline, and a fast, deliberately pessimistic estimate otherwise; tiktoken
is never a dependency.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

TokenCounter = Callable[[str], int]

#: Bytes of UTF-8 per token assumed by :func:`estimate_tokens`. Real tokenizers give
#: about 4 for English prose, 3 for code, logs and digits, and ~1 token per CJK
#: character (3 bytes); 3 over-prices prose a little, which is the safe side of a budget.
BYTES_PER_TOKEN = 3


def estimate_tokens(text: str) -> int:
    """A fast upper-leaning token estimate: ceil(UTF-8 bytes / 3)."""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    return -(-size // BYTES_PER_TOKEN)


def tiktoken_counter(encoding: str = "o200k_base") -> TokenCounter | None:
    """A tiktoken-backed counter, or ``None`` when tiktoken is absent or cannot load.

    Loading may need the network to fetch the BPE file; on a machine without it
    the import or the load fails and we fall back rather than break a turn.
    """
    try:
        module: Any = importlib.import_module("tiktoken")
        enc: Any = module.get_encoding(encoding)
    except Exception:  # noqa: BLE001 - any failure here just means "use the estimate"
        return None

    def count(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    return count


_default: TokenCounter | None = None
_default_lock = threading.Lock()


def default_token_counter() -> TokenCounter:
    """tiktoken when available (resolved once per process), else :func:`estimate_tokens`."""
    global _default
    with _default_lock:
        if _default is None:
            _default = tiktoken_counter() or estimate_tokens
        return _default
