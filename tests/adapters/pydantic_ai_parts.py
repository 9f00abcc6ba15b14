"""The Pydantic AI pieces of tests/adapters/test_pydantic_ai.py. Apart from the tests so that
collecting them does not import Pydantic AI (~1.5 s of CPU in each of the suite's workers, most of
which never run them)."""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ToolReturnPart

from tests.adapters import build_scenario as scenario


def build() -> str:
    """Run the build and return its log."""
    return scenario.BUILD_LOG


def tool_returns(messages: list[ModelMessage]) -> list[ToolReturnPart]:
    """The tool returns in ``messages``, in order."""
    return [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
