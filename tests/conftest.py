"""Shared fixtures: every backend behind one ``store`` fixture.

``store`` is parametrised over the backends so a test written once runs against each:
the local directory, and the S3 backend on in-process moto (``mock_aws``, fast).
With ``S3SPILL_CONFORMANCE_ENDPOINT`` set, ``store`` and ``http_s3_store`` also run on that
endpoint (see ``tests/store/endpoint.py``); unset, nothing changes.
``server_store`` is the S3 backend over real HTTP against the session's ``moto_server``
(an :class:`~s3spill.testing.EmbeddedS3` serving one request at a time), for
concurrency, multi-process and HTTP-level fault tests; each test gets its own prefix.
Use ``local_store`` only for behaviour that is local by nature.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import boto3.session
import pytest
from hypothesis import settings as hypothesis_settings

from s3spill.config import MiB, TransferConfig
from s3spill.store import ObjectStore
from s3spill.store.local import LocalStore
from s3spill.store.s3.store import S3Store, new_session
from s3spill.testing import EmbeddedS3
from tests.examples import PROFILE
from tests.store.endpoint import ENDPOINT_PARAMS, endpoint_env, endpoint_store

# Bytecode is written even under PYTHONDONTWRITEBYTECODE (to the gitignored __pycache__
# folders, where Python writes it by default): without it each worker compiles every test
# module again for its assertion rewriting and each of the suite's hundreds of child
# interpreters compiles the s3spill modules it imports again (~0.1 s of CPU per CLI child).
# Set here, before the xdist workers start, so that they and every child inherit it.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

# Hypothesis profiles, loaded before any test module builds its settings (tests/examples.py):
# ``suite`` for the README's command, ``thorough`` (S3SPILL_HYPOTHESIS_PROFILE=thorough) for
# .ci/run's step after it. A test without a count of its own gets Hypothesis's 100 examples in
# both; a costly one names both of its counts with ``examples(suite=..., thorough=...)``.
hypothesis_settings.register_profile("suite", max_examples=100)
hypothesis_settings.register_profile("thorough", max_examples=100)
hypothesis_settings.load_profile(PROFILE)

BACKENDS = ["local", "moto", *ENDPOINT_PARAMS]
TEST_BUCKET = "s3spill-test"
VERSIONED_BUCKET = "s3spill-versioned"
#: Small parts and short deadlines so multipart and retry paths run in seconds.
TEST_CONFIG = TransferConfig(
    multipart_threshold=5 * MiB, part_size=5 * MiB, deadline=5.0, backoff_base=0.01,
    backoff_max=0.05, connect_timeout=1.0, read_timeout=10.0,
)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto``: two workers per core. The suite's tests wait on subprocesses, servers and
    sleeps about as long as they compute (one worker per core kept 2 cores 143 % busy), so
    a second worker per core computes while the first waits; PYTEST_XDIST_AUTO_NUM_WORKERS
    still decides when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return 2 * cores


@pytest.fixture(scope="session")
def _moto_session() -> boto3.session.Session:
    """One boto3 session per worker for the ``moto_store`` clients (each test still gets a client
    and a moto of its own): a new session registers botocore's ~130 built-in handlers again,
    ~13 ms of CPU of the ~48 ms a ``moto_store`` cost, for each of the suite's ~235 of them.
    Made after moto is imported, so its built-in handlers include moto's request stubber."""
    import moto  # noqa: F401  (its stubber joins botocore's built-in handlers on import)

    return new_session()


@pytest.fixture
def moto_store(_moto_session: boto3.session.Session) -> Iterator[S3Store]:
    """The S3 backend on in-process moto, under a prefix of a fresh bucket."""
    from moto import mock_aws

    with mock_aws():
        store = S3Store(TEST_BUCKET, "pfx", config=TEST_CONFIG, session=_moto_session)
        store.client.create_bucket(Bucket=TEST_BUCKET)
        yield store
        store.close()


@pytest.fixture(scope="session")
def moto_server() -> Iterator[EmbeddedS3]:
    """One serialized moto server over real HTTP for the whole run."""
    with EmbeddedS3() as s3:
        s3.create_bucket(TEST_BUCKET)
        s3.create_bucket(VERSIONED_BUCKET, versioned=True)
        yield s3


@pytest.fixture(scope="session")
def _server_session(moto_server: EmbeddedS3) -> boto3.session.Session:
    """One boto3 session (the server's throwaway credentials) per worker for the ``server_store``
    clients, as ``_moto_session`` is for ``moto_store``'s: each test still gets a client of its own."""
    return moto_server.session()


