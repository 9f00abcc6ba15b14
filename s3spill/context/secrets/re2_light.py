"""RE2's C++ binding without the package's ``__init__``: what a masking question needs to search bytes.

Why: a page read is a process of its own (issue 35), and when its text holds an anchor it
asks :func:`~.triggers.may_hold_secret`, which compiles one or more unions of trigger
patterns and searches bytes with them. ``import re2`` costs that process the binding's
load (the C++ extension) and then the package's ``__init__`` (~1.5-2 ms here): the
``re``-like wrappers for str patterns, match objects and caches, none of which a yes/no
search of LATIN-1 bytes needs.

So :func:`searcher` loads ``re2._re2`` as the package's ``from . import _re2`` would, under
the same name in ``sys.modules`` (a later ``import re2`` reuses it: one binding, one
``re2.error``), and compiles with the options ``re2.compile`` passes for the same settings
(every other option at its default, as ``re2.Options()`` has them). The package already
imported, another interpreter, or a binding the path finder cannot see: the package's own
``compile``, as before. Either way the search answers the same (tests/context/secrets/test_re2_light.py).
"""

from __future__ import annotations

import sys

from s3spill.extension_alone import load_alone

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType

__all__ = ["binding", "searcher"]

_NAME = "re2._re2"


def searcher(pattern: bytes, *, max_mem: int) -> Callable[[bytes], object]:
    """``search(data)``: the span of the first match of ``pattern`` in ``data``, or None.

    LATIN-1 (each byte one character, so ``[\\x80-\\xff]`` is any non-ASCII byte), no capture
    groups, ``max_mem`` bytes for the automata; ``re2.error`` for a pattern RE2 refuses.
    """
    binding = _binding()
    if binding is None:
        import re2

        opts = re2.Options()
        opts.encoding = re2.Options.Encoding.LATIN1
        opts.never_capture = True
        opts.max_mem = max_mem
        search = re2.compile(pattern, opts).search

        def spans(data: bytes) -> object:
            found = search(data)
            return None if found is None else found.span()

        return spans
    options = binding.RE2.Options()
    options.encoding = binding.RE2.Options.Encoding.LATIN1
    options.never_capture = True
    options.max_mem = max_mem
    regexp = binding.RE2(pattern, options)
    if not regexp.ok():
        raise binding.Error(regexp.error())
    match, unanchored, none = regexp.Match, binding.RE2.Anchor.UNANCHORED, (-1, -1)

    def first(data: bytes) -> object:
        span = match(unanchored, data, 0, len(data))[0]
        return None if span == none else span

    return first


def binding() -> ModuleType:
    """RE2's C++ binding (``re2._re2``): loaded alone, or the package's when it is loaded."""
    found = _binding()
    if found is None:
        import re2

        found = re2._re2
    return found


def _binding() -> ModuleType | None:
    """``re2._re2`` (loaded alone when nothing loaded it yet), or None: use the package."""
    if "re2" in sys.modules or sys.implementation.name != "cpython":
        return None
    found = sys.modules.get(_NAME)
    if found is not None:
        return found
    return load_alone("re2", _NAME)
