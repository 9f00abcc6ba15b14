"""The repository's own Python files, for tests that read every one of them.

`tests/` also holds what the test command installs there (npm packages under
`node_modules`, the pinned Python SDK under `tests/mcp_servers/python-sdk-1`): third-party
files, some not even Python 3, that no rule of ours applies to.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INSTALLED = ("node_modules", "python-sdk-1")


def python_files(top: str) -> Iterator[Path]:
    """Every ``*.py`` under ``ROOT / top`` in sorted order, installed third-party trees left out."""
    for path in sorted((ROOT / top).rglob("*.py")):
        if not any(part in INSTALLED for part in path.relative_to(ROOT).parts):
            yield path
