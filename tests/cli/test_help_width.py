"""The parser's help width is what argparse's own formatter would take from shutil."""

from __future__ import annotations

import shutil

import pytest

from s3spill.cli.parser import build_parser, help_width


@pytest.mark.parametrize(("columns", "lines"), [(None, None), ("120", None), ("120", "40"), ("0", "40"),
                                                ("junk", "x"), (None, "50"), ("30", "0")])
def test_help_width_is_shutils(columns: str | None, lines: str | None,
                               monkeypatch: pytest.MonkeyPatch) -> None:
    """COLUMNS and LINES set, unset, zero or junk: the same width as ``shutil.get_terminal_size``."""
    for name, value in (("COLUMNS", columns), ("LINES", lines)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert help_width() == shutil.get_terminal_size().columns - 2


def test_help_is_wrapped_at_that_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """A sub-command's help wraps exactly as argparse's default formatter wraps it."""
    import argparse

    monkeypatch.setenv("COLUMNS", "70")
    parser = build_parser(environ={}, modules=("s3spill.cli.artifact_cmds",))
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    read = sub.choices["read"]
    stock = argparse.HelpFormatter(prog=read.prog)
    assert read._get_formatter()._width == stock._width
    assert max(map(len, read.format_help().splitlines())) <= 70
