"""json's C parser and encoder, and OpenSSL's SHA-256, without the ``json`` and ``hashlib`` packages.

Why: a model's page read or grep through the CLI is a process of its own (issue 35), and
two standard-library imports cost it more than the work they do. ``import json`` is
~2.5-3 ms of CPU in a fresh process (its Python half compiles six regular expressions),
where the C half :mod:`_json` it hands every call to loads in ~0.4 ms; ``import hashlib``
is ~1 ms more than ``_hashlib`` alone (it builds and probes a constructor for every
algorithm it names, and loads ``_blake2``). A read needs SHA-256 and a few small JSON
documents (the local store's trailer, the index, the usage event): those are what this
module gives, each the very function the package would have used:

* :func:`sha256` is ``hashlib.sha256``: ``_hashlib.openssl_sha256`` once it constructs
  (``hashlib``'s own probe, ``usedforsecurity=False``), else the package's choice;
* :func:`loads` is ``json.loads`` of a ``str``: ``JSONDecoder.decode`` around the C scanner
  ``_json.make_scanner`` built from the same settings (whitespace skipped on both sides as
  its ``WHITESPACE`` pattern does, a BOM refused), and :func:`dumps` is ``json.dumps``
  of a dict: the C encoder ``_json.make_encoder`` with the settings ``JSONEncoder`` gives it,
  and :func:`json_string` is ``json.dumps`` of a ``str``: the C function that encoder calls for one.

Where a C half is missing (another interpreter), the package itself is used
(tests/test_stdlib_light.py compares both on the inputs the read path meets and on hostile
ones, random ones too). This module imports nothing at load time.
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["dumps", "json_string", "loads", "sha256"]

_JSON_WHITESPACE = " \t\n\r"  # json.decoder.WHITESPACE_STR, what its WHITESPACE pattern matches
_sha256: Callable[..., Any] | None = None


def sha256(data: bytes = b"") -> Any:
    """``hashlib.sha256(data)``: the same constructor, found without importing ``hashlib``."""
    global _sha256
    if _sha256 is None:
        _sha256 = _sha256_constructor()
    return _sha256(data)


def _sha256_constructor() -> Callable[..., Any]:
    if "hashlib" not in sys.modules:
        try:
            import _hashlib

            openssl: Callable[..., Any] = _hashlib.openssl_sha256
            openssl(usedforsecurity=False)  # hashlib's probe (__get_openssl_constructor)
            return openssl
        except (ImportError, AttributeError, ValueError):
            pass
    import hashlib

    return hashlib.sha256


class _Decoder:
    """The attributes ``_json.make_scanner`` reads of a ``JSONDecoder`` (its ``scan_once``)."""

    def __init__(self, hooks: dict[str, Any]) -> None:
        self.strict = True
        self.object_hook = hooks.get("object_hook")
        self.object_pairs_hook = hooks.get("object_pairs_hook")
        self.parse_float = hooks.get("parse_float") or float
        self.parse_int = hooks.get("parse_int") or int
        self.parse_constant = hooks["parse_constant"]


def _c_json() -> Any:
    """``_json`` when it has both C halves (which ``json`` itself then uses); else None."""
    try:
        import _json
    except ImportError:
        return None
    return _json if hasattr(_json, "make_scanner") and hasattr(_json, "make_encoder") else None


def loads(text: str, *, parse_float: Callable[[str], Any], parse_int: Callable[[str], Any],
          parse_constant: Callable[[str], Any],
          object_pairs_hook: Callable[[list[tuple[str, Any]]], Any]) -> Any:
    """``json.loads(text, ...)`` of a ``str`` with these four hooks (all of them given: the C
    scanner then calls each one, as the package's own decoder built from them does).

    An invalid document raises a ``ValueError`` where the package raises one: the scanner's
    ``json.JSONDecodeError`` (which imports ``json`` then), or a plain one for a missing
    value, extra data or a BOM; a hook's own exception passes through as it would there."""
    c = _c_json()
    if c is None or type(text) is not str:
        import json

        return json.loads(text, parse_float=parse_float, parse_int=parse_int, parse_constant=parse_constant,
                          object_pairs_hook=object_pairs_hook)
    if text.startswith("\ufeff"):
        raise ValueError("Unexpected UTF-8 BOM (decode using utf-8-sig)")
    scan_once = c.make_scanner(_Decoder({"parse_float": parse_float, "parse_int": parse_int,
                                         "parse_constant": parse_constant,
                                         "object_pairs_hook": object_pairs_hook}))
    start = len(text) - len(text.lstrip(_JSON_WHITESPACE))
    try:
        value, end = scan_once(text, start)
    except StopIteration as missing:
        raise ValueError(f"Expecting value at {missing.value}") from None
    if text[end:].strip(_JSON_WHITESPACE):
        raise ValueError("Extra data")
    return value


def _not_serializable(value: object) -> Any:
    # JSONEncoder.default's refusal
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def dumps(value: dict[str, Any], *, ensure_ascii: bool = True, separators: tuple[str, str] = (", ", ": "),
          sort_keys: bool = False, allow_nan: bool = True) -> str:
    """``json.dumps(value, ensure_ascii=..., separators=..., sort_keys=..., allow_nan=...)`` of a
    dict: ``JSONEncoder.iterencode``'s one-shot C encoder with the same settings (circular
    references checked, no indent, keys not skipped)."""
    c = _c_json()
    if c is None or type(value) is not dict:
        import json

        return json.dumps(value, ensure_ascii=ensure_ascii, separators=separators, sort_keys=sort_keys,
                          allow_nan=allow_nan)
    item_separator, key_separator = separators
    encode = c.encode_basestring_ascii if ensure_ascii else c.encode_basestring
    chunks = c.make_encoder({}, _not_serializable, encode, None, key_separator, item_separator, sort_keys,
                            False, allow_nan)(value, 0)
    return "".join(chunks)


def json_string(text: str, *, ensure_ascii: bool = True) -> str:
    """``json.dumps(text, ensure_ascii=...)`` of a ``str``: the C function the encoder hands a string
    to (``encode_basestring_ascii``, or ``encode_basestring``), quotes included."""
    c = _c_json()
    if c is None or type(text) is not str:
        import json

        return json.dumps(text, ensure_ascii=ensure_ascii)
    return str((c.encode_basestring_ascii if ensure_ascii else c.encode_basestring)(text))
