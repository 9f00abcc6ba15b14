"""Where the fleet policy is, and the smallest limit it sets — on the standard library alone.

Why its own module: the CLI's fast paths (``s3spill hook`` with nothing to do, ``s3spill run``
of a small output) answer before pydantic or the store load, and they may do so only when
the policy cannot change the answer. :func:`policy_floor` tells them: the smallest size or
character limit the operator's file and the ``S3SPILL_*`` variables set, read with the
stdlib ``tomllib`` (no schema check: the full path does that, and a value this module does
not understand gives 0, "take the full path").
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

__all__ = ["LIMIT_KEYS", "NOT_POLICY_VARIABLES", "operator_file", "policy_floor", "store_needs_no_policy"]

#: Keys whose value is a size or character limit below which an output is spilled or cut.
LIMIT_KEYS = frozenset({"threshold", "hard_cap_chars", "max_inline_tokens"})
#: The variables of those keys (tests check them against the schema).
LIMIT_VARIABLES = ("S3SPILL_HARD_CAP_CHARS", "S3SPILL_MAX_INLINE_TOKENS", "S3SPILL_MAX_TOKENS")


def operator_file(config: str | os.PathLike[str] | None, environ: Mapping[str, str]) -> str | None:
    """The operator's policy file: ``config`` (``--config``), ``$S3SPILL_CONFIG``, the user's
    config dir, then the system's (``$XDG_CONFIG_DIRS``, ``/etc``); None when there is none."""
    named = config or environ.get("S3SPILL_CONFIG")
    if named:
        return os.fspath(named)
    home = environ.get("XDG_CONFIG_HOME") or (os.path.join(environ["HOME"], ".config") if "HOME" in environ
                                             else None)
    dirs = [home] if home else []
    dirs += [d for d in (environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":") if d] + ["/etc"]
    return next((p for d in dirs if os.path.isfile(p := os.path.join(d, "s3spill", "config.toml"))), None)


def _limits(doc: Mapping[str, object]) -> Iterator[object]:
    for key, value in doc.items():
        if isinstance(value, Mapping):
            yield from _limits(value)
        elif key in LIMIT_KEYS:
            yield value


def policy_floor(environ: Mapping[str, str] | None = None, config: str | None = None) -> int | None:
    """The smallest limit the policy sets (0: one this cannot read, or a project file may
    apply); None when no file and no limit variable is there."""
    environ = os.environ if environ is None else environ
    found: list[int] = []
    for name in LIMIT_VARIABLES:
        if environ.get(name):
            found.append(int(environ[name]) if environ[name].strip().isdigit() else 0)
    path = operator_file(config, environ)
    if path is not None:
        import tomllib  # only when there is a file to read

        try:
            with open(path, "rb") as fh:
                doc = tomllib.load(fh)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            return 0  # the full path says what is wrong with it
        project = doc.get("project")
        allows = isinstance(project, Mapping) and project.get("allow_file")
        if allows or environ.get("S3SPILL_PROJECT_FILE"):
            return 0
        found += [v if isinstance(v, int) and not isinstance(v, bool) else 0 for v in _limits(doc)]
        found.append(1 << 62)  # a file with no limit in it: no floor of its own, but one exists
    return min(found) if found else None


#: ``S3SPILL_*`` variables that set no policy key but the store's own (``S3SPILL_STORE``,
#: which the store's opening reads the same way): tests check them against the schema.
NOT_POLICY_VARIABLES = frozenset({"S3SPILL_STORE", "S3SPILL_SESSION", "S3SPILL_LOG_LEVEL", "S3SPILL_DEBUG",
                                  "S3SPILL_CONFIG"})


def store_needs_no_policy(config: str | None, environ: Mapping[str, str]) -> bool:
    """Would the fleet policy open the same store as ``open_store`` does from the variables?

    True when no policy file exists (none named, none in the config dirs) and no
    ``S3SPILL_*`` variable but :data:`NOT_POLICY_VARIABLES` is set: the policy then holds
    its defaults, its ``[store] url`` is ``$S3SPILL_STORE`` (or none) and it has no KMS key.
    A reader (``s3spill read``) then opens its store without loading and checking the
    policy's models (pydantic, ~40% of such a process).
    """
    return operator_file(config, environ) is None and not any(
        name.startswith("S3SPILL_") and name not in NOT_POLICY_VARIABLES for name in environ)
