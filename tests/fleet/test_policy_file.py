"""The fleet policy file: found, layered, checked, and reported with where each value came from."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from s3spill.errors import PolicyError
from s3spill.fleet.policy_file import load_policy
from tests.cli.in_process import cli_call

FLEET = """\
# one operator's fleet
[spill]
max_stored_bytes = "256MiB"
secrets = "at_rest"

[quota]
session_bytes = "20GiB"

[tools.Read]
never_spill = true

[harness.claude-code.tools.Bash]
threshold = 10000
"""


def test_config_show_names_the_file_and_line_of_each_value(
        fleet_env: Path, write_policy: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    """Cap, quota and masking from one file: `config show --json` gives each its file:line."""
    path = write_policy(FLEET)
    code, out, _ = cli_call(["--config", str(path), "config", "show", "--json"], capsys)
    rows = {r["key"]: r for r in json.loads(out)["settings"]}
    assert code == 0
    assert rows["spill.max_stored_bytes"] == {"key": "spill.max_stored_bytes", "value": 256 * 2**20,
                                              "origin": f"file:{path}:3", "env": "S3SPILL_MAX_STORED_BYTES"}
    assert rows["spill.secrets"]["origin"] == f"file:{path}:4"
    assert rows["quota.session_bytes"]["value"] == 20 * 2**30
    assert rows["quota.session_bytes"]["origin"] == f"file:{path}:7"
    assert rows["tools.Read.never_spill"]["origin"] == f"file:{path}:10"
    assert rows["harness.claude-code.tools.Bash.threshold"]["origin"] == f"file:{path}:13"
    assert rows["gc.orphan_ttl"] == {"key": "gc.orphan_ttl", "value": "1d", "origin": "default",
                                     "env": "S3SPILL_ORPHAN_TTL"}


def test_a_typo_is_an_error_naming_file_line_and_key(fleet_env: Path, write_policy: Callable[..., Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """`config check` exits 2 and names every problem; loading the policy anywhere refuses it too."""
    path = write_policy('[spill]\nsecrets = "preview"\nmax_stored_byte = 5\n\n[live]\nlost_after = "soon"\n')
    code, _, err = cli_call(["config", "check", str(path)], capsys)
    assert code == 2
    assert f"{path}:3: spill.max_stored_byte: unknown key" in err
    assert f"{path}:6: live.lost_after: " in err and "bad duration 'soon'" in err
    code, _, err = cli_call(["--config", str(path), "run", "--", "true"], capsys)
    assert code == 2 and f"{path}:3: spill.max_stored_byte: unknown key" in err


def test_a_wrong_type_and_bad_toml_name_their_line(fleet_env: Path,
                                                   write_policy: Callable[..., Path]) -> None:
    """A string where a size goes, and a broken table header, each name the line."""
    with pytest.raises(PolicyError) as bad_type:
        load_policy(write_policy("[quota]\n\nsession_objects = \"many\"\n"))
    assert bad_type.value.problems[0].startswith(f"{fleet_env / 'policy.toml'}:3: quota.session_objects: ")
    with pytest.raises(PolicyError) as bad_toml:
        load_policy(write_policy("[spill\nsecrets = 'off'\n", name="broken.toml"))
    assert bad_toml.value.problems[0].startswith(f"{fleet_env / 'broken.toml'}:1:")


def test_variables_win_over_the_file_and_flags_over_both(
        fleet_env: Path, write_policy: Callable[..., Path], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """S3SPILL_<KEY> beats the file; a typed flag beats the variable; each says where it came from."""
    monkeypatch.setenv("S3SPILL_CONFIG", str(write_policy('[gc]\norphan_ttl = "2d"\nsession_ttl = "3d"\n')))
    monkeypatch.setenv("S3SPILL_SESSION_TTL", "4d")
    loaded = load_policy()
    assert loaded.policy.gc.orphan_ttl.days == 2 and loaded.policy.gc.session_ttl.days == 4
    assert str(loaded.origin("gc", "session_ttl")) == "env:S3SPILL_SESSION_TTL"
    code, out, _ = cli_call(["config", "show"], capsys)
    assert code == 0 and "policy files: " + str(fleet_env / "policy.toml") in out
    line = next(ln for ln in out.splitlines() if ln.startswith("gc.session_ttl"))
    assert line.split()[1:] == ["4d", "env:S3SPILL_SESSION_TTL"]
    with pytest.raises(PolicyError, match=r"S3SPILL_MAX_STORED_BYTES: spill\.max_stored_bytes"):
        monkeypatch.setenv("S3SPILL_MAX_STORED_BYTES", "12")
        load_policy()


def test_the_user_config_dir_is_found_without_being_named(fleet_env: Path,
                                                          write_policy: Callable[..., Path]) -> None:
    """$XDG_CONFIG_HOME/s3spill/config.toml, then $XDG_CONFIG_DIRS: the first that exists."""
    system = write_policy("[spill]\nhard_cap_chars = 50000\n", name="system-config/s3spill/config.toml")
    assert load_policy().files == [system]
    user = write_policy("[spill]\nhard_cap_chars = 40000\n", name="home-config/s3spill/config.toml")
    loaded = load_policy()
    assert loaded.files == [user] and loaded.policy.spill.hard_cap_chars == 40_000


def test_a_repository_file_is_read_only_when_the_operator_allows_it(
        fleet_env: Path, write_policy: Callable[..., Path]) -> None:
    """A clone's .s3spill.toml is ignored by default; allowed, it may not move the store or unmask."""
    work = fleet_env / "work"
    (work / ".git").mkdir()
    (work / ".s3spill.toml").write_text("[spill]\nhard_cap_chars = 30000\n")
    operator = write_policy("[spill]\nhard_cap_chars = 60000\n")
    assert load_policy(operator).policy.spill.hard_cap_chars == 60_000
    allowing = write_policy("[project]\nallow_file = true\n", name="allowing.toml")
    loaded = load_policy(allowing)
    assert loaded.policy.spill.hard_cap_chars == 30_000
    assert str(loaded.origin("spill", "hard_cap_chars")) == f"file:{work / '.s3spill.toml'}:2"
    (work / ".s3spill.toml").write_text('[spill]\nsecrets = "off"\n[store]\nurl = "file:///tmp/elsewhere"\n')
    with pytest.raises(PolicyError) as refused:
        load_policy(allowing)
    assert [p.split(": ")[1] for p in refused.value.problems] == ["spill.secrets", "store.url"]
    assert "not allowed in a project file" in refused.value.problems[0]


