"""``grep`` over an artifact: a regex streamed over verified chunks, with bounded memory.

Three parts, each in the module its name says:

- :mod:`.pattern` — what a model may ask for: the pattern's limits and its RE2 compile
  (linear time whatever the pattern; no backreferences or lookarounds), and whether a
  pattern may be searched over many lines at once;
- :mod:`.engine` — the search: chunks streamed line by line (or block by block), the
  request's limits (context, matches, time), and :mod:`.long_line`'s windows through a
  line too long to hold; :mod:`.shown` maps between raw bytes and the display form that
  is searched;
- :mod:`.result` — what comes back: :class:`~.result.GrepResult` with its matches and line
  excerpts, and its rendering as text for a tool call or the CLI.

A *match* is a line, as with ``grep``: a line that contains at least one match of the
pattern counts once, carries its 1-based line number, the byte offset of the line and of
its first match, and the match's ``char_offset`` in the line (hand it to ``read_page`` to
read around it). Only the first ``max_matches`` lines are kept; every later matching line
is still counted, so a capped result states exactly how many were omitted.

A line is searched as it is shown (:mod:`s3spill.textview`): a valid UTF-8 line as its raw
bytes (UTF-8 mode), a line holding bytes that are not UTF-8 in its escaped display form,
where such a byte is the four characters ``\\xHH`` and a backslash is two; so grep finds
what ``read`` shows, and a count equals a per-line search over that display form. Offsets
still point at the raw line (the byte and the character where the matched display text
starts).
"""
