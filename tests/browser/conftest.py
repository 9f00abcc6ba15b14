"""The web view in a real browser: headless Chromium + chromedriver (Debian packages) via Selenium.

Collected only with ``S3SPILL_BROWSER_TESTS=1`` — ``.ci/run`` runs them as their own step
after the main suite, once it has installed ``chromium`` and ``chromium-driver`` — so the
default suite neither needs a browser nor reports skips for one.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("S3SPILL_BROWSER_TESTS") != "1":
    collect_ignore_glob = ["test_*.py"]

MiB = 1024 * 1024
#: The middle line of the 50 MB artifact carries this marker.
MIDDLE = "MIDDLE-OF-THE-FIFTY-MEGABYTES"


@dataclass
class Site:
    url: str
    store: Any
    shash: str
    big_source_id: str
    big_lines: int
    live_id: str
    plan_id: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _populate(root: Path) -> tuple[Any, str, str, int, str, str, Any]:
    from s3spill import keys
    from s3spill.config import LiveConfig
    from s3spill.fleet.purge import purge_session
    from s3spill.gc.models import CleanupScope
    from s3spill.gc.plan import plan_cleanup
    from s3spill.gc.planfile import save_plan_to_store
    from s3spill.spill.spiller import Spiller
    from s3spill.store.local import LocalStore
    from s3spill.usage.recorder import UsageRecorder
    from tests.usage.conftest import SESSION, scripted_run

    store = LocalStore(root)
    rec = UsageRecorder(store, batch=False)
    scripted_run(store, rec, calls=24)
    lines = 50 * MiB // 52
    half = lines // 2
    body = "".join(f"{n:>10} build log line with some padding text...\n" for n in range(half))
    body += f"{half:>10} {MIDDLE}\n"
    body += "".join(f"{n:>10} build log line with some padding text...\n" for n in range(half + 1, lines))
    spiller = Spiller(store, SESSION, usage=rec)
    big = spiller.externalize(body, "build")
    assert big.artifact is not None
    del body
    ticker = "import time\nfor i in range(600):\n print(f'tick {i}', flush=True); time.sleep(0.2)"
    live = spiller.start([sys.executable, "-u", "-c", ticker], "bash",
                         config=LiveConfig(segment_interval=0.3))
    scripted_run(store, rec, session="purged-session", calls=4)
    purge_session(store, "purged-session", requested_by="browser-test", reason="erasure request",
                  confirm=True)
    plan = plan_cleanup(store, CleanupScope(), out=root.parent / "plan.jsonl")
    save_plan_to_store(store, plan)
    return (store, keys.session_hash(SESSION), big.artifact.source_id, big.artifact.line_count,
            live.source_id, plan.plan_id, live)


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    """The view served by uvicorn on a free loopback port, over a populated local store."""
    import uvicorn

    from s3spill.ui.app import build_app
    from s3spill.ui.metrics import ui_metrics

    root = tmp_path_factory.mktemp("ui") / "store"
    store, shash, big, big_lines, live_id, plan_id, live = _populate(root)
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(build_app(store, metrics=ui_metrics()), host="127.0.0.1",
                                           port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.started
    yield Site(f"http://127.0.0.1:{port}", store, shash, big, big_lines, live_id, plan_id)
    live.stop()
    server.should_exit = True
    thread.join(10)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium driven by the distribution's chromedriver."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("S3SPILL_CHROMIUM", "/usr/bin/chromium")
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000",
                "--disable-gpu"):
        options.add_argument(arg)
    service = Service(os.environ.get("S3SPILL_CHROMEDRIVER", "/usr/bin/chromedriver"))
    driver = webdriver.Chrome(service=service, options=options)
    driver.implicitly_wait(2)
    yield driver
    driver.quit()
