"""The trigger of every secret rule, and the one question a small output asks of them.

A module of constants and a few functions, importing nothing of detect-secrets: the
detector (:mod:`.detector`) builds its trigger pass (:mod:`.engine`) and rule set from
:data:`TRIGGERS` and :data:`PREFILTERS`, and :func:`may_hold_secret` asks the same union
whether a text can hold a secret at all.
When it cannot, masking it changes nothing, so ``s3spill run`` of a small output never
builds the detector (~0.2 s). The patterns are built by :mod:`.trigger_build` (what each
is, and why) and written out in :mod:`.trigger_patterns`: this module's import builds none
of them (~1 ms less for every page read's process).
"""

from __future__ import annotations

from s3spill.context.secrets.anchors import no_anchor
from s3spill.context.secrets.trigger_patterns import BASE64_ALPHABET as BASE64_ALPHABET
from s3spill.context.secrets.trigger_patterns import PREFILTER_PARTS as PREFILTER_PARTS
from s3spill.context.secrets.trigger_patterns import PREFILTERS as PREFILTERS
from s3spill.context.secrets.trigger_patterns import SIEVES as SIEVES
from s3spill.context.secrets.trigger_patterns import TRIGGERS as TRIGGERS

TYPE_CHECKING = False  # not from typing: a page read imports this module (issue 35)
if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["BASE64_ALPHABET", "PREFILTERS", "PREFILTER_PARTS", "SIEVES", "TRIGGERS", "lines_kept",
           "may_hold_secret", "prefilter", "prefilter_parts", "sieve"]


def sieve(kind: str) -> str:
    """The pattern :func:`may_hold_secret`'s first pass looks for, for rule ``kind``."""
    return SIEVES.get(kind) or prefilter(kind)


def prefilter(kind: str) -> str:
    """The pattern the chunk pass looks for, for rule ``kind``."""
    return PREFILTERS.get(kind) or TRIGGERS[kind]


_PARTS_OF = {PREFILTERS[k]: parts for k, parts in PREFILTER_PARTS.items()}


def prefilter_parts(pattern: str) -> tuple[str, ...]:
    """``pattern`` (a prefilter) as the expressions Hyperscan compiles for it."""
    return _PARTS_OF.get(pattern, (pattern,))


#: Each union compiled so far, by name: a dict, not ``functools.cache`` (``functools`` and the
#: ``collections`` it imports are ~3 ms of a page read's process that nothing else there needs).
#: Two threads may both compile one the first time; either result is the same searcher.
_UNIONS: dict[str, Callable[[bytes], object]] = {}


def _union(exact: bool) -> Callable[[bytes], object]:
    """The union of every rule's trigger (``exact``) or of the prefilters, compiled once."""
    return _once("exact" if exact else "prefilters",
                 lambda: "|".join(f"(?:{TRIGGERS[k] if exact else prefilter(k)})" for k in TRIGGERS))


def _sieve_union() -> Callable[[bytes], object]:
    """The union of the sieves (:func:`sieve`), compiled once."""
    return _once("sieves", lambda: "|".join(f"(?:{sieve(k)})" for k in TRIGGERS))


def _once(name: str, pattern: Callable[[], str]) -> Callable[[bytes], object]:
    """The union ``name``, compiled from ``pattern()`` the first time it is asked for."""
    found = _UNIONS.get(name)
    if found is None:
        found = _UNIONS[name] = _compiled(pattern())
    return found


def _compiled(pattern: str) -> Callable[[bytes], object]:
    """``pattern`` as LATIN-1 bytes (``[\x80-\xff]`` is any non-ASCII byte), with RE2's binding
    alone when the package is not loaded yet (:mod:`.re2_light`: a page read's process)."""
    from s3spill.context.secrets.re2_light import searcher

    # max_mem: the exact union's DFA is larger; short of memory RE2 runs slower
    return searcher(pattern.encode(), max_mem=64 << 20)


def may_hold_secret(data: bytes) -> bool:
    """Could masking change ``data``? False only when no rule's trigger matches anywhere in it.

    Exact as a "no": every line a rule can flag matches that rule's trigger (the
    detector's own prefilter relies on it, and tests/test_context_secrets.py checks it),
    and the detector has no rule without one (``SecretDetector.untriggered`` is empty).

    Three passes, each a superset of the exact union, so any "no" is the answer: the
    sieves' union (:func:`sieve`: the prefilters, with the entropy rule's tight on the
    value's length; ~1.5 ms to compile), then the prefilters' (:data:`PREFILTERS`: the
    entropy rule's wants a letter past ``f``, so hex digests pass it; ~1.5 ms), then the
    exact union (~4-10 ms to compile), because a "yes" builds the detector, whose trigger
    engine costs far more in a fresh process (~0.7 s for Hyperscan's database). A request
    log's ``path=/api/v1/items/00000014`` on every line (a 22-character value) matches the
    loose entropy prefilter, not the sieve; ``sha256:<64 hex digits>`` the sieve, not the
    prefilter. A pass that matches stops at its first match, so a text that goes on to
    the next pass costs one compile more, not one scan more.
    """
    if no_anchor(data):  # no trigger's match can be in it (tests/context/secrets/test_anchors.py)
        return False
    return (_sieve_union()(data) is not None and _union(False)(data) is not None
            and _union(True)(data) is not None)


def lines_kept(window: bytes, first: int, end: int) -> bool:
    """Does masking a chunk whose window is ``window`` (:func:`~.masking.mask_view`, given
    the stored text around the chunk) leave ``window[first:end]`` (whole lines) as stored?

    Masking works line by line on the window and keeps every byte's place: a line changes
    only where a rule flags it, and a rule flags a line only where its trigger matches inside
    that line (what the detector's own shortcut relies on) — except in a private key block,
    which spans lines from a BEGIN line to an END line (a window that starts inside one is
    masked up to its END), and every BEGIN and END line holds the key rule's trigger, a few
    literals. So when none of those is anywhere in the window and no trigger matches inside
    the lines, masking leaves them as stored, wherever else in the window a secret is: only
    those lines are searched (a page's ~1/6 of a 1 MiB chunk). False: it may not.
    """
    if _KEY_MARKER_BYTE in window and any(marker in window for marker in _KEY_MARKERS):
        return False  # a key block may reach into the lines from anywhere in the window
    return not may_hold_secret(window[first:end])


#: The key-block trigger's literals (it is an alternation of them: a test says so).
_KEY_MARKERS = tuple(m.encode() for m in TRIGGERS["private-key"].split("|"))
#: A byte every marker holds (``P``), looked for first: one ``memchr`` (~0.04 ms a MiB) answers
#: for a window without it, where the three searches cost ~0.9 ms. ``b""``: none in common.
_KEY_MARKER_BYTE = next((bytes([b]) for b in _KEY_MARKERS[0]
                         if all(bytes([b]) in m for m in _KEY_MARKERS)), b"")
