"""Finding, reading and layering the fleet policy, and knowing where every value came from.

Layers, lowest first: the schema's defaults; the operator's file (``--config``, else
``$S3SPILL_CONFIG``, else ``$XDG_CONFIG_HOME/s3spill/config.toml``, else the first of
``$XDG_CONFIG_DIRS`` (``/etc/xdg``) and ``/etc`` holding ``s3spill/config.toml``); a project
file (``.s3spill.toml`` in the working directory or up to its repository's root) only when
the operator's layers say ``[project] allow_file = true`` — and never for ``[store]``,
``[project]`` or ``spill.secrets``, so a cloned repository cannot move the store or turn
masking off; then ``S3SPILL_*`` variables; then an entry point's explicit flags.

Why tomlkit and a parser hook: a typo must be reported at its line, and the standard
``tomllib`` gives positions only for syntax errors. tomlkit is a full TOML parser that
tracks its position; :class:`~s3spill.fleet.policy_toml.Positions` records it at each key and
table header (two overridden parser steps, tested in tests/fleet/test_policy.py against the
pinned range). It is imported when a file is read: a process with no policy file never loads tomlkit.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import ByteSize, ValidationError

from s3spill.config import LiveConfig, TransferConfig
from s3spill.context.policy import SpillPolicy
from s3spill.errors import ConfigError, PolicyError
from s3spill.fleet import locate
from s3spill.fleet.locate import operator_file
from s3spill.fleet.policy import FleetPolicy, leaf_keys
from s3spill.fleet.quota import Quota
from s3spill.store import ObjectStore, open_store

__all__ = ["LoadedPolicy", "Origin", "load_policy", "operator_file"]

Path_ = tuple[str, ...]
#: What a project file may never set.
PROTECTED: tuple[Path_, ...] = (("store",), ("project",), ("spill", "secrets"))
_SPILL_KEYS = ("pointer_style", "secrets", "hard_cap_chars", "max_inline_tokens", "store_deadline",
               "max_stored_bytes", "capped_tail_bytes")


@dataclass(frozen=True)
class Origin:
    """Where one value came from: ``default``, ``file`` (path:line), ``env`` (name) or ``flag``."""

    kind: str
    where: str = ""

    def __str__(self) -> str:
        return self.kind if self.kind == "default" else f"{self.kind}:{self.where}"


DEFAULT = Origin("default")


def _read(path: Path) -> tuple[dict[str, Any], dict[Path_, int]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read policy file {path}: {exc.strerror or exc}",
                          hint="check --config / $S3SPILL_CONFIG") from None
    except UnicodeDecodeError:
        raise PolicyError([f"{path}: not UTF-8 text"]) from None
    from tomlkit.exceptions import ParseError

    from s3spill.fleet.policy_toml import Positions

    parser = Positions(text)
    try:
        doc = parser.parse()
    except ParseError as exc:
        what = str(exc).split(" at line")[0]
        raise PolicyError([f"{path}:{exc.line}:{exc.col}: not TOML: {what}"]) from None
    return doc.unwrap(), parser.lines


def _leaves(doc: Mapping[str, Any], prefix: Path_ = ()) -> list[tuple[Path_, Any]]:
    out: list[tuple[Path_, Any]] = []
    for key, value in doc.items():
        if isinstance(value, Mapping) and value:
            out.extend(_leaves(value, (*prefix, key)))
        else:
            out.append(((*prefix, key), value))
    return out


def _line_of(lines: Mapping[Path_, int], path: Path_) -> int | None:
    for n in range(len(path), 0, -1):
        if path[:n] in lines:
            return lines[path[:n]]
    return None


def _put(data: dict[str, Any], path: Path_, value: Any) -> None:
    for key in path[:-1]:
        data = data.setdefault(key, {})
        if not isinstance(data, dict):
            return  # a scalar where a table goes: the schema says so
    data[path[-1]] = value


def project_file(cwd: Path) -> Path | None:
    """``.s3spill.toml`` in ``cwd`` or a parent, up to the repository's root (``.git``); the
    fast paths look for it the same way (:func:`s3spill.fleet.locate.project_file`)."""
    found = locate.project_file(str(cwd))
    return Path(found) if found is not None else None


@dataclass
class LoadedPolicy:
    """The checked policy, the origin of every value that is not a default, the files read."""

    policy: FleetPolicy
    origins: dict[Path_, Origin] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)

    def origin(self, *path: str) -> Origin:
        return self.origins.get(path, DEFAULT)

    def is_set(self, *path: str) -> bool:
        """Did a file, a variable or a flag give this key (or anything under it)?"""
        n = len(path)
        return any(p[:n] == path for p in self.origins)

    def value(self, section: str, key: str) -> Any:
        return getattr(getattr(self.policy, section), key)

    # -- what each layer below takes ---------------------------------------------------

    def spill_policy(self, base: SpillPolicy | None = None, harness: str | None = None) -> SpillPolicy:
        """``base`` (an entry point's own defaults) with every key the operator set on top."""
        base = base or SpillPolicy()
        update: dict[str, Any] = {k: _plain(self.value("spill", k)) for k in _SPILL_KEYS
                                  if self.is_set("spill", k)}
        for kind in ("shell", "default"):
            if self.is_set("spill", kind):
                update[kind] = getattr(self.policy.spill, kind).applied(getattr(base, kind))
        rules = self.policy.rules(harness)
        if rules:
            update["tools"] = {**base.tools, **{name: rule.applied(base.for_tool(name))
                                                for name, rule in rules.items()}}
            update["never_spill"] = base.never_spill | {n for n, r in rules.items() if r.never_spill}
        if not update:
            return base
        fields = {k: getattr(base, k) for k in type(base).model_fields}
        return type(base)(**{**fields, **update})

    def quota(self) -> Quota | None:
        q = self.policy.quota
        limits = {k: _plain(v) for k, v in q.model_dump().items() if v is not None}
        return Quota(**limits) if limits else None

    def live_config(self, base: LiveConfig | None = None) -> LiveConfig:
        base = base or LiveConfig()
        update = {k: _plain(self.value("live", k)) for k in type(self.policy.live).model_fields
                  if self.is_set("live", k)}
        return LiveConfig(**{**base.model_dump(), **update}) if update else base

    def open_store(self, url: str | None = None, config: TransferConfig | None = None, *,
                   create: bool = True) -> ObjectStore:
        """The store: ``url`` (a flag) if given, else the policy's (``[store] url`` /
        ``$S3SPILL_STORE``), else the default; with the policy's KMS key."""
        kms = self.policy.store.kms_key_id
        if kms and (config is None or config.sse_kms_key_id is None):
            config = (config or TransferConfig()).model_copy(update={"sse_kms_key_id": kms})
        return open_store(url or self.policy.store.url, config, create=create)

    # -- config show --------------------------------------------------------------------

    def rows(self) -> list[dict[str, Any]]:
        """Every key (and every per-tool rule given) with its value, origin and variable."""
        rows = [{"key": ".".join(path), "value": _shown(self.value(*path)), "origin": str(self.origin(*path)),
                 "env": env} for path, env in leaf_keys()]
        for path, origin in sorted(self.origins.items()):
            if path[0] in ("tools", "harness") or path[:2] in (("spill", "shell"), ("spill", "default")):
                rows.append({"key": ".".join(path), "value": _shown(_dig(self.policy, path)),
                             "origin": str(origin), "env": None})
        return rows


def _plain(value: Any) -> Any:
    if isinstance(value, ByteSize):
        return int(value)
    if isinstance(value, timedelta):
        return value.total_seconds()
    return value


def _shown(value: Any) -> Any:
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
        unit = next((u for u, n in (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60)) if seconds >= n
                     and seconds % n == 0), "s")
        return f"{seconds / dict(w=604800, d=86400, h=3600, m=60, s=1)[unit]:g}{unit}"
    return int(value) if isinstance(value, ByteSize) else value