def test_the_fast_paths_step_aside_for_a_policy_that_lowers_a_limit(
        fleet_env: Path, write_policy: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """policy_floor (stdlib only) sees the file's smallest limit, and each limit variable."""
    from s3spill.fleet.locate import LIMIT_VARIABLES, policy_floor
    from s3spill.fleet.policy import leaf_keys

    assert policy_floor() is None
    monkeypatch.setenv("S3SPILL_CONFIG", str(write_policy("[tools.Bash]\nthreshold = 2000\n")))
    assert policy_floor() == 2000
    write_policy('[spill]\nsecrets = "off"\n')
    assert policy_floor() == 1 << 62  # a file, but no limit in it
    write_policy('[spill]\nhard_cap_chars = "lots"\n')
    assert policy_floor() == 0
    variables = {env for (_, key), env in leaf_keys() if key in ("hard_cap_chars", "max_inline_tokens")}
    assert variables <= set(LIMIT_VARIABLES)


#: Policy files that lower no limit a hook applies: the hook's fast path must stay open.
SETS_NOTHING_THAT_MATTERS = {
    "empty": "",
    "comments only": "# nothing set yet\n",
    "other keys": ('[spill]\nsecrets = "at_rest"\nmax_stored_bytes = "256MiB"\n'
                   '[quota]\nsession_bytes = "1GiB"\n'),
    "the proxy's own limits": ("[proxy]\nmax_inline_tokens = 1000\n"
                               "[harness.mcp-proxy.tools.echo]\nthreshold = 10\n"),
    "a size above the floor": '[tools.Bash]\nthreshold = "64KiB"\n',
    "a project file allowed but absent": "[project]\nallow_file = true\n",
}


@pytest.mark.parametrize("name", sorted(SETS_NOTHING_THAT_MATTERS))
def test_a_policy_that_lowers_no_hook_limit_keeps_the_hook_fast_path(
        name: str, fleet_env: Path, write_policy: Callable[..., Path],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A small payload passes through the hook's fast path under such a file as with none;
    one that lowers a limit (also as a size string or in an allowed project file) does not."""
    import io
    import sys

    from s3spill.cli import fastpath

    small = json.dumps({"hook_event_name": "PostToolUse", "tool_name": "Bash",
                        "tool_response": {"stdout": "ok\n" * 100}}).encode()

    def passes() -> bool:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(small)))
        return fastpath.hook_pass_through(["hook", "claude-code"])

    assert passes()  # no policy at all
    monkeypatch.setenv("S3SPILL_CONFIG", str(write_policy(SETS_NOTHING_THAT_MATTERS[name])))
    assert passes(), name
    write_policy(SETS_NOTHING_THAT_MATTERS[name] + '\n[tools.Grep]\nthreshold = "2KB"\n')
    assert not passes()
    write_policy("[project]\nallow_file = true\n")
    (fleet_env / "work" / ".s3spill.toml").write_text("[tools.Bash]\nthreshold = 1000\n")
    assert not passes()


def test_the_fast_paths_read_sizes_as_the_schema_does() -> None:
    """Every size form the stdlib reader understands gives pydantic's ByteSize value; any
    other form gives 0 (the full path decides)."""
    from pydantic import ByteSize, TypeAdapter

    from s3spill.fleet.locate import _size

    schema = TypeAdapter(ByteSize)
    for text in ("64KiB", "64 kib", "25000", "25kb", "1.5MiB", "2GB", "3 G", "7b", " 10 MB "):
        assert _size(text) == schema.validate_python(text), text
    for odd in ("64 KiBs", "lots", "", "1e3", "-5KB", "64KiB extra", True, 1.5):
        assert _size(odd) == 0, odd
