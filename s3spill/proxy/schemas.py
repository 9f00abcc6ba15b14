"""Output schemas: what the proxy advertises so that a spilled result still validates.

The rule (MCP 2025-06-18 and 2025-11-25, "Output Schema"): a server that declares an
``outputSchema`` MUST return ``structuredContent`` conforming to it; clients SHOULD
validate. Both official clients do, and neither forgives: the Python SDK
(``ClientSession.validate_tool_result``) raises when a tool with a schema returns no
``structuredContent`` or one that fails ``jsonschema`` (its draft picked by ``$schema``,
``$ref`` resolved inside the document only); the TypeScript SDK (``Client.callTool``)
throws the same two errors, validating with Ajv (draft-07 by default, ``strict: false``).
Neither validates an ``isError`` result.

So a result whose ``structuredContent`` is too big cannot simply lose it, and for many
schemas (server-memory's ``read_graph``: every entity required, ``additionalProperties:
false``) no small value conforms. The proxy therefore advertises, for every upstream
tool that declares a schema and may be spilled, the schema *widened* to "the upstream's,
or our pointer object" — ``anyOf: [<the upstream's>, POINTER_SCHEMA]`` — keeping
``$schema``, ``$id``, ``$defs`` and ``definitions`` at the root (so the draft and the
definitions resolve as before; a ``$ref`` to anything else is rebased under
``#/anyOf/0``). A result that fits is the upstream's own and matches the first branch; a
spilled one keeps its long-strings-shortened form when that still conforms to the
upstream's schema (checked here with ``jsonschema``, as the Python SDK does), and
otherwise becomes the pointer object, which matches the second branch.
"""

from __future__ import annotations

from typing import Any

#: The one key of the pointer object that stands for spilled structuredContent.
POINTER_KEY = "s3spill"
POINTER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "s3spill: the tool's structuredContent was too large for the context and is "
    "stored as an artifact; read it with the proxy's read tool or resources/read.",
    "required": [POINTER_KEY],
    "properties": {POINTER_KEY: {
        "type": "object",
        "required": ["stored", "bytes", "notice"],
        "properties": {
            "stored": {"type": "boolean", "description": "Whether the full value was saved."},
            "bytes": {"type": "integer", "description": "Size of the full value as JSON."},
            "source_id": {"type": "string", "description": "The artifact, for the read tool."},
            "uri": {"type": "string", "description": "The artifact as an MCP resource."},
            "notice": {"type": "string"},
        },
    }},
}
#: Keywords that stay at the root of a widened schema.
_ROOT = ("$schema", "$id", "$defs", "definitions")
_KEPT_REFS = ("#/$defs/", "#/definitions/")


def widened(schema: Any) -> Any:
    """``schema`` widened to also accept the pointer object (anything but a dict is kept)."""
    if not isinstance(schema, dict):
        return schema
    inner = {key: value for key, value in schema.items() if key not in _ROOT}
    root = {key: _rebased(schema[key]) for key in _ROOT if key in schema}
    return {**root, "type": "object", "anyOf": [_rebased(inner), POINTER_SCHEMA]}


def _rebased(node: Any) -> Any:
    """``node`` with each local ``$ref`` outside the kept definitions pointed under ``#/anyOf/0``."""
    if isinstance(node, list):
        return [_rebased(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str) and value.startswith("#") \
                and not value.startswith(_KEPT_REFS):
            out[key] = "#/anyOf/0" + value[1:]
        else:
            out[key] = _rebased(value)
    return out


def pointer_value(size: int, notice: str, source_id: str | None = None,
                  uri: str | None = None) -> dict[str, Any]:
    """The structuredContent that stands for a spilled one (it matches POINTER_SCHEMA)."""
    inner: dict[str, Any] = {"stored": source_id is not None, "bytes": size, "notice": notice}
    if source_id is not None:
        inner["source_id"] = source_id
    if uri is not None:
        inner["uri"] = uri
    return {POINTER_KEY: inner}


def conforms(schema: dict[str, Any], value: Any) -> bool:
    """Does ``value`` validate against ``schema`` as the Python SDK checks it? (False when
    the check cannot be made: no ``jsonschema``, or a schema it cannot compile.)"""
    try:
        from jsonschema import SchemaError
        from jsonschema.validators import validator_for
        from referencing import Registry
    except ImportError:
        return False
    try:
        cls = validator_for(schema)
        cls.check_schema(schema)
        return not any(True for _ in cls(schema, registry=Registry()).iter_errors(value))
    except SchemaError:
        return False
    except Exception:  # noqa: BLE001 - a schema jsonschema cannot use (a bad $ref): the safe form
        return False
