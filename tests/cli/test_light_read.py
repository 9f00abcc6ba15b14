"""A read opens its store without the fleet policy's models when no policy can apply, else with them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from s3spill.fleet.locate import NOT_POLICY_VARIABLES, store_needs_no_policy
from s3spill.fleet.policy import leaf_keys
from s3spill.store.local import LocalStore
from tests.cli.conftest import cli_env

Probe = Callable[..., dict[str, Any]]


def _spill(tmp_path: Path) -> str:
    from s3spill.artifacts.store import ArtifactStore

    store = LocalStore(tmp_path / "store")
    return ArtifactStore(store, session_id="fast").write("fast", [b"one\ntwo\n"], "t").source_id


def test_only_the_store_variable_is_both_a_policy_key_and_read_without_the_policy() -> None:
    """Every other variable the short way ignores sets no policy key: the policy holds its defaults."""
    policy_variables = {name for _, name in leaf_keys()}
    assert NOT_POLICY_VARIABLES & policy_variables == {"S3SPILL_STORE"}
    assert not store_needs_no_policy(None, {"S3SPILL_SECRETS": "off"})
    assert store_needs_no_policy(None, {"S3SPILL_STORE": "/x", "S3SPILL_SESSION": "s", "HOME": "/none"})


def test_a_read_with_no_policy_loads_no_policy_and_one_with_a_policy_file_does(tmp_path: Path,
                                                                               probe: Probe) -> None:
    """Same page both ways; the policy file (here one that sets nothing) is loaded and checked.
    Without one, a page read loads neither the write path, the transfer settings, the other
    read tools, detect-secrets nor pydantic (issue 35: the index and the page are plain classes),
    nor logging (no record at its level), the secret detector (no trigger fires) or the failure table;
    usage records turned off (``S3SPILL_USAGE=off``) take the same short way."""
    source = _spill(tmp_path)
    plain = probe(["read", source], XDG_CONFIG_HOME=str(tmp_path / "none"))
    assert plain["code"] == 0 and "two" in plain["printed"]
    skipped = {"s3spill.fleet.policy_file", "s3spill.config", "s3spill.artifacts.writer",
               "s3spill.typed.jsonpath", "s3spill.artifacts.grep.engine", "detect_secrets", "pydantic",
               "s3spill.models", "s3spill.artifacts.index_builder", "logging", "shutil", "tempfile",
               "s3spill.context.secrets.detector", "s3spill.cli.failures"}
    assert not skipped & set(plain["modules"])
    from s3spill import keys

    usage = LocalStore(tmp_path / "store")

    def parts() -> int:
        return len(list(usage.list(keys.usage_prefix(keys.session_hash("fast")))))

    assert parts() == 1  # the read's usage event (written by the fast read's own writer, cli/usage_fast)
    quiet = probe(["read", source], XDG_CONFIG_HOME=str(tmp_path / "none"), S3SPILL_USAGE="off")
    assert quiet["printed"] == plain["printed"] and not skipped & set(quiet["modules"])
    assert parts() == 1
    grep = probe(["grep", source, "tw"], XDG_CONFIG_HOME=str(tmp_path / "none"))
    assert grep["code"] == 0 and "two" in grep["printed"]
    assert not {"pydantic", "s3spill.models", "s3spill.artifacts.writer"} & set(grep["modules"])
    (tmp_path / "cfg" / "s3spill").mkdir(parents=True)
    (tmp_path / "cfg" / "s3spill" / "config.toml").write_text("[spill]\n")
    with_file = probe(["read", source], XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    assert with_file["code"] == 0 and with_file["printed"] == plain["printed"]
    assert "s3spill.fleet.policy_file" in with_file["modules"]


def test_a_bad_policy_variable_still_fails_a_read(tmp_path: Path, probe: Probe) -> None:
    """A variable the policy refuses is refused on a read as before (the short way is not taken)."""
    source = _spill(tmp_path)
    import subprocess
    import sys

    env = cli_env(tmp_path, S3SPILL_HARD_CAP_CHARS="lots", XDG_CONFIG_HOME=str(tmp_path / "none"))
    proc = subprocess.run([sys.executable, "-m", "s3spill", "read", source], env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode != 0 and "S3SPILL_HARD_CAP_CHARS" in proc.stderr


def test_the_local_stores_default_piece_is_the_settings_part_size() -> None:
    """A write without settings copies in the pieces the default settings would use."""
    from s3spill.config import TransferConfig
    from s3spill.store import local

    assert TransferConfig().part_size == local._PART_SIZE
