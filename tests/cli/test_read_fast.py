"""The fast read (issue 35) prints what the full CLI prints, and leaves every other call to it."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from s3spill import keys
from s3spill.cli import argtypes, read_fast
from s3spill.store.local import LocalStore
from tests.cli.conftest import FULL, CliCall, full_path
from tests.cli.read_outputs import AWS_KEY, READS, SESSION, write_artifacts


def _answered(argv: list[str], capsys: pytest.CaptureFixture[str]) -> bool:
    """Did the fast read answer ``argv`` itself (what it printed is thrown away)?"""
    code = read_fast.fast_read(argv)
    capsys.readouterr()
    return code is not None


def test_every_pinned_read_prints_the_same_either_way(local: LocalStore, cli: CliCall,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The pinned reads (text, log, JSON, CSV, binary, empty; masked and not): the fast read's
    answer or refusal equals the full path's, and it answers the plain pages, masked or not,
    while a page whose chunk holds the planted key is masked by the full path."""
    ids = write_artifacts(local)
    answered = set()
    for name, argv in READS:
        for extra in ((), ("--show-secrets",)):
            call = [argv[0], ids[name], *argv[1:], *extra]
            what = " ".join((name, *argv, *extra))
            assert cli(*call) == full_path(cli, monkeypatch, *call), what
            if _answered(call, capsys):
                answered.add(what)
    assert {"log read --offset 2995 --limit 20", "log read --offset 2995 --limit 20 --show-secrets",
            "log read --offset 1499 --limit 3 --max-chars 1200 --show-secrets",
            "log read --offset 1500 --char-offset 700 --limit 2 --max-chars 1500 --show-secrets",
            "log read --offset 1190 --limit 30 --show-secrets", "csv read --limit 20 --show-secrets",
            "json read --show-secrets", "log grep status=500 --max-matches 5 --show-secrets",
            "log grep no such thing --show-secrets", "log grep \\xff|bad --show-secrets",
            "json grep AKIA --show-secrets", "empty grep x"} <= answered
    refused = {"log read --offset 1190 --limit 30", "binary read", "log read --offset 99999",
               "log read --since 100000 --limit 5", "log read --offset 1190 --limit 30 --json",
               "log grep (unclosed", "binary grep AKIA", "csv grep multi|key --max-matches 6",
               "log grep AWS|aws_secret -i"}
    assert not refused & answered
    code, out, _ = cli("read", ids["log"], "--offset", "1190", "--limit", "30")
    assert code == 0 and "[redacted:" in out and AWS_KEY not in out


def _page_argv(local: LocalStore) -> tuple[list[str], Path]:
    ids = write_artifacts(local)
    sid = keys.SourceId.parse(ids["log"])
    path = Path(local.root, "objects", keys.artifact_key(sid.session_hash, sid.name))
    return ["read", ids["log"], "--offset", "2995", "--limit", "5"], path


@pytest.mark.parametrize("damage", ["body byte", "body cut", "index byte", "index trailer", "no index",
                                    "linked directory"])
