"""The web view in headless Chromium: the list, a 50 MB artifact paged to its middle, search,
a live output growing, a GC report, keyboard navigation, labels, and no planted secret anywhere."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from tests.browser.conftest import MIDDLE, Site
from tests.usage.conftest import SECRET

SHOTS = os.environ.get("S3SPILL_UI_SCREENSHOTS")
VISITED: list[str] = []


def _visit(browser: Any, url: str, shot: str | None = None) -> str:
    browser.get(url)
    return _check(browser, shot)


def _submit(browser: Any, field_id: str, text: str, url_part: str) -> None:
    """Type into a labelled field, press Enter, and wait for the next page (not the old one)."""
    browser.find_element(By.ID, field_id).send_keys(text + Keys.ENTER)
    WebDriverWait(browser, 20).until(expected_conditions.url_contains(url_part))


def _check(browser: Any, shot: str | None = None) -> str:
    html: str = browser.page_source
    VISITED.append(browser.current_url)
    assert SECRET not in html, browser.current_url
    assert "Traceback" not in html
    if SHOTS and shot:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(Path(SHOTS) / f"ui-{shot}.png"))
    return html


def test_the_session_list_opens_a_session(browser: Any, site: Site) -> None:
    """The list names the session; following its link shows the timeline with shown text."""
    _visit(browser, site.url + "/", "sessions")
    assert browser.find_element(By.TAG_NAME, "h1").text == "Sessions"
    browser.find_element(By.LINK_TEXT, site.shash).click()
    html = _check(browser, "session")
    assert "spill (stored)" in html and "What the model was shown" in html
    assert "[redacted:aws-key]" in html


def test_a_50_mb_artifact_is_paged_to_its_middle(browser: Any, site: Site) -> None:
    """Jump to the middle line by the labelled form: one page, the middle marker on it."""
    _visit(browser, f"{site.url}/a/{site.big_source_id}")
    size = browser.find_element(By.TAG_NAME, "main").text
    assert "lines 1-" in size
    middle = site.big_lines // 2 + 1
    started = time.monotonic()
    _submit(browser, "line", str(middle), f"line={middle}")
    page = browser.find_element(By.ID, "page").text
    elapsed = time.monotonic() - started
    _check(browser, "artifact-middle")
    assert MIDDLE in page and f"lines {middle}-" in page
    assert len(browser.page_source) < 2_000_000  # a page, not 50 MB
    assert elapsed < 10


def test_search_finds_the_marker_and_links_to_its_line(browser: Any, site: Site) -> None:
    """The search box (RE2) lists the match with a link that opens its line."""
    _visit(browser, f"{site.url}/a/{site.big_source_id}")
    _submit(browser, "q", MIDDLE, "q=")
    html = _check(browser, "search")
    assert "1 matching line" in html or "[1 matching" in html or MIDDLE in html
    browser.find_element(By.CSS_SELECTOR, 'a[href^="?line="]').click()
    WebDriverWait(browser, 20).until(expected_conditions.url_contains("line="))
    assert MIDDLE in browser.find_element(By.ID, "page").text


def test_a_live_output_grows_while_it_is_watched(browser: Any, site: Site) -> None:
    """The tail view refreshes itself; the newest tick moves on between two looks."""
    _visit(browser, f"{site.url}/a/{site.live_id}?tail=1", "live")

    def newest() -> int:
        ticks = re.findall(r"\btick (\d+)", browser.find_element(By.ID, "page").text)
        return max((int(t) for t in ticks), default=-1)

    first = newest()
    deadline = time.monotonic() + 20
    while newest() <= first and time.monotonic() < deadline:
        time.sleep(0.5)
    assert newest() > first >= 0
    _check(browser)


def test_the_gc_report_and_purge_records(browser: Any, site: Site) -> None:
    """The kept plan lists statuses with reasons; the purge record names who asked."""
    html = _visit(browser, site.url + "/gc", "gc")
    assert site.plan_id in html and "retained_recent" in html and "Kept and deleted" in html
    html = _visit(browser, site.url + "/purges", "purges")
    assert "browser-test" in html and "erasure request" in html


def test_keyboard_navigation_and_labels(browser: Any, site: Site) -> None:
    """Tab reaches the skip link first and it moves focus to the content; every input has a
    label; the nav is reachable and operable by keyboard alone."""
    _visit(browser, f"{site.url}/a/{site.big_source_id}")
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.TAB)
    focused = browser.switch_to.active_element
    assert focused.text == "Skip to content"
    focused.send_keys(Keys.ENTER)
    WebDriverWait(browser, 5).until(lambda b: b.switch_to.active_element.get_attribute("id") == "main")
    assert browser.switch_to.active_element.get_attribute("id") == "main"
    for field in browser.find_elements(By.CSS_SELECTOR, "input, select"):
        fid = field.get_attribute("id")
        assert fid and browser.find_elements(By.CSS_SELECTOR, f'label[for="{fid}"]'), fid
    _visit(browser, f"{site.url}/gc")
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.TAB)  # the skip link
    browser.switch_to.active_element.send_keys(Keys.TAB)  # the nav's first link
    nav = browser.switch_to.active_element
    assert nav.text == "Sessions"
    nav.send_keys(Keys.ENTER)
    WebDriverWait(browser, 20).until(expected_conditions.url_to_be(site.url + "/"))
    assert browser.find_element(By.TAG_NAME, "h1").text == "Sessions"
    svg = browser.find_element(By.CSS_SELECTOR, "svg[role=img]")
    assert svg.get_attribute("aria-labelledby")


def test_no_visited_page_held_the_planted_secret(browser: Any, site: Site) -> None:
    """Every page this module opened was checked; the timeline of each session too."""
    _visit(browser, f"{site.url}/s/{site.shash}")
    assert len(VISITED) >= 8
