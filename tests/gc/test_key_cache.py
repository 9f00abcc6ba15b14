"""GC's cached keys are :mod:`s3spill.keys`'s: the listing classifier agrees with ``parse_key`` on every
key, hostile ones included, and the cached artifact keys are the ones built afresh."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import s3spill.gc.key_cache as key_cache
from s3spill import keys
from s3spill.errors import InvalidKey
from s3spill.gc.key_cache import parse_listed_key
from tests.examples import examples

_SH = keys.session_hash("session-1")
_NAME = keys.new_artifact_name("bash")
_HEXISH = st.text(alphabet="0123456789abcdefABx\n", min_size=30, max_size=34)
_SEGMENT = st.one_of(
    st.sampled_from(["v1", "sessions", "artifacts", "journal", "owner", "live", "usage", "", ".", "..",
                     _SH, _SH + "\n", _NAME, _NAME + ".idx", _NAME + "\n", _NAME + ".idx\n", ".idx",
                     _NAME + ".IDX", _NAME + ".idx.idx", "manifest.json"]),
    _HEXISH,
    st.text(max_size=40),
    st.builds(lambda s: _NAME[:-4] + s, st.text(max_size=30)),
)


@settings(max_examples=examples(suite=500, thorough=3000), deadline=None)
@given(st.lists(_SEGMENT, min_size=1, max_size=7))
def test_agrees_with_parse_key_on_hostile_keys(segments: list[str]) -> None:
    """Any string made of layout-like and arbitrary segments is classified as parse_key classifies it."""
    key = "/".join(segments)
    assert parse_listed_key(key) == keys.parse_key(key)


@settings(max_examples=examples(suite=500, thorough=2000), deadline=None)
@given(st.text(max_size=120))
def test_agrees_with_parse_key_on_any_text(key: str) -> None:
    """Arbitrary text (no layout in it at all) gets parse_key's answer too."""
    assert parse_listed_key(key) == keys.parse_key(key)


@given(_HEXISH, st.sampled_from([_NAME, _NAME + ".idx", _NAME + "\n", _NAME + ".idx\n", "x.idx", ""]))
def test_agrees_under_an_artifacts_directory(shash: str, leaf: str) -> None:
    """Under any would-be ``v1/sessions/<hash>/artifacts`` directory, the cached directory check and the
    leaf check give parse_key's answer (a trailing newline, an upper-case or short hash)."""
    key = f"v1/sessions/{shash}/artifacts/{leaf}"
    assert parse_listed_key(key) == keys.parse_key(key)
    assert parse_listed_key(key) == keys.parse_key(key)  # again, from the directory cache


def test_layout_keys_are_classified() -> None:
    """An artifact, its sidecar and the session's journal keys come out as the layout says."""
    assert parse_listed_key(keys.artifact_key(_SH, _NAME)) == keys.ParsedKey("artifact", _SH, _NAME)
    assert parse_listed_key(keys.index_key(_SH, _NAME)) == keys.ParsedKey("index", _SH, _NAME)
    assert parse_listed_key(keys.manifest_key(_SH)).kind == "manifest"
    assert parse_listed_key(f"v1/sessions/{_SH}/artifacts/not-a-name").kind == "unknown"


def test_a_str_subclass_is_parsed_without_the_cache() -> None:
    """A ``str`` subclass (which may hash as it likes) still gets parse_key's answer."""

    class Odd(str):
        __slots__ = ()

        def __hash__(self) -> int:
            return 0

    key = Odd(keys.artifact_key(_SH, _NAME))
    assert parse_listed_key(key) == keys.parse_key(key)


def test_artifact_and_index_keys_are_the_same_cached_and_a_refused_pair_raises_every_time() -> None:
    """The cached key is the one keys builds; a bad hash or name raises on every call (never cached)."""
    name = keys.new_artifact_name("bash")
    for _ in range(2):
        assert key_cache.artifact_key(_SH, name) == keys.artifact_key(_SH, name)
        assert key_cache.index_key(_SH, name) == keys.index_key(_SH, name)
    refused = ((_SH.upper(), name), (_SH, name + "/x"), (_SH, "../" + name), (_SH[:-1], name))
    for bad_hash, bad_name in refused:
        for _ in range(2):
            with pytest.raises(InvalidKey):
                key_cache.artifact_key(bad_hash, bad_name)
            with pytest.raises(InvalidKey):
                key_cache.index_key(bad_hash, bad_name)


@settings(max_examples=examples(suite=125, thorough=500), deadline=None)
@given(st.one_of(_HEXISH, st.just(_SH)), st.one_of(st.text(max_size=40), st.just(_NAME), _SEGMENT))
def test_artifact_key_agrees_with_keys_on_hostile_pairs(shash: str, name: str) -> None:
    """For any pair, the cached artifact key is keys.artifact_key's answer, or the same refusal."""
    def answer(fn: object, *args: str) -> object:
        try:
            return fn(*args)  # type: ignore[operator]
        except InvalidKey:
            return InvalidKey
    for _ in range(2):
        assert answer(key_cache.artifact_key, shash, name) == answer(keys.artifact_key, shash, name)


def test_artifact_key_of_a_str_subclass_is_built_without_the_cache() -> None:
    """A ``str`` subclass (which may hash as it likes) gets the key built afresh."""

    class Odd(str):
        __slots__ = ()

        def __hash__(self) -> int:
            return 0

    name = keys.new_artifact_name("bash")
    assert key_cache.artifact_key(Odd(_SH), Odd(name)) == keys.artifact_key(_SH, name)
