"""Ordinary build logs without a single secret, generated: the detector's false-positive corpus.

The lines imitate what CI jobs print (pip with hashes, npm, cargo, go, gradle, docker
build, pytest, git, a shell's ``env``), with the high-entropy but public strings that
trip naive detectors: commit ids, image digests, go.sum and npm integrity hashes, UUIDs,
request ids. Deterministic for a seed, so a test and a benchmark see the same text.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

_ENV = [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/home/runner", "SHELL=/bin/bash", "TERM=xterm-256color", "LANG=C.UTF-8",
    "PWD=/home/runner/work/project/project", "OLDPWD=/home/runner",
    "JAVA_HOME=/usr/lib/jvm/temurin-17-jdk-amd64", "GOPATH=/home/runner/go",
    "GITHUB_REPOSITORY=acme/widgets", "GITHUB_REF=refs/heads/main", "CI=true",
    "RUNNER_OS=Linux", "HOSTNAME=fv-az123-456", "LS_COLORS=rs=0:di=01;34:ln=01;36:mi=00:pi=40;33",
    "PYTHONUNBUFFERED=1", "NODE_OPTIONS=--max-old-space-size=4096",
]


def _hex(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def _b64(rng: random.Random, n: int) -> str:
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    return "".join(rng.choice(alphabet) for _ in range(n))


def _uuid(rng: random.Random) -> str:
    return f"{_hex(rng, 8)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 4)}-{_hex(rng, 12)}"


#: One maker per line kind, in turn: (rng, line index, a source path) -> the line.
_KINDS: tuple[Callable[[random.Random, int, str], str], ...] = (
    lambda rng, i, mod: (f"Collecting package{i % 300}==1.{i % 13}.{i % 7} (from -r requirements.txt"
                         f" (line {i % 40})) --hash=sha256:{_hex(rng, 64)}"),
    lambda rng, i, mod: f"#{i % 30} [build {i % 9}/12] RUN pip install -r requirements.txt",
    lambda rng, i, mod: f"#{i % 30} writing image sha256:{_hex(rng, 64)} done",
    lambda rng, i, mod: f"   Compiling crate{i % 200} v0.{i % 20}.{i % 5} (/home/runner/work/project/{mod})",
    lambda rng, i, mod: f"go: downloading github.com/acme/lib{i % 50} v1.{i % 9}.0",
    lambda rng, i, mod: f"github.com/acme/lib{i % 50} v1.{i % 9}.0 h1:{_b64(rng, 43)}=",
    lambda rng, i, mod: f'    "integrity": "sha512-{_b64(rng, 86)}==",',
    lambda rng, i, mod: f"tests/test_mod{i % 60}.py::test_case_{i} PASSED{' ' * 34}[{i % 100:3d}%]",
    lambda rng, i, mod: f"commit {_hex(rng, 40)}\nAuthor: Dev {i % 9} <dev{i % 9}@example.com>",
    lambda rng, i, mod: f"> Task :module{i % 12}:compileJava UP-TO-DATE",
    lambda rng, i, mod: (f"{mod}.c:{i % 900}:{i % 80}: warning: unused variable 'tmp{i % 10}'"
                         " [-Wunused-variable]"),
    lambda rng, i, mod: (f"2026-12-01T09:{i % 60:02d}:{i % 60:02d}Z INFO request_id={_uuid(rng)} status=200"
                         f" latency_ms={i % 500}"),
    lambda rng, i, mod: (f"npm http fetch GET 200 https://registry.npmjs.org/pkg{i % 400} {i % 90}ms"
                         " (cache revalidated)"),
    lambda rng, i, mod: _ENV[i % len(_ENV)],
    lambda rng, i, mod: (f"Downloading https://files.pythonhosted.org/packages/{_hex(rng, 2)}/{_hex(rng, 2)}/"
                         f"{_hex(rng, 60)}/pkg-1.0.tar.gz"),
    lambda rng, i, mod: f"Successfully tagged registry.example.com/acme/app:{_hex(rng, 12)}",
    lambda rng, i, mod: f"ETag: \"{_hex(rng, 32)}\"  x-amz-request-id: {_hex(rng, 16).upper()}",
    lambda rng, i, mod: f"[{i}/{i + 40}] Linking CXX executable bin/tool{i % 30}",
    lambda rng, i, mod: (f"FAILED tests/test_mod{i % 60}.py::test_case_{i} - AssertionError:"
                         f" assert {i} == {i + 1}"),
    lambda rng, i, mod: f"   {i % 7} passed, {i % 3} skipped, {i % 2} warnings in {i % 50}.{i % 100:02d}s",
)


def _line(rng: random.Random, i: int) -> str:
    mod = f"src/{rng.choice(['core', 'net', 'ui', 'db'])}/{rng.choice(['main', 'util', 'io'])}{i % 97}"
    return _KINDS[i % len(_KINDS)](rng, i, mod)


def build_log_lines(seed: int = 7) -> Iterator[str]:
    """An endless, deterministic stream of ordinary CI log lines."""
    rng = random.Random(seed)
    i = 0
    while True:
        yield _line(rng, i)
        i += 1


def build_log(n_bytes: int, seed: int = 7) -> bytes:
    """About ``n_bytes`` of ordinary CI log (whole lines)."""
    out: list[str] = []
    size = 0
    for line in build_log_lines(seed):
        out.append(line)
        size += len(line) + 1
        if size >= n_bytes:
            break
    return ("\n".join(out) + "\n").encode()