def _dig(obj: Any, path: Path_) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key.replace("-", "_"), None)
    return obj


def _check_project(path: Path, doc: Mapping[str, Any], lines: Mapping[Path_, int]) -> list[str]:
    bad = []
    for leaf, _ in _leaves(doc):
        if any(leaf[:len(p)] == p for p in PROTECTED):
            bad.append(f"{path}:{_line_of(lines, leaf)}: {'.'.join(leaf)}: not allowed in a project file "
                       "(only the operator's policy may set the store, the project rule and secrets)")
    return bad


def _located(exc: ValidationError, origins: Mapping[Path_, Origin]) -> list[tuple[Origin, str, str]]:
    """Each problem with the origin of its value, its dotted key and what is wrong."""
    out = []
    for err in exc.errors():
        loc = tuple(str(p) for p in err["loc"])
        origin = next((origins[loc[:n]] for n in range(len(loc), 0, -1) if loc[:n] in origins), DEFAULT)
        key = ".".join(loc)
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown key"
        elif "input" in err and not isinstance(err["input"], (dict, list)):
            msg += f" (got {err['input']!r})"
        out.append((origin, key, msg))
    return out


def _hint(located: list[tuple[Origin, str, str]]) -> str | None:
    """The policy's own hint only where a file is at fault; a flag or a variable is fixed
    where it was given (its name leads the problem)."""
    if any(origin.kind in ("file", "default") for origin, _, _ in located):
        return None  # PolicyError's: fix the policy; `config check FILE` lists every problem
    return "change the flag or variable named above"


