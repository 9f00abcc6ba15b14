"""Typed outputs: what kind an output is, its preview cut between elements, its per-kind pages.

``detect`` names the kind from the first bytes (text, binary, JSON, NDJSON, CSV, TSV);
``structured``, ``binary`` and ``cuts`` build the preview the model sees for each kind
(pure, like :mod:`s3spill.context`); ``bytepage`` (hexdump), ``jsonpath`` (JSON Pointer)
and ``recordpage`` (CSV/TSV records, with ``record_ends`` counted at write time) page a
stored output by its kind, given its chunk table (``chunked``) and a fetch of verified
chunks, so this layer needs no store.
"""
