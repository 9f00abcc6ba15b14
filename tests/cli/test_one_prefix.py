"""Every line the CLI writes to stderr is built by `say` (or a Failure's line): one prefix."""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parents[2] / "s3spill" / "cli"


def _to_stderr(call: ast.Call) -> bool:
    return any(k.arg == "file" and ast.unparse(k.value) == "sys.stderr" for k in call.keywords)


def _said(node: ast.expr) -> bool:
    """A say(...) call, a failure's .line(), or either with "\\n" added."""
    if isinstance(node, ast.BinOp):
        return _said(node.left)
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and node.func.id == "say")
        or (isinstance(node.func, ast.Attribute) and node.func.attr == "line"))


def test_every_stderr_message_of_the_cli_goes_through_say() -> None:
    """No print to stderr and no stderr.write in s3spill/cli bypasses the one line format."""
    stray = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            if name == "print" and _to_stderr(node) and not (node.args and _said(node.args[0])):
                stray.append(f"{path.name}:{node.lineno}")
            if name == "sys.stderr.write" and not (node.args and _said(node.args[0])):
                stray.append(f"{path.name}:{node.lineno}")
    assert stray == []
