"""One MCP ``tools/call`` result through the Spiller, in MCP's own shape.

Why raw JSON and not the SDK's models: the proxy must hand on what the upstream said, and a
result that fits is handed on as the very bytes it arrived in. Only a result over budget is
rebuilt, and then only the parts that had to change:

* one text block (the common case) goes through :meth:`Spiller.externalize` — the tool's
  threshold, the head/tail preview, the salient lines;
* several blocks, or any image, audio or embedded resource, go through
  :func:`~s3spill.spill.block_spill.externalize_blocks`: blocks are priced (binaries with
  :meth:`ProxySettings.price_binary`), the first and last ones kept, each omitted binary
  stored as its own artifact and named in the notice; a binary kept whole is handed on as
  the upstream's own block, untouched; but the text blocks of a spooled line (no binary
  among them, some too long to hold) are streamed, one after the other, as one text;
* ``structuredContent`` is kept when it fits. Otherwise its JSON is stored as an artifact,
  and it becomes either its long strings replaced by markers naming that artifact — when
  that fits and still conforms to the tool's ``outputSchema`` (or the tool has none) — or
  the pointer object of :mod:`~s3spill.proxy.schemas`, which the widened schema the proxy
  advertises accepts; a text block says which. It is never just removed: a client that
  validates would reject a tool with a schema that returns none.

``isError`` and every other field of the result are kept: an upstream error stays an
error, with its text spilled like any other when it is huge.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator
from typing import Any

import orjson

from s3spill.agent.resources import uri_of
from s3spill.context.block_plan import Block, ImageBlock, TextBlock
from s3spill.context.policy import SpillPolicy
from s3spill.context.secrets import redact_text
from s3spill.context.secrets.detector import may_hold_secret
from s3spill.context.utf8 import to_bytes
from s3spill.log import get_logger
from s3spill.models import ArtifactReference
from s3spill.proxy.schemas import conforms, pointer_value
from s3spill.proxy.settings import ProxySettings
from s3spill.proxy.wire import encode
from s3spill.spill.block_spill import externalize_blocks
from s3spill.spill.json_spool import LongString, Spool
from s3spill.spill.source import iter_output
from s3spill.spill.spiller import Spiller

log = get_logger("s3spill.proxy")

#: Strings in structuredContent are shortened to markers from this length down.
_SHRINK_STEPS = (1_000, 200, 40)
#: Characters handed to the Spiller at a time.
_SLICE_CHARS = 1024 * 1024
#: Characters beyond a tool's preview left for the notice (pointer, omitted images).
_NOTICE_ROOM = 4_000
#: Smallest hard cap a policy may have (SpillPolicy's own floor).
_MIN_CAP = 2_000


class Unlisted:
    """Stands for "the tool's schema is not known": it was not listed (yet)."""


UNLISTED = Unlisted()


class ResultSpiller:
    """Spill the results of one session's tools; thread-safe (the Spiller is)."""

    def __init__(self, spiller: Spiller, settings: ProxySettings) -> None:
        self.spiller = spiller
        self.settings = settings
        self.policy = spiller.policy
        self._capped: dict[str, SpillPolicy] = {}

    def spill(self, result: dict[str, Any], tool: str, call_id: str | None,
              schema: dict[str, Any] | Unlisted | None = UNLISTED,
              links: bool = False, spool: Spool | None = None) -> dict[str, Any] | None:
        """The result as the client should see it, or None when it is handed on unchanged.

        ``schema`` is the tool's own ``outputSchema`` as the upstream listed it (None: it
        declared none; :data:`UNLISTED`: not listed yet, so nothing is assumed of it). With
        ``links``, each artifact stored is also named by a ``resource_link`` block
        (``s3spill://…``, :mod:`s3spill.agent.resources`) after the text that points at it.
        ``spool``: ``result`` is a spooled line's (placeholders for its long strings); one long
        text, alone in ``content``, is streamed into the spill, anything else read back first.
        """
        if tool in self.settings.never_spill or tool in self.settings.own_tools:
            return None
        if spool is not None:
            result = _streamable(result, spool)
        content = result.get("content")
        refs: list[ArtifactReference] = []
        changed = False
        out = dict(result)
        if isinstance(content, list) and content:
            new_content = self._content(content, tool, call_id, refs)
            if new_content is not None:
                out["content"] = new_content
                changed = True
        if "structuredContent" in result:
            notice = self._structured(out, tool, call_id, schema, refs, spool)
            if notice is not None:
                out["content"] = [*(out.get("content") or []), {"type": "text", "text": notice}]
                changed = True
        if changed and links and refs:
            out["content"] = [*(out.get("content") or []), *(_link(ref) for ref in refs)]
        return out if changed else None

    # -- content ----------------------------------------------------------------------

    def _content(self, content: list[Any], tool: str, call_id: str | None,
                 refs: list[ArtifactReference]) -> list[Any] | None:
        first = content[0]
        if len(content) == 1 and _is_text(first):
            text = first["text"]
            if isinstance(text, LongString):
                if text.min_chars > min(self.policy.for_tool(tool).threshold, self.policy.hard_cap_chars):
                    result = self.spiller.externalize(text.pieces(), tool, call_id)
                    _log(tool, result.total_bytes, result.spilled, result.degraded_reason, streamed=True)
                    refs.extend(ref for ref in (result.artifact,) if ref is not None)
                    return [{**first, "text": result.context_text}]
                text = text.text()
                first = {**first, "text": text}
            if not self._over(text, tool):  # inline: the upstream's bytes, unless a secret is in them
                masked = self._masked(text)
                return None if masked is text else [{**first, "text": masked}]
            result = self.spiller.externalize(_slices(text), tool, call_id)
            _log(tool, result.total_bytes, result.spilled, result.degraded_reason)
            refs.extend(ref for ref in (result.artifact,) if ref is not None)
            return [{**first, "text": result.context_text}]
        if all(_is_text(item) for item in content) and any(isinstance(item["text"], LongString)
                                                            for item in content):
            return self._texts(content, tool, call_id, refs)
        blocks, originals = _to_blocks(content)
        text_len = sum(len(b.text) for b in blocks if isinstance(b, TextBlock))
        binaries = any(isinstance(b, ImageBlock) for b in blocks)
        if not binaries and text_len <= _MIN_CAP:
            return self._masked_blocks(blocks, originals)
        policy = self._policy_for(blocks, tool)
        out = externalize_blocks(self.spiller.sink, policy, self.spiller.externalize, blocks, tool, call_id)
        if out.artifact is None and not out.images and out.degraded_reason is None:
            return self._masked_blocks(blocks, originals)  # everything fits: the upstream's bytes go on
        _log(tool, sum(len(to_bytes(b.text)) for b in blocks if isinstance(b, TextBlock)), out.spilled,
             out.degraded_reason, images=len(out.images))
        refs.extend(ref for ref in (out.artifact, *out.images.values()) if ref is not None)
        return [_to_item(block, originals) for block in out.blocks]

    def _texts(self, content: list[Any], tool: str, call_id: str | None,
               refs: list[ArtifactReference]) -> list[Any] | None:
        """Text blocks of a spooled line, some long: over the threshold (by their fewest
        characters) they are streamed into one artifact, one after the other, as the block
        planner stores texts; else read back and handled as any blocks are."""
        texts = [item["text"] for item in content]
        chars = sum(t.min_chars if isinstance(t, LongString) else len(t) for t in texts)
        if chars <= min(self.policy.for_tool(tool).threshold, self.policy.hard_cap_chars):
            return self._content([{**i, "text": i["text"].text() if isinstance(i["text"], LongString)
                                   else i["text"]} for i in content], tool, call_id, refs)
        pieces = (piece for t in texts for piece in (t.pieces() if isinstance(t, LongString) else _slices(t)))
        result = self.spiller.externalize(pieces, tool, call_id)
        _log(tool, result.total_bytes, result.spilled, result.degraded_reason, streamed=True,
             blocks=len(content))
        refs.extend(ref for ref in (result.artifact,) if ref is not None)
        return [{"type": "text", "text": result.context_text}]

    def _masked_blocks(self, blocks: list[Block], originals: dict[int, dict[str, Any]]) -> list[Any] | None:
        """None (the upstream's own items go on) unless a text block holds a secret: then
        the items with their text masked."""
        shown = [TextBlock(self._masked(b.text)) if isinstance(b, TextBlock) else b for b in blocks]
        if all(isinstance(b, ImageBlock) or a.text == b.text  # type: ignore[union-attr]
               for a, b in zip(shown, blocks, strict=True)):
            return None
        return [_to_item(block, originals) for block in shown]

    def _masked(self, text: str) -> str:
        """A text kept inline, as the model may see it (the same object when unchanged)."""
        if self.policy.secrets == "off" or not may_hold_secret(text.encode("utf-8", "surrogateescape")):
            return text
        masked = redact_text(text)[0]
        return text if masked == text else masked

    def _over(self, text: str, tool: str) -> bool:
        """The policy's verdict, without encoding a huge text just to learn it is huge."""
        if len(text) > min(self.policy.for_tool(tool).threshold, self.policy.hard_cap_chars):
            return True  # a character is at least one byte: over a byte threshold too
        return self.policy.should_externalize(text, tool)

    def _policy_for(self, blocks: list[Block], tool: str) -> SpillPolicy:
        """The policy, with the hard cap lowered to the tool's preview (plus room for the notice)
        when the text is over the tool's threshold: the block planner knows budgets, not
        thresholds, and would otherwise keep up to the hard cap."""
        joined = "".join(b.text for b in blocks if isinstance(b, TextBlock))
        rule = self.policy.for_tool(tool)
        if not rule.exceeds(joined):
            return self.policy
        cap = max(_MIN_CAP, min(self.policy.hard_cap_chars, sum(rule.preview(None)) + _NOTICE_ROOM))
        found = self._capped.get(tool)
        if found is None or found.hard_cap_chars != cap:
            found = self._capped[tool] = self.policy.model_copy(update={"hard_cap_chars": cap})
        return found

    # -- structuredContent ------------------------------------------------------------

    def _structured(self, out: dict[str, Any], tool: str, call_id: str | None,
                    schema: dict[str, Any] | Unlisted | None, refs: list[ArtifactReference],
                    spool: Spool | None = None) -> str | None:
        """Keep, shrink or replace ``out["structuredContent"]`` in place; the notice if changed.

        With ``spool``, its long strings are still placeholders here: the JSON stored is the
        skeleton's with the upstream's own string bytes put back (:meth:`Spool.expand`), and
        each is over every budget (4 MiB and more), so over the budget and never kept."""
        value = out["structuredContent"]
        if value is None:
            return None
        longs = spool.longs() if spool is not None else {}
        raw = encode(value)
        if longs and any(_encoded_in(name, raw) for name in longs):
            assert spool is not None
            sizes: list[int] = []
            ref, reason = self.spiller.sink.store_blob(_counted(spool.expand(raw), sizes), tool, call_id,
                                                       label="structuredContent (JSON)")
            return self._replaced(out, tool, schema, refs, sum(sizes), (ref, reason), longs)
        text = raw.decode("utf-8", "replace")
        if not self.policy.for_tool(tool).exceeds(raw) and not self._over(text, tool):
            return None
        stored = self.spiller.sink.store_blob(iter_output(raw), tool, call_id,
                                              label="structuredContent (JSON)")
        return self._replaced(out, tool, schema, refs, len(raw), stored, {})

    def _replaced(self, out: dict[str, Any], tool: str, schema: dict[str, Any] | Unlisted | None,
                  refs: list[ArtifactReference], size: int,
                  stored: tuple[ArtifactReference | None, str | None], longs: dict[str, LongString]) -> str:
        """``out["structuredContent"]`` (``size`` bytes of JSON, ``stored``) shrunk or a pointer."""
        value = out["structuredContent"]
        ref, reason = stored
        if ref is not None:
            refs.append(ref)
        where = (f'stored as source_id="{ref.source_id}"; read it with {self.policy.read_tool}'
                 if ref is not None else f"could NOT be saved ({reason})")
        marker_where = f"in {ref.source_id}" if ref is not None else "not saved"
        for limit in _SHRINK_STEPS:
            shrunk = _shrink(value, limit, marker_where, longs)
            if self.policy.should_externalize(encode(shrunk).decode("utf-8", "replace"), tool):
                continue
            if schema is None or (isinstance(schema, dict) and conforms(schema, shrunk)):
                out["structuredContent"] = shrunk
                _log(tool, size, ref is not None, reason, structured="shrunk")
                return (f"[structuredContent ({size} bytes of JSON) was over the budget: {where}. "
                        f"Strings longer than {limit} characters in it are replaced by markers.]")
            break  # shorter markers would not make it conform
        notice = (f"[structuredContent ({size} bytes of JSON) was over the budget: {where}. "
                  f"This result's structuredContent is a pointer to it.]")
        out["structuredContent"] = pointer_value(size, notice, *(
            (ref.source_id, uri_of(ref.source_id)) if ref is not None else ()))
        _log(tool, size, ref is not None, reason, structured="pointer")
        return notice


