"""The keys GC names again and again, at the cost of a cache lookup: same answers as :mod:`s3spill.keys`.

Why: the plan classifies every listed key (an artifact and its ``.idx`` sidecar: two per
artifact), and :func:`~s3spill.keys.parse_key` splits each key into its segments and
checks the session hash with a regular expression every time; the apply builds each
deleted artifact's key eight times (its checks, the fence, the reads and the deletes),
three checks each. Together a tenth of a local GC's CPU (issue 35).

* :func:`parse_listed_key`: a listing's keys come a directory at a time, so the directory
  part (``v1/sessions/<session_hash>/artifacts``) is judged once, by ``parse_key``'s own
  checks, and remembered; only the leaf is checked per key, against the layout's own name
  pattern. A key whose directory is not a session's ``artifacts/`` goes through
  ``parse_key`` itself.
* :func:`artifact_key` / :func:`index_key`: :func:`s3spill.keys.artifact_key` cached per
  exact pair of strings; a refused pair raises, so is never cached.

Each gives the :mod:`s3spill.keys` answer for every input (``tests/gc/test_key_cache.py``
checks it on hostile keys, with hypothesis); a ``str`` subclass, which may hash and
compare as it likes, is never looked up in a cache.
"""

from __future__ import annotations

import functools

from s3spill import keys
from s3spill.keys import _HEX32, _NAME, INDEX_SUFFIX, LAYOUT_VERSION, ParsedKey, parse_key

_IDX = len(INDEX_SUFFIX)


@functools.lru_cache(maxsize=1024)
def _artifacts_directory(head: str) -> str | None:
    """The session hash when ``head`` is exactly ``v1/sessions/<session_hash>/artifacts``, by
    ``parse_key``'s own checks (its ``_HEX32`` match, whatever that admits); else ``None``."""
    parts = head.split("/")
    if (len(parts) == 4 and parts[0] == LAYOUT_VERSION and parts[1] == "sessions" and parts[3] == "artifacts"
            and _HEX32.match(parts[2])):
        return parts[2]
    return None


def parse_listed_key(key: str) -> ParsedKey:
    """:func:`~s3spill.keys.parse_key` of ``key``, the directory's checks taken from a cache."""
    if type(key) is not str:
        return parse_key(key)
    head, _, leaf = key.rpartition("/")
    shash = _artifacts_directory(head)
    if shash is None:
        return parse_key(key)
    # parse_key's _session_key for an area of two segments under "artifacts": index, artifact,
    # or nothing it knows (no other rule applies to that area)
    if leaf.endswith(INDEX_SUFFIX) and _NAME.match(leaf[:-_IDX]):
        return ParsedKey.of("index", shash, leaf[:-_IDX])
    if _NAME.match(leaf):
        return ParsedKey.of("artifact", shash, leaf)
    return ParsedKey("unknown")


#: Sized for the keys of the sessions in flight (a session's keys are built close together).
_cached_artifact_key = functools.lru_cache(maxsize=8192)(keys.artifact_key)


def artifact_key(shash: str, name: str) -> str:
    """:func:`s3spill.keys.artifact_key`, cached per exact pair of ``str``."""
    if type(shash) is str and type(name) is str:
        return _cached_artifact_key(shash, name)
    return keys.artifact_key(shash, name)


def index_key(shash: str, name: str) -> str:
    """:func:`s3spill.keys.index_key`, from the cached artifact key."""
    return artifact_key(shash, name) + INDEX_SUFFIX
