"""Per-guarantee report of a conformance run against an S3 endpoint we did not write.

Two halves:

* a pytest plugin (``-p tests.store.conformance_report``): every ``endpoint``-marked test is one
  guarantee; its outcome is recorded as

  - ``honoured``: the test passed;
  - ``refused``: the server answered the request with an error instead of evaluating the
    condition (501 NotImplemented, say): loud, so s3spill can see it and must not rely on it;
  - ``not implemented``: the server accepted the request and silently ignored the
    condition (an assertion failed, or a losing request did not raise): only a probe or a
    test like this one can tell;
  - ``error``: anything else (a setup failure, an unexpected exception).

  It prints a table after the run and writes JSON to ``$S3SPILL_CONFORMANCE_REPORT``.
* a command line (``python -m tests.store.conformance_report``): ``check`` merges that JSON with
  ``s3spill doctor --json`` and compares the result with what was measured before for the
  backend (``scripts/conformance-expected.json``; ``--update`` rewrites it), so CI notices
  a server that changed; ``table`` prints the README's Markdown table from that file.

Why the outcome is not pass/fail only: a refused condition and an ignored one are both
"not honoured", but the first is safe to detect at run time and the second is the silent
data-loss case the doctor exists for.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

HONOURED, REFUSED, NOT_IMPLEMENTED, ERROR, NOT_APPLICABLE = (
    "honoured", "refused", "not implemented", "error", "n/a")
EXPECTED_FILE = Path(__file__).resolve().parents[2] / "scripts" / "conformance-expected.json"

#: Test (or doctor probe) -> the guarantee it measures, in README order.
GUARANTEES: dict[str, str] = {
    "test_create_once": "create-once (`If-None-Match: *` on PUT)",
    "test_threads_race_on_s3": "create-once under a race (16 threads)",
    "test_processes_race_on_s3": "create-once under a race (16 processes)",
    "test_streamed_multipart_write_round_trips": "create-once of a streamed multipart upload",
    "test_stale_put_if_match_fails_and_changes_nothing": "compare-and-swap (`If-Match` on PUT)",
    "test_put_if_match_on_missing_key_is_precondition_failed":
        "`If-Match` PUT on a missing key: nothing created",
    "test_large_stale_put_if_match_fails": "compare-and-swap of a multipart replacement",
    "test_stale_delete_if_match_fails_and_changes_nothing": "conditional delete (`If-Match` on DeleteObject)",
    "test_missing_objects_are_not_found": "missing keys: GET, HEAD and conditional delete say NotFound",
    "test_head_reports_sha256_put_id_and_user_metadata": "HEAD returns size, ETag and user metadata",
    "test_byte_ranges_are_half_open_and_clamped": "byte-range GET",
    "test_list_returns_keys_relative_to_the_root": "list by prefix",
    "test_hostile_keys_never_escape_the_prefix": "hostile keys stay under the prefix",
    "test_key_under_an_existing_object": "a key below an existing object's key",
    "doctor:versioned_delete": "doctor: delete by version id (versioned bucket)",
    "doctor:checksum_rejection": "doctor: wrong `ChecksumSHA256` on PUT rejected",
    "doctor:batch_delete_etag": "doctor: per-object ETag in DeleteObjects",
    "doctor:multipart_if_none_match": "doctor: `If-None-Match` on CompleteMultipartUpload",
    "doctor:multipart_if_match": "doctor: `If-Match` on CompleteMultipartUpload",
    "doctor:verdict": "doctor: verdict (exit code)",
}
#: Doctor probes the suite already measures more thoroughly, left out of the table.
DOCTOR_SKIP = {"create_if_absent", "if_match_put", "if_match_put_missing", "conditional_delete",
               "versioning"}

_results: list[dict[str, str]] = []


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]


def _chain_text(exc: BaseException) -> str:
    parts: list[str] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        parts.append(f"{type(current).__name__} {current}")
        current = current.__cause__ or current.__context__
    return " | ".join(parts)


def classify(exc: BaseException) -> tuple[str, str]:
    """How a failed guarantee failed: refused loudly, silently not implemented, or an error."""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return classify(exc.exceptions[0])
    detail = _first_line(exc)
    if isinstance(exc, AssertionError) or (
            isinstance(exc, pytest.fail.Exception) and "DID NOT RAISE" in str(exc)):
        return NOT_IMPLEMENTED, detail
    text = _chain_text(exc)
    loud = ("NotImplemented", "(501)", " 501", "UnsupportedOperation", "StoreCapabilityError")
    if any(marker in text for marker in loud):
        return REFUSED, detail
    return ERROR, detail


def _record(item: pytest.Item, outcome: str, detail: str) -> None:
    name = getattr(item, "originalname", item.name)
    _results.append({"test": name, "nodeid": item.nodeid, "outcome": outcome, "detail": detail,
                     "guarantee": GUARANTEES.get(name, name)})


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if item.get_closest_marker("endpoint") is None:
        return
    if report.when == "setup" and report.failed:
        _record(item, ERROR, f"setup: {call.excinfo.exconly()[:200]}" if call.excinfo else "setup")
    elif report.when == "call":
        if report.passed:
            _record(item, HONOURED, "")
        elif call.excinfo is not None:
            _record(item, *classify(call.excinfo.value))


def render(rows: list[tuple[str, str, str]]) -> str:
    head = ("guarantee", "outcome", "detail")
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(2)]
    return "\n".join(f"{r[0].ljust(widths[0])}  {r[1].ljust(widths[1])}  {r[2]}"
                     for r in [head, *rows])


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _results:
        return
    endpoint = os.environ.get("S3SPILL_CONFORMANCE_ENDPOINT", "")
    terminalreporter.section(f"conformance of {endpoint}")
    terminalreporter.write_line(render([(r["guarantee"], r["outcome"], r["detail"])
                                        for r in _results]))
    path = os.environ.get("S3SPILL_CONFORMANCE_REPORT")
    if path:
        Path(path).write_text(json.dumps({"endpoint": endpoint, "results": _results}, indent=1))


# -- command line: merge with the doctor, compare with the recorded expectations -------


def doctor_outcomes(doctor: dict[str, Any], exit_code: int) -> dict[str, tuple[str, str]]:
    found: dict[str, tuple[str, str]] = {}
    for probe in doctor.get("probes", []):
        if probe["name"] in DOCTOR_SKIP:
            continue
        detail = probe["detail"]
        if probe["honoured"] is True:
            outcome = HONOURED
        elif probe["honoured"] is False:
            outcome = NOT_APPLICABLE if detail.startswith("not probed") else NOT_IMPLEMENTED
        else:
            outcome = REFUSED if "NotImplemented" in detail else ERROR
        found[f"doctor:{probe['name']}"] = (outcome, detail[:200])
    found["doctor:verdict"] = ("OK (exit 0)" if exit_code == 0 else f"MISSING (exit {exit_code})",
                               "")
    return found


def measured(report_path: Path, doctor_path: Path, doctor_exit: int) -> dict[str, tuple[str, str]]:
    report = json.loads(report_path.read_text())
    results: dict[str, tuple[str, str]] = {}
    for row in report["results"]:
        # A parametrised test that ran more than once keeps its worst outcome.
        if row["test"] not in results or results[row["test"]][0] == HONOURED:
            results[row["test"]] = (row["outcome"], row["detail"])
    try:
        doctor = json.loads(doctor_path.read_text())
    except (OSError, ValueError):
        doctor = {}
    results.update(doctor_outcomes(doctor, doctor_exit))
    return results


def check(args: argparse.Namespace) -> int:
    results = measured(Path(args.report), Path(args.doctor), args.doctor_exit)
    expected_all: dict[str, dict[str, str]] = (
        json.loads(EXPECTED_FILE.read_text()) if EXPECTED_FILE.exists() else {})
    expected = expected_all.get(args.backend, {})
    rows, mismatches = [], []
    for key in [*GUARANTEES, *sorted(set(results) - set(GUARANTEES))]:
        if key not in results:
            continue
        outcome, detail = results[key]
        want = expected.get(key)
        note = "" if want in (None, outcome) else f"  [expected {want}]"
        if want is not None and want != outcome:
            mismatches.append(key)
        rows.append((GUARANTEES.get(key, key), outcome + note, detail))
    print(f"conformance of {args.backend}:")
    print(render(rows))
    missing = sorted(set(expected) - set(results))
    if args.update:
        expected_all[args.backend] = {k: v[0] for k, v in results.items()}
        EXPECTED_FILE.write_text(json.dumps(expected_all, indent=1, sort_keys=True) + "\n")
        print(f"recorded as expected for {args.backend} in {EXPECTED_FILE.name}")
        return 0
    if not expected:
        print(f"no expectations recorded for {args.backend}: run with --update", file=sys.stderr)
        return 1
    if mismatches or missing:
        print(f"{args.backend} differs from what was measured before: "
              f"{', '.join(mismatches + missing)}", file=sys.stderr)
        return 1
    print(f"{args.backend}: every guarantee as measured before ({len(results)} rows)")
    return 0


def table(_: argparse.Namespace) -> int:
    """The README's Markdown table, one column per measured backend."""
    expected: dict[str, dict[str, str]] = json.loads(EXPECTED_FILE.read_text())
    backends = list(expected)
    print("| guarantee | " + " | ".join(backends) + " |")
    print("|---|" + "---|" * len(backends))
    for key, title in GUARANTEES.items():
        print(f"| {title} | " + " | ".join(expected[b].get(key, "-") for b in backends) + " |")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.store.conformance_report")
    sub = parser.add_subparsers(dest="command", required=True)
    chk = sub.add_parser("check", help="compare one run with what was measured before")
    chk.add_argument("backend")
    chk.add_argument("--report", required=True, help="the JSON the pytest plugin wrote")
    chk.add_argument("--doctor", required=True, help="s3spill doctor --json output")
    chk.add_argument("--doctor-exit", type=int, required=True)
    chk.add_argument("--update", action="store_true", help="record this run as expected")
    chk.set_defaults(func=check)
    sub.add_parser("table", help="print the README table").set_defaults(func=table)
    args = parser.parse_args(argv)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