def _link(ref: ArtifactReference) -> dict[str, Any]:
    """A ``resource_link`` content block naming a stored artifact (MCP 2025-06-18 and later)."""
    return {"type": "resource_link", "uri": uri_of(ref.source_id), "name": ref.source_id,
            "title": f"{ref.label or ref.tool} ({ref.size_bytes} bytes, {ref.line_count} lines)",
            "description": "The full output stored by s3spill; resources/read pages it "
                           "(?offset=LINE&char_offset=N&limit=LINES).",
            "size": ref.size_bytes}


def _slices(text: str) -> Iterator[str]:
    """``text`` in pieces, so the Spiller never holds a second, encoded copy of all of it."""
    for start in range(0, len(text), _SLICE_CHARS):
        yield text[start : start + _SLICE_CHARS]


def _is_text(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "text" \
        and isinstance(item.get("text"), str | LongString)


def _streamable(result: dict[str, Any], spool: Spool) -> dict[str, Any]:
    """``result`` with its long strings read back, except the texts of its content when it
    is text blocks only (each long one a :class:`LongString`, streamed into the spill) and
    those in ``structuredContent`` (placeholders still: :meth:`ResultSpiller._structured`
    stores them from the file)."""
    content = result.get("content")
    longs = spool.longs()
    rest = {k: v for k, v in result.items() if k != "structuredContent"}
    texts = {item["text"] for item in content if _is_text(item)} & longs.keys() \
        if isinstance(content, list) and content and all(_is_text(item) for item in content) else set()
    out: dict[str, Any] = spool.materialized(rest, keep=texts)
    if texts:
        out["content"] = [{**item, "text": longs[item["text"]]} if item["text"] in texts else item
                          for item in out["content"]]
    if "structuredContent" in result:  # its long strings stay in the file (ResultSpiller._structured)
        out["structuredContent"] = result["structuredContent"]
    return out


def _to_blocks(content: list[Any]) -> tuple[list[Block], dict[int, dict[str, Any]]]:
    """Blocks for the planner, and each binary block's original MCP item (by block identity).

    Nothing is dropped: an item of a kind the planner does not know becomes its JSON text.
    """
    blocks: list[Block] = []
    originals: dict[int, dict[str, Any]] = {}
    for item in content:
        block = _to_block(item)
        if isinstance(block, ImageBlock):
            originals[id(block)] = item
        blocks.append(block)
    return blocks, originals


def _to_block(item: Any) -> Block:
    if _is_text(item):
        return TextBlock(item["text"])
    if isinstance(item, dict):
        kind = item.get("type")
        if kind in ("image", "audio") and isinstance(item.get("data"), str):
            data = _b64(item["data"])
            if data is not None:
                return ImageBlock(data, str(item.get("mimeType") or f"{kind}/unknown"))
        resource = item.get("resource")
        if kind == "resource" and isinstance(resource, dict):
            uri = resource.get("uri", "")
            if isinstance(resource.get("text"), str):
                return TextBlock(f"[resource {uri}]\n{resource['text']}")
            if isinstance(resource.get("blob"), str):
                data = _b64(resource["blob"])
                if data is not None:
                    return ImageBlock(data, str(resource.get("mimeType") or "application/octet-stream"))
    return TextBlock(orjson.dumps(item).decode())


def _to_item(block: Block, originals: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """A kept binary is the upstream's own item; text is new (cut, or merged with the notice)."""
    if isinstance(block, ImageBlock):
        return originals[id(block)]
    return {"type": "text", "text": block.text}


def _b64(data: str) -> bytes | None:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _shrink(value: Any, limit: int, where: str, longs: dict[str, LongString]) -> Any:
    if isinstance(value, str):
        long = longs.get(value)
        if long is not None:  # a spooled string: its JSON bytes are known, its characters not counted
            return f"[s3spill: {long.end - long.start} bytes of JSON string omitted; the full " \
                   f"structuredContent is {where}]"
        if len(value) <= limit:
            return value
        return f"[s3spill: {len(value)} characters omitted; the full structuredContent is {where}]"
    if isinstance(value, dict):
        return {key: _shrink(item, limit, where, longs) for key, item in value.items()}
    if isinstance(value, list):
        return [_shrink(item, limit, where, longs) for item in value]
    return value


def _encoded_in(placeholder: str, raw: bytes) -> bool:
    """Is the placeholder in ``raw`` (JSON by :func:`~s3spill.proxy.wire.encode`)?"""
    return placeholder[1:].encode() in raw


def _counted(pieces: Iterator[bytes], sizes: list[int]) -> Iterator[bytes]:
    for piece in pieces:
        sizes.append(len(piece))
        yield piece


def _log(tool: str, size: int, spilled: bool, reason: str | None, **extra: object) -> None:
    log.info("proxy.spilled", tool=tool, bytes=size, spilled=spilled, degraded=reason is not None, **extra)

