"""The fleet policy as every sub-command sees it: loaded once per call, flags on top.

Small functions the sub-commands call (:func:`policy_from_args`; every command's store
comes through it, see :func:`s3spill.cli.argtypes.store_from_args`), so that ``run``,
``spill``, ``mcp``, ``mcp-proxy``, the hooks and ``gc`` honour one policy the same way
(:mod:`s3spill.fleet.policy_file`).

A flag that also sets a policy key is given here with its key. Its value counts as the
flag's only when it was typed: argparse also fills a flag from its ``S3SPILL_<FLAG>``
variable, and a value that came from the variable is reported as the variable's.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the policy (pydantic models) loads when a command asks for it, not at parse
    from s3spill.fleet.policy_file import LoadedPolicy, Origin

#: Flags that set a policy key: (section, key) -> (argparse dest, flag).
FLAG_KEYS: dict[tuple[str, str], tuple[str, str]] = {
    ("store", "url"): ("store", "--store"),
    ("spill", "pointer_style"): ("pointer_style", "--pointer-style"),
    ("spill", "max_stored_bytes"): ("max_stored_bytes", "--max-stored-bytes"),
    ("live", "segment_interval"): ("segment_interval", "--segment-interval"),
    ("live", "segment_bytes"): ("segment_bytes", "--segment-bytes"),
    ("live", "heartbeat_interval"): ("heartbeat_interval", "--heartbeat-interval"),
    ("gc", "orphan_ttl"): ("orphan_ttl", "--orphan-ttl"),
    ("gc", "session_ttl"): ("session_ttl", "--session-ttl"),
    ("gc", "max_deletions"): ("max_deletions", "--max-deletions"),
    ("proxy", "tool_prefix"): ("tool_prefix", "--tool-prefix"),
    ("proxy", "max_inline_tokens"): ("max_tokens", "--max-tokens"),
}
_CACHE = "_fleet_policy"


def size(value: str) -> int:
    """An argparse type: bytes as ``65536`` or ``256MiB`` (the policy file's sizes)."""
    from pydantic import ByteSize, TypeAdapter, ValidationError

    try:
        return int(TypeAdapter(ByteSize).validate_python(value))
    except ValidationError:
        raise argparse.ArgumentTypeError(f"not a size: {value!r} (e.g. 1048576 or 256MiB)") from None


def add_cap_flag(p: argparse.ArgumentParser) -> None:
    """``--max-stored-bytes``: this call's cap on the stored copy (the policy's spill.max_stored_bytes)."""
    p.add_argument("--max-stored-bytes", type=size, metavar="BYTES",
                   help="largest stored copy of the output: past it the head, a marker line and the "
                   "newest tail are kept, and the pointer says so (default: the policy's "
                   "spill.max_stored_bytes, 4 GiB)")


def _flag_origin(flag: str, value: Any) -> Origin:
    from s3spill.fleet.policy_file import Origin

    variable = "S3SPILL_" + flag[2:].upper().replace("-", "_")
    if os.environ.get(variable) is not None and os.environ[variable] == str(value):
        return Origin("env", variable)
    return Origin("flag", flag)


def policy_from_args(args: argparse.Namespace) -> LoadedPolicy:
    """The policy of this call (``--config`` / ``$S3SPILL_CONFIG`` / the config dirs, the
    variables, this command's flags); read once and kept on ``args``."""
    from s3spill.fleet.policy_file import LoadedPolicy, load_policy

    cached = getattr(args, _CACHE, None)
    if isinstance(cached, LoadedPolicy):
        return cached
    flags: dict[tuple[str, ...], tuple[Any, Origin]] = {}
    for path, (dest, flag) in FLAG_KEYS.items():
        value = getattr(args, dest, None)
        if value is not None:
            flags[path] = (value, _flag_origin(flag, value))
    loaded = load_policy(getattr(args, "config", None), flags=flags)
    setattr(args, _CACHE, loaded)
    return loaded

