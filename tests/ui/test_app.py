"""The web view over a real local store: every page renders, reads are paged, secrets stay masked."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from s3spill.cli.ui_cmds import _loopback
from s3spill.ui.app import build_app
from s3spill.ui.metrics import ui_metrics
from tests.ui.conftest import SECRET, Populated


@pytest.fixture(scope="module")
def client(populated: Populated) -> TestClient:
    return TestClient(build_app(populated.store, metrics=ui_metrics()))


def _ok(client: TestClient, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, (url, response.text[:300])
    assert SECRET not in response.text
    return response.text


def test_the_session_list_shows_sessions_usage_and_the_chart(client: TestClient,
                                                             populated: Populated) -> None:
    """The list names the session with its counts; the chart has a bar per tool and a text summary."""
    html = _ok(client, "/")
    assert populated.shash in html and "<svg" in html and "build:" in html and "search:" in html


def test_a_timeline_shows_what_the_model_was_shown(client: TestClient, populated: Populated) -> None:
    """Each event of the session, its shown text (masked) and a link to the full output."""
    html = _ok(client, f"/s/{populated.shash}")
    assert "spill (stored)" in html and "read" in html and "grep" in html
    assert f'href="/a/{populated.source_id}' in html and "key=[redacted:aws-key]" in html


def test_an_artifact_is_paged_searched_and_jumped_to_line(client: TestClient, populated: Populated) -> None:
    """A page (never the whole output), a search with links to lines, a jump to line 3001."""
    html = _ok(client, f"/a/{populated.source_id}")
    assert "lines 1-" in html and 'rel="next"' in html and "What the model was shown" in html
    html = _ok(client, f"/a/{populated.source_id}?q=ERROR")
    assert "link failed" in html and re.search(r'href="\?line=\d+"', html)
    html = _ok(client, f"/a/{populated.source_id}?line=3001")
    assert "lines 3001-" in html


def test_gc_plans_and_purge_records_are_listed(client: TestClient, populated: Populated) -> None:
    """The kept plan with every entry's status and reason; the purge's audit record."""
    html = _ok(client, "/gc")
    assert populated.plan_id in html and "retained_recent" in html and "usage_log" in html
    html = _ok(client, "/purges")
    assert populated.purged in html and "ui-test" in html and "user request" in html


def test_a_bad_locator_is_an_error_on_the_page_not_a_crash(client: TestClient, populated: Populated) -> None:
    """A source id of no existing artifact is shown as one error line."""
    sid = populated.source_id[:-16] + "0" * 16
    html = _ok(client, f"/a/{sid}")
    assert 'role="alert"' in html


def test_the_token_gate_answers_401_then_403_then_200(populated: Populated) -> None:
    """Without a token 401 with WWW-Authenticate, with a wrong one 403, with the right one 200."""
    client = TestClient(build_app(populated.store, token="s3cr3t-token"))  # noqa: S106 - a test token
    missing = client.get("/")
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Bearer")
    assert client.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 403
    assert client.get("/gc", headers={"Authorization": "Bearer s3cr3t-token"}).status_code == 200


def test_only_loopback_binds_go_without_a_token() -> None:
    """127.0.0.1, ::1 and localhost are loopback; 0.0.0.0 and a LAN address are not."""
    assert _loopback("127.0.0.1") and _loopback("::1") and _loopback("localhost")
    assert not _loopback("0.0.0.0") and not _loopback("192.168.1.5")


def test_metrics_are_exposed_in_the_prometheus_format(client: TestClient) -> None:
    """/metrics carries the tool-call counters the recorder fed."""
    text = _ok(client, "/metrics")
    assert "s3spill_tool_calls_total" in text


def test_binary_and_json_outputs_are_shown_by_kind(client: TestClient, populated: Populated) -> None:
    """A binary output pages as a hexdump, a JSON document by element: the reader the model has."""
    from s3spill.keys import HashedSession
    from s3spill.spill.spiller import Spiller

    spiller = Spiller(populated.store, HashedSession(populated.shash), journal=None)
    blob = spiller.externalize(bytes(range(256)) * 2000, "dump")
    doc = spiller.externalize('{"items": [' + ",".join(f'{{"n": {i}}}' for i in range(20_000)) + "]}", "api")
    assert blob.artifact is not None and doc.artifact is not None
    html = _ok(client, f"/a/{blob.artifact.source_id}")
    assert "binary" in html and "00000000" in html
    html = _ok(client, f"/a/{doc.artifact.source_id}?path=/items")
    assert 'JSON at path="/items"'.replace('"', "&#34;") in html and "[0] {&#34;n&#34;:0}" in html