def test_a_damaged_artifact_is_refused_by_the_full_path(damage: str, local: LocalStore, cli: CliCall,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Whatever is wrong with the stored bytes, the fast read prints nothing and the full
    path says what is wrong, exactly as it does when the fast read is not asked."""
    argv, body = _page_argv(local)
    assert _answered(argv, capsys)
    index = Path(str(body) + ".idx")
    if damage == "body byte":
        raw = bytearray(body.read_bytes())
        raw[len(raw) - 400] ^= 0x01  # inside the last frame, before the trailer
        body.write_bytes(bytes(raw))
    elif damage == "body cut":
        raw = body.read_bytes()
        body.write_bytes(raw[:100] + raw[-300:])
    elif damage == "index byte":
        index.write_bytes(index.read_bytes().replace(b'"line_count":', b'"line_count":1', 1))
    elif damage == "index trailer":
        index.write_bytes(index.read_bytes()[:-3])
    elif damage == "no index":
        index.unlink()
    else:
        sessions = body.parents[1]
        sessions.rename(sessions.with_name("moved"))
        sessions.symlink_to(sessions.with_name("moved"))
    assert not _answered(argv, capsys)
    code, out, err = cli(*argv)
    assert (code, out, err) == full_path(cli, monkeypatch, *argv)
    assert code != 0 and out == "" and err.startswith("s3spill: ")


@pytest.mark.parametrize("argv", [
    ["read"], ["read", "ID", "ID"], ["read", "ID", "--off", "1"], ["read", "ID", "--offset", "-1"],
    ["read", "ID", "--offset", "1_0"], ["read", "ID", "--limit", "0"], ["read", "ID", "--offset", "٣"],
    ["read", "ID", "--json"], ["read", "ID", "--since", "5"], ["read", "ID", "--path", ""],
    ["read", "ID", "--offset", "1", "--offset", "2"], ["--debug", "read", "ID"], ["read", "ID", "-h"],
    ["read", "ID", "--show-secrets=1"], ["read", "ID", "--"], ["grep", "ID"], ["grep", "ID", "-x"],
    ["grep", "ID", "x", "--json"], ["grep", "ID", "x", "--context", "-1"], ["grep", "ID", "x", "-i=1"],
    ["grep", "ID", "x", "--offset", "1"], ["read", "ID", "-i"], ["ls"],
    ["--store", "s3://bucket/x", "read", "ID"], ["--store=relative", "read", "ID"],
    ["--store", "file:///tmp/%41", "read", "ID"], ["read", " ID"], ["read", "ID", "--max-chars"],
])
def test_an_unusual_call_goes_to_the_full_path(argv: list[str], local: LocalStore,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Other commands and flags, bad values, repeats, abbreviations, other stores: not answered here."""
    ids = write_artifacts(local)
    call = [ids["log"] if a == "ID" else " " + ids["log"] if a == " ID" else a for a in argv]
    assert not _answered(call, capsys)
    assert _answered(["read", ids["log"], "--show-secrets"], capsys)


@pytest.mark.parametrize("env", [{"S3SPILL_LIMIT": "5"}, {"S3SPILL_JSON": "1"}, {"S3SPILL_SESSION": ""},
                                 {"S3SPILL_SESSION": "other"}, {"XDG_CONFIG_HOME": "POLICY"}])
def test_an_environment_that_sets_anything_goes_to_the_full_path(env: dict[str, str], local: LocalStore,
                                                                 tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A variable that sets a flag's default, no session or another one, a fleet policy file."""
    ids = write_artifacts(local)
    assert _answered(["read", ids["log"], "--show-secrets"], capsys)
    for name, value in env.items():
        if value == "POLICY":
            (tmp_path / "cfg" / "s3spill").mkdir(parents=True)
            (tmp_path / "cfg" / "s3spill" / "config.toml").write_text("[spill]\n")
            value = str(tmp_path / "cfg")
        monkeypatch.setenv(name, value)
    assert not _answered(["read", ids["log"], "--show-secrets"], capsys)


def test_flags_before_and_after_the_command_and_a_plain_path_read_the_same(
        local: LocalStore, cli: CliCall, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``--store``/``--session`` anywhere, ``=`` forms, a path or a ``file://localhost`` URL."""
    ids = write_artifacts(local)
    monkeypatch.delenv("S3SPILL_SESSION")
    root = str(local.root)
    for argv in (["--store", root, "--session", SESSION, "read", ids["log"], "--limit=7"],
                 ["read", ids["log"], f"--store=file://localhost{root}", "--limit", "7", "--session=s"],
                 ["--session", SESSION, "read", "--limit", "7", ids["log"], "--store", root + "/"]):
        assert _answered(argv, capsys), argv
        assert cli(*argv) == full_path(cli, monkeypatch, *argv)
        assert cli(*argv)[1].startswith(f"[{ids['log']} | lines 1-7 of 3,002 |")


def test_the_fast_read_records_the_usage_event_the_full_path_records(
        local: LocalStore, cli: CliCall, monkeypatch: pytest.MonkeyPatch) -> None:
    """One event each, the same facts and the same shown text (ids and times aside); none for
    ``--show-secrets``, the operator's unmasked view."""
    ids = write_artifacts(local)
    argv = ["read", ids["log"], "--offset", "2995", "--limit", "5"]

    def events() -> list[dict[str, object]]:
        found = []
        for info in local.list(keys.usage_prefix(keys.session_hash(SESSION))):
            for line in local.get(info.key).splitlines():
                row = json.loads(line)
                found.append({k: v for k, v in row.items() if k not in ("id", "ts")})
        return found

    assert cli(*argv)[0] == 0
    fast = events()
    assert full_path(cli, monkeypatch, *argv)[0] == 0
    both = events()
    assert len(fast) == 2 and fast[0]["op"] == "read" and fast[0]["first_line"] == 2996
    assert sorted(map(str, both)) == sorted(map(str, fast + fast))
    cli(*argv, "--show-secrets")
    assert len(events()) == 4


def test_the_keys_and_names_it_derives_are_the_librarys() -> None:
    """The session hash, the artifact key, the harness variables: spelled as keys and argtypes do."""
    from s3spill.cli import fast_artifact

    assert fast_artifact._SESSIONS == keys.SESSIONS
    assert read_fast._HARNESS_SESSION_VARIABLES == argtypes.HARNESS_SESSION_VARIABLES
    assert keys.session_hash("s") == hashlib.sha256(b"s3spill-session\0s").hexdigest()[:32]
    assert fast_artifact._SMALL == 1024 * 1024

    from s3spill.store import local_trailer

    assert fast_artifact._MAGIC == local_trailer.MAGIC and local_trailer.TAIL.size == fast_artifact._TAIL


@pytest.mark.parametrize("value", ["off", "OFF", "0", "false", "No", "on", "1", "yes", ""])
def test_usage_is_off_for_the_values_the_recorder_reads_as_off(value: str, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast read skips opening the store for usage exactly when no recorder would exist."""
    from s3spill.usage.recorder import usage_recorder

    monkeypatch.setenv("S3SPILL_USAGE", value)
    assert (usage_recorder(LocalStore(tmp_path / "s"), batch=False) is None) == (
        value.lower() in read_fast._USAGE_OFF)


def test_a_fast_read_loads_no_argparse_dataclasses_orjson_or_store_layer(tmp_path: Path,
                                                                         probe: object) -> None:
    """What makes it fast (issue 35): none of the full CLI's heavy imports, masked or not."""
    from s3spill.artifacts.store import ArtifactStore

    sid = ArtifactStore(LocalStore(tmp_path / "store"), session_id="fast").write(
        "fast", [b"one\ntwo status=200\n" * 100], "t").source_id
    heavy = {"argparse", "dataclasses", "inspect", "unicodedata", "orjson", "typing", "s3spill.store.local",
             "s3spill.keys", "s3spill.artifacts.index", "s3spill.artifacts.paging", "zstandard", "pydantic",
             "logging", "re2"}  # re2: RE2's binding alone (context.secrets.re2_light)
    for extra in (["--show-secrets"], []):
        got = probe(["read", sid, *extra], XDG_CONFIG_HOME=str(tmp_path / "none"),  # type: ignore[operator]
                    S3SPILL_USAGE="off")
        assert got["code"] == 0 and "two status=200" in got["printed"]
        assert not heavy & set(got["modules"]), heavy & set(got["modules"])
        assert ("s3spill.context.secrets.triggers" in got["modules"]) is not extra
    grep = probe(["grep", sid, "two"], XDG_CONFIG_HOME=str(tmp_path / "none"))  # type: ignore[operator]
    assert grep["code"] == 0 and "two status=200" in grep["printed"]
    assert not heavy & set(grep["modules"]), heavy & set(grep["modules"])  # no dataclasses either
    assert os.environ.get(FULL) is None


def test_a_fast_read_grep_and_usage_event_import_neither_json_nor_hashlib(tmp_path: Path) -> None:
    """Their C halves are enough (s3spill.stdlib_light: ~3.5 ms of a fresh process's imports
    saved), and the page, the grep and the usage events are the same as ever."""
    import subprocess
    import sys

    from s3spill.artifacts.store import ArtifactStore
    from tests.cli.conftest import cli_env

    sid = ArtifactStore(LocalStore(tmp_path / "store"), session_id="fast").write(
        "fast", [b"one\ntwo status=200\n" * 100], "t").source_id
    code = ("import sys\nfrom s3spill.cli import main\ncode = main(sys.argv[1:])\nsys.stdout.flush()\n"
            "print('', code, 'json' in sys.modules, 'hashlib' in sys.modules)")
    for argv in (["read", sid], ["grep", sid, "two"], ["read", sid, "--show-secrets"]):
        proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60,
                              env=cli_env(tmp_path, XDG_CONFIG_HOME=str(tmp_path / "none")), check=True)
        assert "two status=200" in proc.stdout and proc.stdout.split()[-3:] == ["0", "False", "False"], proc
    from s3spill.usage.source import part_events, usage_objects

    store = LocalStore(tmp_path / "store")
    shown = [event["shown"] for obj in usage_objects(store, session_hash=keys.session_hash("fast"))
             for event in part_events(store.get(obj.key))]
    assert len(shown) == 2 and all("two status=200" in text for text in shown)


@pytest.mark.parametrize("raw", [b'{"a": "\\u001b[31m"}', b'{"a": "\\ud83d\\ude00"}', b'{"a": "\\ud800"}',
                                 b'{"a": "\\udc00"}', b'{"a": "\\\\ud800"}', b'{"a": 1.5}', b'{"a": NaN}',
                                 b'{"a": 1, "a": 2}', b'{"a": 123456789012345678901}', b'{"a": "\xff"}',
                                 b'{"a": [1, true, null, "caf\xc3\xa9"]}', b'{"a": 1} x', b"  {} ",
                                 b'{"a": "\\u00e9\\t"}', b'\xef\xbb\xbf{"a": 1}'])
def test_its_json_reads_what_orjson_reads_or_declines(raw: bytes) -> None:
    """Where orjson refuses, the fast path declines; where it declines not, it reads orjson's value."""
    import orjson

    from s3spill.cli import fast_artifact

    try:
        expected = orjson.loads(raw)
    except orjson.JSONDecodeError:
        expected = None
    try:
        got = fast_artifact._loads(raw)
    except Exception:
        return
    assert expected is not None and got == expected and type(got) is type(expected)


def test_a_coloured_first_line_is_read_here(local: LocalStore, cli: CliCall, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """An index whose summary holds an escape (an ANSI colour) is read by the fast path, the same."""
    from s3spill.artifacts.store import ArtifactStore

    arts = ArtifactStore(local, session_id=SESSION)
    sid = arts.write(SESSION, [b"\x1b[31mred\x1b[0m\nplain\n"], "t").source_id
    argv = ["read", sid, "--show-secrets"]
    assert _answered(argv, capsys)
    assert cli(*argv) == full_path(cli, monkeypatch, *argv)


@pytest.mark.parametrize("chunk_size", [4096, 1 << 20])
def test_a_grep_whose_whole_digest_disagrees_is_left_to_the_full_path(
        chunk_size: int, local: LocalStore, cli: CliCall, capsys: pytest.CaptureFixture[str]) -> None:
    """Every chunk matches its own digest, the index's whole-text digest does not (one chunk or
    many): the fast grep prints nothing and the full path refuses it."""
    from s3spill.artifacts.store import ArtifactStore
    from s3spill.config import TransferConfig

    data = b"".join(b"%05d status=200 ok\n" % i for i in range(2000))
    arts = ArtifactStore(local, TransferConfig(index_chunk_size=chunk_size), session_id=SESSION)
    sid = keys.SourceId.parse(arts.write(SESSION, [data], "t").source_id)
    argv = ["grep", str(sid), "status"]
    assert _answered(argv, capsys)
    key = keys.artifact_key(sid.session_hash, sid.name) + ".idx"
    index = json.loads(local.get(key))
    assert (len(index["chunk_sha256"]) == 1) is (chunk_size > len(data))
    digest = index["sha256"]
    index["sha256"] = digest[:40] + ("0" if digest[40] != "0" else "1") + digest[41:]
    Path(local.root, "objects", key).unlink()
    local.put_if_absent(key, json.dumps(index, separators=(",", ":")).encode())
    assert not _answered(argv, capsys)
    code, out, err = cli(*argv)
    assert code != 0 and out == "" and err.startswith("s3spill: ")


_NAME = "20261202T061458Z-a44e5b345012-"


@pytest.mark.parametrize("name", [
    _NAME + "bench", _NAME + "b", _NAME + "a" * 24, _NAME, _NAME + "a" * 25,
    "2026120xT061458Z-a44e5b345012-x", "20261202T061458Z-A44e5b345012-bench",
    "20261202t061458Z-a44e5b345012-bench", "\u0662" + _NAME[1:] + "bench",
    _NAME + "Bench", _NAME + "be.ch", "20261202T061458Za44e5b345012-bench", _NAME + "bench\n",
    "20261202T061458Z-a44e5b34501-bench", _NAME + "under_score-dash09"])
def test_an_artifact_name_is_checked_as_the_regular_expression_checks_it(name: str) -> None:
    """The positional check of a source id's name accepts exactly what its regular expression matched."""
    import re

    from s3spill.cli import fast_artifact

    expected = re.fullmatch(r"[0-9]{8}T[0-9]{6}Z-[0-9a-f]{12}-[a-z0-9_-]{1,24}", name) is not None
    assert fast_artifact._artifact_name(name) is expected