class _Layers:
    """The raw layers in order, with the origin of each leaf; checked once, at the end."""

    def __init__(self) -> None:
        self.data: dict[str, Any] = {}
        self.origins: dict[Path_, Origin] = {}
        self.files: list[Path] = []

    def add_file(self, path: Path) -> tuple[dict[str, Any], dict[Path_, int]]:
        doc, lines = _read(path)
        self.files.append(path)
        for leaf, value in _leaves(doc):
            _put(self.data, leaf, value)
            self.origins[leaf] = Origin("file", f"{path}:{_line_of(lines, leaf) or 1}")
        return doc, lines

    def add(self, path: Path_, value: Any, origin: Origin) -> None:
        _put(self.data, path, value)
        self.origins[path] = origin

    def check(self) -> FleetPolicy:
        try:
            return FleetPolicy.model_validate(self.data)
        except ValidationError as exc:
            located = _located(exc, self.origins)
            raise PolicyError([f"{o.where or 'default'}: {k}: {m}" for o, k, m in located],
                              hint=_hint(located)) from None


def load_policy(config: str | os.PathLike[str] | None = None, *, environ: Mapping[str, str] | None = None,
                cwd: str | os.PathLike[str] | None = None,
                flags: Mapping[Path_, tuple[Any, Origin]] | None = None,
                only_file: bool = False) -> LoadedPolicy:
    """The policy in force: files, ``S3SPILL_*`` variables and ``flags`` ((section, key) ->
    (value, its origin)) layered as the module docstring says. ``only_file`` reads ``config``
    alone (``s3spill config check``). Raises :class:`PolicyError` naming file:line and key."""
    environ = os.environ if environ is None else environ
    layers = _Layers()
    named = operator_file(config, environ)
    path = Path(named) if named is not None else None
    if path is not None:
        layers.add_file(path)
    if not only_file:
        for (section, key), name in leaf_keys():
            if environ.get(name, "") != "":
                layers.add((section, key), environ[name], Origin("env", name))
        allowed = layers.check().project.allow_file
        project = project_file(Path(cwd or os.getcwd()).resolve()) if allowed else None
        if project is not None and project != (path.resolve() if path else None):
            doc, lines = _read(project)
            bad = _check_project(project, doc, lines)
            if bad:
                raise PolicyError(bad)
            env_set = {p: o for p, o in layers.origins.items() if o.kind == "env"}
            layers.add_file(project)
            for leaf, origin in env_set.items():  # variables still win over the project file
                layers.add(leaf, environ[origin.where], origin)
        for leaf, (value, origin) in (flags or {}).items():
            if value is not None:
                layers.add(leaf, value, origin)
    policy = layers.check()
    return LoadedPolicy(policy, layers.origins, layers.files)


def policy_schema() -> dict[str, Any]:
    """The JSON schema of the file (for editors and CI)."""
    return FleetPolicy.model_json_schema()

