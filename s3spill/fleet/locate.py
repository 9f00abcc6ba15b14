"""Where the fleet policy is, and the smallest limit it sets — on the standard library alone.

Why its own module: the CLI's fast paths (``s3spill hook`` with nothing to do, ``s3spill run``
of a small output) answer before pydantic or the store load, and they may do so only when
the policy cannot change the answer. :func:`policy_floor` tells them: the smallest size or
character limit the operator's file and the ``S3SPILL_*`` variables set, read with the
stdlib ``tomllib`` (no schema check: the full path does that, and a value this module does
not understand gives 0, "take the full path"). Only what can lower a limit counts: a file
that sets nothing, or nothing but other keys, the proxy's own limits (``[proxy]``,
``[harness.mcp-proxy]``) or sizes above the floor, leaves the fast paths as no file does;
``[project] allow_file`` counts only when a project file is there (its limits then do).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # not from typing, nor collections.abc at run time: a page read imports this
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

__all__ = ["LIMIT_KEYS", "NOT_POLICY_VARIABLES", "PROJECT_FILE", "operator_file", "policy_floor",
           "project_file", "store_needs_no_policy"]

#: Keys whose value is a size or character limit below which an output is spilled or cut.
LIMIT_KEYS = frozenset({"threshold", "hard_cap_chars", "max_inline_tokens"})
#: The variables of those keys (tests check them against the schema).
LIMIT_VARIABLES = ("S3SPILL_HARD_CAP_CHARS", "S3SPILL_MAX_INLINE_TOKENS", "S3SPILL_MAX_TOKENS")
#: Tables only ``mcp-proxy`` reads: their limits lower nothing for a hook or ``run``.
PROXY_ONLY: frozenset[tuple[str, ...]] = frozenset({("proxy",), ("harness", "mcp-proxy")})
#: The repository's own policy file (read only when the operator's allows it).
PROJECT_FILE = ".s3spill.toml"
#: Size units as pydantic's ByteSize reads them (case-insensitive); another unit gives 0.
_UNITS = {"": 1, "b": 1, "k": 10**3, "kb": 10**3, "kib": 2**10, "m": 10**6, "mb": 10**6, "mib": 2**20,
          "g": 10**9, "gb": 10**9, "gib": 2**30, "t": 10**12, "tb": 10**12, "tib": 2**40}


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


def project_file(cwd: str) -> str | None:
    """``.s3spill.toml`` in ``cwd`` or a parent, up to the repository's root (``.git``)."""
    d = os.path.abspath(cwd)
    while True:
        if os.path.isfile(path := os.path.join(d, PROJECT_FILE)):
            return path
        if os.path.exists(os.path.join(d, ".git")) or os.path.dirname(d) == d:
            return None
        d = os.path.dirname(d)


def _size(value: object) -> int:
    """A limit's value in bytes or characters as the schema would read it; 0 when unsure."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        return 0
    text = value.strip().lower()
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz").strip()
    unit = text[len(number):].strip() if number else "?"
    try:
        return int(float(number) * _UNITS[unit]) if number.replace(".", "", 1).isdigit() else 0
    except KeyError:
        return 0


def _limits(doc: Mapping[str, object], where: tuple[str, ...] = ()) -> Iterator[int]:
    for key, value in doc.items():
        if isinstance(value, dict):  # tomllib's tables
            if (*where, key) not in PROXY_ONLY:
                yield from _limits(value, (*where, key))
        elif key in LIMIT_KEYS:
            yield _size(value)


def _read(path: str) -> Mapping[str, object] | None:
    import tomllib  # only when there is a file to read

    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # the full path says what is wrong with it


def policy_floor(environ: Mapping[str, str] | None = None, config: str | None = None) -> int | None:
    """The smallest limit the policy sets for a hook or ``run`` (0: one this cannot read);
    ``1 << 62`` when a file exists but lowers no limit; None when no file and no limit
    variable is there."""
    environ = os.environ if environ is None else environ
    found: list[int] = []
    for name in LIMIT_VARIABLES:
        if environ.get(name):
            found.append(int(environ[name]) if environ[name].strip().isdigit() else 0)
    allows = bool(environ.get("S3SPILL_PROJECT_FILE"))  # read as the full path may: conservatively
    path = operator_file(config, environ)
    if path is not None:
        doc = _read(path)
        if doc is None:
            return 0
        found += [*_limits(doc), 1 << 62]  # 1 << 62: a file exists, with no lower limit in it
        project = doc.get("project")
        flag = project.get("allow_file") if isinstance(project, dict) else None
        if flag is not None and not isinstance(flag, bool):
            return 0
        allows = allows or bool(flag)
    if allows and (local := project_file(os.getcwd())) is not None:
        local_doc = _read(local)
        if local_doc is None:
            return 0
        found += [*_limits(local_doc), 1 << 62]
    return min(found) if found else None


#: ``S3SPILL_*`` variables that set no policy key but the store's own (``S3SPILL_STORE``,
#: which the store's opening reads the same way): tests check them against the schema.
#: ``S3SPILL_USAGE`` is read by the usage recorder alone (``off``: no usage records).
NOT_POLICY_VARIABLES = frozenset({"S3SPILL_STORE", "S3SPILL_SESSION", "S3SPILL_LOG_LEVEL", "S3SPILL_DEBUG",
                                  "S3SPILL_CONFIG", "S3SPILL_USAGE"})


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
