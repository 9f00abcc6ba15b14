"""Plain-Python reference implementations: the same jobs done the simple way (issue 35).

They are the baselines of ``benchmarks/costs.py``: what a careful person would write
in an afternoon with the standard library only, no integrity scheme beyond a whole-file
hash, no fences. Each runs as a process of its own (``python benchmarks/plain.py read
FILE OFFSET LIMIT``) or is called in process (``read_page``).

* ``read``: open the file, SHA-256 of the whole file against the expected digest, decode
  UTF-8, split lines, print the page.
* ``grep``: the same, then ``re.search`` per line, the first N matching lines printed.
* ``gc-plan``: walk the store's session directories, read one manifest per session (the
  references it lists), and write one JSONL line per artifact that is not referenced and
  older than the TTL (its mtime, from a ``stat``: the information it needs to decide).
* ``gc-apply``: take an exclusive file lock, replay the plan, unlink each listed file.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import sys
import time


def read_page(path: str, offset: int, limit: int, sha256: str | None = None) -> str:
    with open(path, "rb") as fh:
        data = fh.read()
    digest = hashlib.sha256(data).hexdigest()
    if sha256 is not None and digest != sha256:
        raise SystemExit("checksum mismatch")
    lines = data.decode("utf-8").splitlines()
    return "\n".join(lines[offset:offset + limit]) + "\n"


def grep(path: str, pattern: str, max_matches: int) -> str:
    with open(path, "rb") as fh:
        data = fh.read()
    hashlib.sha256(data).hexdigest()
    rx = re.compile(pattern)
    out = []
    for number, line in enumerate(data.decode("utf-8").splitlines(), 1):
        if rx.search(line):
            out.append(f"{number}: {line}")
            if len(out) >= max_matches:
                break
    return "\n".join(out) + "\n"


def gc_plan(root: str, out: str, now: float | None = None, ttl: float = 86400.0) -> int:
    """One line per unreferenced artifact body (and its sidecar) under ``root``'s sessions,
    older than ``ttl`` seconds at ``now`` (default: the clock)."""
    sessions = os.path.join(root, "objects", "v1", "sessions")
    now = time.time() if now is None else now
    planned = 0
    with open(out, "w") as plan:
        for session in os.scandir(sessions):
            manifest = os.path.join(session.path, "journal", "plain-manifest.json")
            try:
                with open(manifest, "rb") as fh:
                    referenced = set(json.loads(fh.read()).get("referenced", ()))
            except FileNotFoundError:
                referenced = set()
            artifacts = os.path.join(session.path, "artifacts")
            for entry in os.scandir(artifacts):
                if entry.name.endswith(".idx") or entry.name in referenced:
                    continue
                if now - entry.stat().st_mtime < ttl:  # its age, as any GC must judge it
                    continue
                plan.write(json.dumps({"path": entry.path, "sidecar": entry.path + ".idx"}) + "\n")
                planned += 1
    return planned


def gc_apply(root: str, plan: str) -> int:
    deleted = 0
    with open(os.path.join(root, "plain-gc.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(plan, "rb") as fh:
            for line in fh:
                entry = json.loads(line)
                os.unlink(entry["path"])
                os.unlink(entry["sidecar"])
                deleted += 1
    return deleted


def main(argv: list[str]) -> None:
    job, *rest = argv
    if job == "read":
        sys.stdout.write(read_page(rest[0], int(rest[1]), int(rest[2]), rest[3] if len(rest) > 3 else None))
    elif job == "grep":
        sys.stdout.write(grep(rest[0], rest[1], int(rest[2])))
    elif job == "gc-plan":
        print(gc_plan(rest[0], rest[1], float(rest[2]) if len(rest) > 2 else None))
    elif job == "gc-apply":
        print(gc_apply(rest[0], rest[1]))
    else:
        raise SystemExit(f"unknown job {job!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
