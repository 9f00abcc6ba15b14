"""Named failpoints for crash tests (the gofail / fail-rs pattern).

A crash test needs the process to stop *exactly* between two protocol steps — after
PREPARED is durable but before the memory write, after the owner wrote the slot but
before COMMITTED — and a random ``kill`` cannot aim that well. Each such step calls
:func:`failpoint` with a stable name. The call is inert (one dict lookup) unless the
environment variable ``S3SPILL_FAILPOINTS`` names it::

    S3SPILL_FAILPOINTS="journal.after_prepared=kill"
    S3SPILL_FAILPOINTS="owner.after_publish_write=sleep;reconcile.after_seal=raise"

Actions:

``kill``
    SIGKILL the process on the spot: no ``finally``, no flush, no atexit — a crash.
``sleep`` / ``sleep(MS)``
    announce ``S3SPILL_FAILPOINT_REACHED <name>`` on stderr, then block (forever, or
    for MS milliseconds) so the test can observe the state and SIGKILL the process.
``raise``
    raise :class:`FailpointTriggered` (deliberately *not* an s3spill error, so code
    that must treat unknown exceptions as "outcome unknown" does so).
``off``
    inert (handy to switch one point off in a list).

Any action may end in ``@N``: it fires on the N-th time the point is reached in this
process (earlier passes are inert), for steps that repeat — ``live.after_segment=kill@5``
dies after the fifth segment, with four committed before it.

Names are declared by the module that owns the step (:func:`declare`), so ``s3spill
failpoints`` style tooling and tests can list them; a name in the environment that no
imported module declared is ignored with a warning (it may belong to a module this
process never imports).
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from dataclasses import dataclass

from s3spill.log import get_logger

ENV_VAR = "S3SPILL_FAILPOINTS"
REACHED_MARKER = "S3SPILL_FAILPOINT_REACHED"

_ACTION = re.compile(r"^(kill|raise|off|sleep)(?:\((\d{1,9})\))?(?:@([1-9]\d{0,8}))?\Z")
_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+\Z")

log = get_logger("s3spill.failpoints")

_declared: dict[str, str] = {}
_parsed_for: str | None = None
_active: dict[str, Action] = {}
_hits: dict[str, int] = {}


class FailpointTriggered(Exception):
    """Raised by a failpoint whose action is ``raise``: an arbitrary, unexpected failure."""


@dataclass(frozen=True)
class Action:
    kind: str
    millis: int | None = None
    #: Fire only on this pass (1-based); None: every pass.
    hit: int | None = None


def declare(name: str, description: str) -> str:
    """Register a failpoint name (module import time); returns the name for use as a constant."""
    if not _NAME.match(name):
        raise ValueError(f"bad failpoint name {name!r}")
    _declared[name] = description
    return name


def declared() -> dict[str, str]:
    """Every failpoint declared by the modules imported so far, with what it interrupts."""
    return dict(sorted(_declared.items()))


def parse(spec: str) -> dict[str, Action]:
    """Parse ``name=action;name=action`` (``,`` also separates); raises ValueError if malformed."""
    out: dict[str, Action] = {}
    for item in re.split(r"[;,]", spec):
        item = item.strip()
        if not item:
            continue
        name, sep, action = item.partition("=")
        name, action = name.strip(), action.strip()
        m = _ACTION.match(action)
        if not sep or not _NAME.match(name) or not m:
            raise ValueError(f"malformed failpoint {item!r}: expected"
                             " name=kill|sleep[(ms)]|raise|off[@N]")
        if m.group(2) is not None and m.group(1) != "sleep":
            raise ValueError(f"only sleep takes an argument: {item!r}")
        out[name] = Action(m.group(1), int(m.group(2)) if m.group(2) is not None else None,
                           int(m.group(3)) if m.group(3) is not None else None)
    return out


def _actions() -> dict[str, Action]:
    global _parsed_for, _active
    spec = os.environ.get(ENV_VAR, "")
    if spec != _parsed_for:
        try:
            _active = parse(spec)
        except ValueError as exc:
            # A typo must not silently disable a crash test: make it loud.
            raise RuntimeError(f"{ENV_VAR}: {exc}") from None
        _parsed_for = spec
        for name in _active:
            if name not in _declared:
                log.warning("failpoint.unknown", failpoint=name)
    return _active


def failpoint(name: str) -> None:
    """Mark a protocol step; does nothing unless ``S3SPILL_FAILPOINTS`` names it."""
    if not os.environ.get(ENV_VAR):
        return  # fast path: no failpoints configured
    action = _actions().get(name)
    if action is None or action.kind == "off":
        return
    if action.hit is not None:
        _hits[name] = _hits.get(name, 0) + 1
        if _hits[name] != action.hit:
            return
    if action.kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)  # pragma: no cover - SIGKILL is not deliverable late, but be sure
    if action.kind == "raise":
        raise FailpointTriggered(f"failpoint {name} triggered")
    # sleep: tell the watching test where we are, then block.
    sys.stderr.write(f"{REACHED_MARKER} {name}\n")
    sys.stderr.flush()
    if action.millis is None:
        while True:  # pragma: no cover - ended by the test's SIGKILL
            time.sleep(3600)
    time.sleep(action.millis / 1000)
