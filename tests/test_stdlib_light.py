"""stdlib_light's SHA-256, JSON parser and encoder are hashlib's and json's, without their imports."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill import stdlib_light

ROOT = Path(__file__).resolve().parents[1]


def _refuse(text: str) -> Any:
    raise LookupError(text)


def _integer(digits: str) -> int:
    if len(digits) > 18:
        raise LookupError(digits)
    return int(digits)


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise LookupError("repeated key")
    return out


HOOKS: list[dict[str, Any]] = [
    {"parse_float": _refuse, "parse_int": _integer, "parse_constant": _refuse, "object_pairs_hook": _unique},
    {"parse_float": float, "parse_int": int, "parse_constant": lambda c: {"NaN": math.nan}.get(c, c),
     "object_pairs_hook": lambda pairs: pairs},
]
DOCUMENTS = ['{"a": 1}', ' \t\n{"a": [1, true, false, null, "caf\u00e9"]}\r\n ', '{"a": 1} x', "{} {}", "",
             "   ", '{"a": 1.5}', '{"a": NaN}', '{"a": -Infinity}', '{"a": 1, "a": 2}',
             '{"a": 1234567890123456789}', '\ufeff{"a": 1}',
             '{"a": "\\ud83d\\ude00 \\u001b[31m \\"q\\" \\\\"}',
             '{"a": "\\ud800"}', '{"a": "\x01"}', '{"a": {"b": [[], {}, -0, 0e1]}}', '[1, 2', '{"a" 1}',
             '"just a string"', "17", "null", "[1,]",
             '{"etag": "\\"abc\\"", "size": 12, "metadata": {"k": "v"}, '
             '"last_modified": "2026-12-03T06:00:00+00:00"}']


def _outcome(call: Any, *args: Any, **kw: Any) -> tuple[str, Any]:
    """(``"value"``, the value and its type's name) or (``"error"``, the exception's family)."""
    try:
        got = call(*args, **kw)
    except LookupError as exc:  # a hook refused: the same hook, at the same place
        return "hook", str(exc)
    except (ValueError, TypeError, RecursionError) as exc:
        return "error", "ValueError" if isinstance(exc, ValueError) else type(exc).__name__
    return "value", (repr(got), type(got).__name__)


@pytest.mark.parametrize("hooks", HOOKS, ids=["fast_read's", "permissive"])
@pytest.mark.parametrize("text", DOCUMENTS)
def test_loads_reads_what_json_loads_reads_and_refuses_what_it_refuses(text: str,
                                                                       hooks: dict[str, Any]) -> None:
    """The same value (and type) or the same refusal, for valid, invalid and hostile documents."""
    assert _outcome(stdlib_light.loads, text, **hooks) == _outcome(json.loads, text, **hooks)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list(' \t\n\r{}[]":,.-+eE0123456789aeflnrstu\\\ud800\u00e9x')),
               max_size=40))
def test_loads_agrees_with_json_on_random_documents(text: str) -> None:
    """Random strings of JSON's own characters: the same value or the same refusal, every time."""
    for hooks in HOOKS:
        assert _outcome(stdlib_light.loads, text, **hooks) == _outcome(json.loads, text, **hooks)


VALUES: list[dict[str, Any]] = [
    {"session": "ab" * 16, "op": "read", "shown_chars": 40_000, "shown_truncated": False, "first_line": None},
    {"shown": "caf\u00e9 \u4e2d\u6587 \U0001f600 \x00\x1f \x7f \u2028 \"q\" \\ \t"},
    {"z": 1, "a": {"y": [1, 2.5, True, None], "b": "v"}, "m": -(2**70)},
    {"lone": "\ud800 surrogate"},
    {"nan": math.nan}, {"inf": [math.inf]}, {"bytes": b"x"},
    {1: "int key", None: "none key", 2.5: "float key"},
    {(1, 2): "tuple key"}, {},
]


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
@pytest.mark.parametrize("settings_", [
    {"ensure_ascii": True, "separators": (",", ":"), "allow_nan": False},
    {"ensure_ascii": False, "separators": (",", ":"), "allow_nan": False},
    {"sort_keys": True}, {}, {"ensure_ascii": False, "allow_nan": True, "sort_keys": True}])
def test_dumps_writes_what_json_dumps_writes(value: dict[str, Any], settings_: dict[str, Any]) -> None:
    """The same string, or the same kind of refusal (NaN not allowed, a value or key it cannot write)."""
    assert _outcome(stdlib_light.dumps, value, **settings_) == _outcome(json.dumps, value, **settings_)


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet=st.characters(blacklist_categories=())), ensure_ascii=st.booleans())
def test_json_string_is_json_dumps_of_a_str(text: str, ensure_ascii: bool) -> None:
    """Any string, lone surrogates and control characters included, is written as json.dumps writes it."""
    ours = stdlib_light.json_string(text, ensure_ascii=ensure_ascii)
    assert ours == json.dumps(text, ensure_ascii=ensure_ascii)


def test_dumps_refuses_a_circular_value_as_json_does() -> None:
    """A dict that holds itself is a ValueError both ways, not a recursion."""
    looped: dict[str, Any] = {}
    looped["self"] = looped
    assert _outcome(stdlib_light.dumps, looped) == _outcome(json.dumps, looped) == ("error", "ValueError")


@pytest.mark.parametrize("data", [b"", b"abc", os.urandom(1 << 20)])
def test_sha256_is_hashlibs(data: bytes) -> None:
    """The same digests, from the same constructor (OpenSSL's, as hashlib picks it), updates included."""
    ours = stdlib_light.sha256(data)
    assert ours.hexdigest() == hashlib.sha256(data).hexdigest() and ours.name == "sha256"
    ours.update(b"more")
    assert ours.digest() == hashlib.sha256(data + b"more").digest()
    assert type(ours) is type(hashlib.sha256())


def test_without_the_c_halves_the_packages_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    """An interpreter without ``_json``'s scanner and encoder gets json's own functions' answers."""
    monkeypatch.setattr(stdlib_light, "_c_json", lambda: None)
    for text in DOCUMENTS:
        assert _outcome(stdlib_light.loads, text, **HOOKS[0]) == _outcome(json.loads, text, **HOOKS[0])
    for value in VALUES:
        ours = _outcome(stdlib_light.dumps, value, sort_keys=True)
        assert ours == _outcome(json.dumps, value, sort_keys=True)
    for text in ("plain", "caf\u00e9 \x7f \"q\" \\ \n", "\ud800"):
        for ascii_only in (True, False):
            ours = stdlib_light.json_string(text, ensure_ascii=ascii_only)
            assert ours == json.dumps(text, ensure_ascii=ascii_only)


def test_in_a_fresh_process_neither_json_nor_hashlib_is_imported() -> None:
    """What this module is for: the three functions used, and the two packages never loaded."""
    code = ("import sys\nfrom s3spill import stdlib_light as s\n"
            "h = s.sha256(b'x').hexdigest()\n"
            "v = s.loads(' {\"a\": [1, \"b\"]} ', parse_float=float, parse_int=int, parse_constant=str,"
            " object_pairs_hook=dict)\n"
            "d = s.dumps({'b': v, 'a': 1}, sort_keys=True)\n"
            "print(h, d, 'json' in sys.modules, 'hashlib' in sys.modules)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         timeout=60).stdout.split()
    assert out == [hashlib.sha256(b"x").hexdigest(), '{"a":', '1,', '"b":', '{"a":', '[1,', '"b"]}}',
                   "False", "False"]
