"""The CLI's one voice: every failure is `s3spill: <what happened> (<what to do>)`, from one table."""

from __future__ import annotations

import inspect
import re

import pytest

from s3spill import errors
from s3spill.cli.exitcodes import ExitCode
from s3spill.cli.failures import TABLE, describe, rule_for

ERROR_CLASSES = sorted((c for _, c in inspect.getmembers(errors, inspect.isclass)
                        if issubclass(c, BaseException) and c.__module__ == errors.__name__),
                       key=lambda c: c.__name__)
#: Hints that were attached to failures they did not fit (issue 30).
UNTRUE = ("check the value named above", "nothing was changed that needs undoing",
          "an operating-system error")
ONE_LINE = re.compile(r"^s3spill: \S.*\n$")


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda c: c.__name__)
def test_every_exception_class_has_its_own_row_and_one_line(cls: type[Exception]) -> None:
    """Each class of s3spill.errors has a row of its own (no silent fall-through to a parent's
    hint), an exit code that is not "a bug", and reads as one prefixed line."""
    exc = cls("something\nhappened")
    failure = describe(exc)
    assert cls in TABLE and rule_for(exc) is TABLE[cls]
    assert failure.code != ExitCode.INTERNAL
    line = failure.line() + "\n"
    assert ONE_LINE.match(line) and not line.startswith("s3spill: error:"), line
    assert f"{cls.__name__}: something happened" in line
    assert not any(untrue in line for untrue in UNTRUE), line


def test_the_walk_covers_the_whole_tree() -> None:
    """The walk above sees every class of the tree the errors module draws."""
    drawn = set(re.findall(r"(?:├──|└──) (\w+)", errors.__doc__ or ""))
    assert drawn | {"S3SpillError"} == {c.__name__ for c in ERROR_CLASSES}


def test_a_new_subclass_finds_its_family_along_the_mro() -> None:
    """A class the table does not know reads as its nearest known ancestor."""
    class Newcomer(errors.ArtifactExpired):
        pass

    assert rule_for(Newcomer("x")) is TABLE[errors.ArtifactExpired]
    assert describe(KeyError("k")).code == ExitCode.INTERNAL


def test_the_raisers_hint_beats_the_familys() -> None:
    """A raiser that knows the one case gives its own hint, and only that one is printed."""
    failure = describe(errors.NotFound("gone", hint="look elsewhere"))
    assert failure.line() == "s3spill: NotFound: gone (look elsewhere)"


def test_botocore_errors_are_matched_by_name_along_their_mro() -> None:
    """Missing credentials and an unreachable endpoint read as such without importing botocore here."""
    from botocore.exceptions import EndpointConnectionError, NoCredentialsError, ReadTimeoutError

    assert describe(NoCredentialsError()).hint.startswith("set AWS_PROFILE")
    assert describe(EndpointConnectionError(endpoint_url="http://x")).code == ExitCode.UNAVAILABLE
    assert describe(ReadTimeoutError(endpoint_url="http://x")).code == ExitCode.UNAVAILABLE


def test_a_validation_error_reads_as_an_invalid_value_without_the_table_importing_pydantic() -> None:
    """pydantic's ValidationError is matched by name; importing the table loads no pydantic."""
    import subprocess
    import sys

    from pydantic import BaseModel, ValidationError

    class Limits(BaseModel):
        port: int

    with pytest.raises(ValidationError) as caught:
        Limits.model_validate({"port": "x"})
    failure = describe(caught.value)
    assert failure.what.startswith("invalid value: port: ") and "--help" in failure.hint
    probe = "import sys, s3spill.cli.failures; print('pydantic' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def test_the_fast_paths_exit_codes_are_the_tables() -> None:
    """s3spill.cli returns these before the table (an IntEnum) is imported."""
    import s3spill.cli as cli

    assert (cli._OK, cli._INTERRUPTED, cli._BROKEN_PIPE) == (
        ExitCode.OK, ExitCode.INTERRUPTED, ExitCode.BROKEN_PIPE)
