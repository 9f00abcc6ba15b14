"""A read and a grep print the same bytes as the pydantic read path printed (issue 35)."""

from __future__ import annotations

import json

import pytest

from s3spill.store.local import LocalStore
from tests.cli.conftest import CliCall
from tests.cli.read_outputs import AWS_KEY, EXPECTED, outputs, write_artifacts


def test_reads_print_what_they_printed_before(local: LocalStore, cli: CliCall) -> None:
    """Text, log, JSON, CSV and binary artifacts, masked and not, plain and --json, and refusals:
    every output equals the one recorded before the read path left pydantic."""
    expected = json.loads(EXPECTED.read_text())
    got = outputs(cli, write_artifacts(local))
    assert got.keys() == expected.keys()
    for what, (code, out, err) in expected.items():
        assert got[what] == (code, out, err), what
    masked = [out for what, (_, out, _) in got.items() if "--show-secrets" not in what]
    assert not any(AWS_KEY in out for out in masked)
    assert any(AWS_KEY in out for what, (_, out, _) in got.items() if "--show-secrets" in what)


@pytest.mark.parametrize("what", ["log read --offset 1190 --limit 30",
                                  "csv read --record-offset 45 --limit 10"])
def test_the_pinned_masked_pages_do_show_a_mask(what: str) -> None:
    """The recording itself masked the planted key (so the comparison above pins masking too)."""
    out = json.loads(EXPECTED.read_text())[what][1]
    assert "[redacted:" in out and AWS_KEY not in out
