"""How a text we render spells the arguments it tells its reader to pass next.

The same page is read by a model (through a tool call) and by a person or a shell
script (through the CLI); a footer that says ``offset=3`` to one and ``--offset 3`` to the
other is right for both, and every kind of page spells it through this one function.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not from typing (~2 ms): the CLI's fast read imports this module
if TYPE_CHECKING:
    from typing import Literal, TypeAlias

    #: As a tool call's keyword arguments (``offset=3``) or as the CLI's flags (``--offset 3``).
    ArgStyle: TypeAlias = Literal["call", "cli"]
else:
    ArgStyle = "Literal['call', 'cli']"  # annotations only: a name to import, not a type

__all__ = ["ArgStyle", "spell_args"]


def spell_args(style: ArgStyle, **args: object) -> str:
    """``offset=3, char_offset=0`` (call) or ``--offset 3 --char-offset 0`` (cli)."""
    if style == "cli":
        return " ".join(f"--{name.replace('_', '-')} {value}" for name, value in args.items())
    return ", ".join(f"{name}={value}" for name, value in args.items())