@pytest.fixture
def server_store(moto_server: EmbeddedS3, _server_session: boto3.session.Session) -> Iterator[S3Store]:
    """The S3 backend over HTTP against ``moto_server``, under a prefix of its own."""
    # EmbeddedS3.store, but with the worker's session (its store() makes a new one each time).
    store = S3Store(TEST_BUCKET, f"t/{uuid.uuid4().hex}", config=TEST_CONFIG,
                    endpoint_url=moto_server.endpoint_url, session=_server_session)
    yield store
    store.close()


@pytest.fixture
def local_store(tmp_path: Path) -> Iterator[LocalStore]:
    store = LocalStore(tmp_path / "store")
    yield store
    store.close()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    if request.param == "local":
        s: ObjectStore = LocalStore(tmp_path / "store", TEST_CONFIG)
        yield s
        s.close()
    elif request.param == "moto":
        yield request.getfixturevalue("moto_store")
    elif request.param == "endpoint":
        with endpoint_store(TEST_CONFIG) as es:
            yield es
    else:  # pragma: no cover - a new backend must be wired here
        raise AssertionError(request.param)


@pytest.fixture(params=["moto_server", *ENDPOINT_PARAMS])
def http_s3_store(request: pytest.FixtureRequest) -> Iterator[S3Store]:
    """The S3 backend over real HTTP: the serialized moto server, plus the endpoint if set."""
    if request.param == "endpoint":
        with endpoint_store(TEST_CONFIG) as es:
            yield es
    else:
        yield request.getfixturevalue("server_store")


@pytest.fixture
def http_s3_env(request: pytest.FixtureRequest, http_s3_store: S3Store) -> dict[str, str]:
    """The AWS environment a child process needs to reach ``http_s3_store``'s server."""
    if request.node.callspec.params["http_s3_store"] == "endpoint":
        return endpoint_env()
    moto_server: EmbeddedS3 = request.getfixturevalue("moto_server")
    return moto_server.env()


@pytest.fixture(params=["local", "moto_server"])
def race_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ObjectStore]:
    """A backend whose conditional checks are atomic, for tests that race threads.

    In-process moto checks If-None-Match/If-Match non-atomically, so a thread race there
    tests the emulator, not our code; the serialized server answers one request at a time.
    """
    if request.param == "local":
        s: ObjectStore = LocalStore(tmp_path / "store", TEST_CONFIG)
        yield s
        s.close()
    else:
        yield request.getfixturevalue("server_store")


#: ``refuse(why, (owner, "name"), ...)``: see the ``refuse`` fixture.
Refuse = Callable[..., None]


@pytest.fixture
def refuse(monkeypatch: pytest.MonkeyPatch) -> Refuse:
    """``refuse(why, (owner, "name"), ...)``: calling any of the named functions fails the
    test with ``why`` (a path that must not be taken, instead of a mock that answers)."""

    def patch(why: str, *targets: tuple[object, str]) -> None:
        def refused(*_: object, **__: object) -> None:
            raise AssertionError(why)

        for owner, name in targets:
            monkeypatch.setattr(owner, name, refused)

    return patch


#: The variable a test's children inherit (down to detached supervisors and their commands),
#: so that its teardown finds what outlived it: see the ``reaper`` fixture.
REAP_MARK = "TESTS_REAP_MARK"


def kill_marked(mark: str) -> list[int]:
    """SIGKILL every process of ours whose environment carries ``REAP_MARK=mark``, with its
    process group (a background run's supervisor and its command each lead one); a process
    in this worker's own group is killed alone. Returns the pids found."""
    needle, own_group = f"{REAP_MARK}={mark}".encode(), os.getpgid(0)
    found: list[int] = []
    if not os.path.isdir("/proc"):  # not Linux: nothing to find this way
        return found
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError), open(f"/proc/{entry.name}/environ", "rb") as fh:
            if needle in fh.read().split(b"\0"):
                found.append(int(entry.name))
    for pid in found:
        with contextlib.suppress(ProcessLookupError):
            group = os.getpgid(pid)
            if group == own_group:
                os.kill(pid, signal.SIGKILL)
            else:
                os.killpg(group, signal.SIGKILL)
    return found


@pytest.fixture
def reaper() -> Iterator[dict[str, str]]:
    """``{REAP_MARK: <fresh mark>}`` to put in the environment of the processes a test starts;
    at teardown every process still carrying it is killed with its group, so a failed or
    interrupted test leaves no background supervisor or command running (a passing one has
    stopped them itself). The mark is not set in this process's environment: a session
    fixture started meanwhile (the moto server) must not inherit it."""
    mark = uuid.uuid4().hex
    yield {REAP_MARK: mark}
    kill_marked(mark)
