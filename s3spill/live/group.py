"""A background command's process group, identified well enough to end it safely later.

Why more than a pid: ``stop`` must end every process the command started (a member that
ignores SIGTERM included), also after the supervisor that started it died and the state
was finished as lost — possibly much later, when the number may name someone else's
group. So the state records the group id with its leader's start time (clock ticks since
boot, ``/proc/<pid>/stat`` field 22) and the boot id: a group is signalled only while its
leader is that very process, or — the leader gone — while processes of that group id
started no earlier than it on the same boot remain (a group id cannot be reused while a
member of it lives). Linux only (``/proc``); elsewhere nothing is recorded and ``stop``
signals by pid as before.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass

__all__ = ["ProcessGroup", "end_group", "identify", "members"]

_PROC = "/proc"


@dataclass(frozen=True)
class ProcessGroup:
    pgid: int
    leader_start: int
    boot_id: str


def _boot_id() -> str | None:
    try:
        with open(f"{_PROC}/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:
        return None


def _stat(pid: int) -> tuple[int, int] | None:
    """(process group, start time) of ``pid``, or None when it is gone (or no /proc)."""
    try:
        with open(f"{_PROC}/{pid}/stat", encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) "; comm may hold spaces
    return int(fields[2]), int(fields[19])  # field 5: pgrp, field 22: starttime


def identify(pid: int) -> ProcessGroup | None:
    """The group ``pid`` leads (the command was started in a session of its own)."""
    boot, stat = _boot_id(), _stat(pid)
    if boot is None or stat is None or stat[0] != pid:
        return None
    return ProcessGroup(pgid=pid, leader_start=stat[1], boot_id=boot)


def members(group: ProcessGroup) -> list[int]:
    """The live processes of ``group`` (empty when it is gone, or the id now names another)."""
    if _boot_id() != group.boot_id:
        return []
    leader = _stat(group.pgid)
    if leader is not None and leader[0] == group.pgid and leader[1] != group.leader_start:
        return []  # the id leads another group now
    found = []
    for name in os.listdir(_PROC):
        if name.isdigit():
            stat = _stat(int(name))
            if stat is not None and stat[0] == group.pgid and stat[1] >= group.leader_start:
                found.append(int(name))
    return found


def _signal(group: ProcessGroup, sig: int) -> None:
    if members(group):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(group.pgid, sig)


def end_group(group: ProcessGroup, grace: float = 5.0, *, term: bool = True) -> bool:
    """SIGTERM the group, SIGKILL whatever of it is left after ``grace``; True when none lives.

    Zombies (children not yet reaped by a parent that is itself gone) count as ended.
    """
    if term:
        _signal(group, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while _alive(group) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(group):
        _signal(group, signal.SIGKILL)
        deadline = time.monotonic() + 2.0
        while _alive(group) and time.monotonic() < deadline:
            time.sleep(0.05)
    return not _alive(group)


def _alive(group: ProcessGroup) -> bool:
    for pid in members(group):
        try:
            with open(f"{_PROC}/{pid}/stat", encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        if text[text.rindex(")") + 2:].split()[0] != "Z":
            return True
    return False
