"""A few bytes every secret rule's trigger needs, looked for with ``in`` before RE2 is loaded.

Why: ``s3spill run`` of a small output asks :func:`~.triggers.may_hold_secret` whether
masking could change it, and a fresh process paid ~5 ms for it (building the trigger
patterns, importing RE2, compiling the union): a third of what ``run`` adds to the
interpreter's start. Every match of every trigger in :data:`~.triggers.TRIGGERS` holds
one of :data:`ANCHORS`, case aside (a ``:`` or ``=`` for the assignments, a ``.`` for the
dotted tokens, a keyword's or a token prefix's letters); so a text with none of them
matches no trigger, and masking cannot change it. A text with one is asked RE2 as before.
tests/context/secrets/test_anchors.py generates matches of every trigger (hypothesis)
and checks that each holds an anchor, and that no text without one fires the union.
"""

from __future__ import annotations

__all__ = ["ANCHORS", "no_anchor"]

#: Lower-case; which rule needs which is in the test. ``in`` over a few KB is microseconds.
ANCHORS = (b":", b"=", b".", b"key", b"pass", b"pwd", b"secret", b"contrase", b"token", b"private",
           b"a3t", b"abia", b"acca", b"akia", b"asia", b"aws", b"akc", b"ap", b"cl", b"gh", b"gl",
           b"gr1348941", b"softlayer", b"eyj", b"-us", b"t3blbkfj", b"pypi-age", b"xox", b"sl", b"sq0csp-",
           b"k_live_", b"ac", b"sk")


#: The anchors that lowering leaves as they are, looked for first in ``data`` itself: nearly
#: every large text holds one, and then no lowered copy of it is made (~0.4 ms a MiB).
_UNCASED = tuple(anchor for anchor in ANCHORS if anchor.lower() == anchor.upper())


def no_anchor(data: bytes) -> bool:
    """True when ``data`` holds no anchor: no trigger can match it (False: ask RE2)."""
    if any(anchor in data for anchor in _UNCASED):
        return False
    low = data.lower()
    return not any(anchor in low for anchor in ANCHORS)
