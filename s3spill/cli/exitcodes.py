"""The one table of exit codes every ``s3spill`` command uses (the README prints the same table).

Why one table: a code means the same thing whichever command returns it, so a cron job or
an agent harness can branch on it without knowing the command (3 used to be "races" in
``gc`` and "corrupt" in ``journal verify``). ``run`` is the exception by design: once its
command has started, it exits with that command's status, as a shell would.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """What a non-zero status means; the values are part of the CLI's contract."""

    OK = 0
    NEGATIVE = 1
    ERROR = 2
    RETAINED = 3
    REFUSED = 4
    CORRUPT = 5
    UNAVAILABLE = 6
    JOURNAL_DOUBT = 7
    LOCKED = 8
    INTERNAL = 70
    INTERRUPTED = 130
    BROKEN_PIPE = 141


#: One sentence per code, shown by ``s3spill --help`` and in the README.
MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "done",
    ExitCode.NEGATIVE: "done, and the answer is no: `grep` found no match, `doctor` found a "
    "guarantee missing, `reconcile` left some transactions pending",
    ExitCode.ERROR: "usage error or failed request: bad arguments or configuration, missing "
    "credentials, an id of another session, a missing object or bucket, a full disk",
    ExitCode.RETAINED: "`gc` finished, but some planned deletions met a race or a store error "
    "and were retained: run again later",
    ExitCode.REFUSED: "refused, nothing changed: `gc` would not plan or apply (unsafe TTL, a "
    "plan that does not verify, no safe delete method), or the store ignores conditional "
    "writes, so the journal, references and GC will not run on it",
    ExitCode.CORRUPT: "bytes or records failed their digest (an artifact, an index, a lease "
    "journal); nothing unverified was printed, and GC keeps the session's artifacts",
    ExitCode.UNAVAILABLE: "the store could not be reached or kept failing until the deadline; "
    "a write's outcome may be unknown, so retry with the same ids",
    ExitCode.JOURNAL_DOUBT: "`gc` finished, but some session's lease journal is in doubt (its "
    "manifest is missing or behind the history its owner slots and segments show; a session that "
    "never wrote a manifest is not doubt): everything in it was "
    "kept; look at it with `journal verify` (an alert, not a retry)",
    ExitCode.LOCKED: "`gc` did not start: another run holds this scope's lock (in the store, "
    "with an expiry); wait with `--lock-wait SECONDS`, or let the CronJob try again later",
    ExitCode.INTERNAL: "an unexpected error (a bug): run again with `--debug` for the traceback",
    ExitCode.INTERRUPTED: "interrupted: Ctrl-C, or SIGTERM during `gc apply`/`gc run`, which "
    "finishes the sessions in flight and still prints the report of what it did",
    ExitCode.BROKEN_PIPE: "the reader of stdout went away (`head -0`); nothing else is printed",
}


def markdown_table() -> str:
    """The table as the README shows it (a test keeps the two identical)."""
    rows = ["| exit | meaning |", "|---|---|"]
    rows += [f"| {int(code)} | {MEANINGS[code]} |" for code in ExitCode]
    return "\n".join(rows) + "\n"


def help_epilog() -> str:
    """The table as plain text for ``s3spill --help``."""
    import textwrap  # only for --help; the fast paths import this module too

    lines = ["exit codes (run exits with its command's own status):"]
    lines += [textwrap.fill(MEANINGS[code].replace("`", ""), width=88,
                            initial_indent=f"  {int(code):>3}  ", subsequent_indent=" " * 7)
              for code in ExitCode]
    return "\n".join(lines)
