"""The local store on shared or tampered ground: modes, symlinks, dead writers' temporaries, trailers."""

from __future__ import annotations

import io
import json
import os
import signal
import stat
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from s3spill.cli import main
from s3spill.errors import IntegrityError, StoreError
from s3spill.store.local import LocalStore
from s3spill.testing import child_env


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_an_existing_root_keeps_its_mode(tmp_path: Path) -> None:
    """Opening a directory it did not create (think file:///tmp) never chmods it."""
    root = tmp_path / "shared"
    root.mkdir()
    os.chmod(root, 0o1777)  # noqa: S103 - a shared directory like /tmp, on purpose
    LocalStore(root)
    assert _mode(root) == 0o1777


def test_every_directory_it_creates_is_0700_and_files_0600(tmp_path: Path, umask_022: None) -> None:
    """Missing parents of the root, the root, key directories: all 0700; objects 0600."""
    store = LocalStore(tmp_path / "a" / "b" / "store")
    store.put_if_absent("x/y/z", b"data")
    for d in (tmp_path / "a", tmp_path / "a" / "b", store.root, store.root / "objects",
              store.root / "objects" / "x", store.root / "objects" / "x" / "y", store.root / "tmp"):
        assert _mode(d) == 0o700, d
    assert _mode(store.root / "objects" / "x" / "y" / "z") == 0o600


def test_a_directory_symlink_inside_the_root_is_refused(tmp_path: Path) -> None:
    """A planted link objects/v1 -> outside cannot carry a write, a read or a delete outside."""
    store = LocalStore(tmp_path / "store")
    outside = tmp_path / "outside"
    outside.mkdir()
    (store.root / "objects" / "v1").symlink_to(outside)
    with pytest.raises(StoreError, match="symlink"):
        store.put_if_absent("v1/k", b"secret")
    assert list(outside.iterdir()) == []
    LocalStore(tmp_path / "other").put_if_absent("k", b"theirs")
    os.link(tmp_path / "other" / "objects" / "k", outside / "k")
    for op in (lambda: store.head("v1/k"), lambda: store.get("v1/k"),
               lambda: store.delete_if_match("v1/k", "*")):
        with pytest.raises(StoreError, match="symlink"):
            op()
    assert (outside / "k").exists()


def test_a_file_symlink_inside_the_root_is_not_followed(tmp_path: Path) -> None:
    """An object path that is a symlink to a valid object elsewhere is refused, not read."""
    other = LocalStore(tmp_path / "other")
    other.put_if_absent("k", b"elsewhere")
    store = LocalStore(tmp_path / "store")
    (store.root / "objects" / "k").symlink_to(other.root / "objects" / "k")
    with pytest.raises(StoreError, match="symlink"):
        store.get("k")


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


_SLOW_WRITER = """
import sys, time
from s3spill.store.local import LocalStore
def body():
    yield b"x" * 65536
    print("writing", flush=True)
    time.sleep(600)
LocalStore(sys.argv[1]).put_if_absent("k", body())
"""


def _start_writer(root: Path) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_WRITER, str(root)],
                            env=child_env(), stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"writing\n"
    return proc


def test_sweep_removes_only_dead_writers_old_temporaries(tmp_path: Path) -> None:
    """A SIGKILLed writer's old .part goes; a live writer's old .part and a fresh one stay."""
    store = LocalStore(tmp_path / "store")
    killed = _start_writer(store.root)
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    [dead] = list((store.root / "tmp").iterdir())
    live = _start_writer(store.root)
    try:
        [live_part] = [p for p in (store.root / "tmp").iterdir() if p != dead]
        fresh = store.root / "tmp" / "fresh.part"
        fresh.write_bytes(b"x")
        for p in (dead, live_part):
            _age(p, 7200)
        assert store.sweep_temporaries() == 1
        assert not dead.exists() and live_part.exists() and fresh.exists()
    finally:
        live.kill()
        live.wait()


def test_gc_apply_sweeps_dead_writers_temporaries(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`gc run --apply` ends by removing an hours-old .part nobody holds."""
    store = LocalStore(tmp_path / "store")
    stale = store.root / "tmp" / "0123.part"
    stale.write_bytes(b"half an artifact")
    _age(stale, 7200)
    monkeypatch.delenv("S3SPILL_SESSION", raising=False)
    code = main(["--store", store.url, "gc", "run", "--all", "--apply", "--no-probe"])
    capsys.readouterr()
    assert code == 0 and not stale.exists()


def _damage_trailer(path: Path, trailer: bytes) -> None:
    raw = path.read_bytes()
    length, magic = struct.unpack(">Q8s", raw[-16:])
    body = raw[: len(raw) - 16 - length]
    path.write_bytes(body + trailer + struct.pack(">Q8s", len(trailer), magic))


@pytest.mark.parametrize("trailer", [
    b"{not json", b"\xff\xfe", b"[1, 2]", json.dumps({"etag": '"e"', "size": 3}).encode(),
    json.dumps({"etag": '"e"', "size": 10**9, "sha256": "0", "last_modified": "2020-01-01T00:00:00",
                "metadata": {}}).encode(),
])
def test_a_damaged_trailer_is_an_integrity_error(trailer: bytes, tmp_path: Path) -> None:
    """Unparseable JSON, missing fields or an impossible size: IntegrityError, never KeyError."""
    store = LocalStore(tmp_path / "store")
    store.put_if_absent("k", b"abc")
    _damage_trailer(store.root / "objects" / "k", trailer)
    for op in (lambda: store.head("k"), lambda: store.get("k")):
        with pytest.raises(IntegrityError):
            op()
    assert list(store.list()) == []


def test_read_of_an_artifact_with_a_damaged_trailer_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    """`s3spill read` on an artifact whose trailer is garbage: exit 5, one line, nothing on stdout."""
    store = LocalStore(tmp_path / "store")
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"line\n" * 100)))
    base = ["--store", store.url, "--session", "s"]
    assert main([*base, "spill"]) == 0
    sid = capsysbinary.readouterr().out.splitlines()[0].decode()
    [artifact] = [p for p in (store.root / "objects").rglob("*") if p.is_file() and "/artifacts/" in
                  str(p) and not p.name.endswith(".idx")]
    _damage_trailer(artifact, b"{garbage")
    code = main([*base, "read", sid])
    out, err = capsysbinary.readouterr()
    assert code == 5 and out == b"" and err.decode().startswith("s3spill: IntegrityError")
    assert err.count(b"\n") == 1
