"""End to end: a real `streamlit run` server driven by Playwright in headless Debian Chromium."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import engine
from app import data

from .conftest import oracle_answers

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def chromium() -> str:
    """Debian's Chromium; its absence fails the test (the suite must not silently skip it)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: the browser test needs Debian's chromium "
                    "(`sudo apt-get install -y chromium`, or `make chromium`).")
    return CHROMIUM


@pytest.fixture
def server(tmp_path):
    """The dashboard on a free port (no database: the built-in stream); stopped afterwards."""
    port = free_port()
    log = open(tmp_path / "streamlit.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app/streamlit_app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
         "--browser.gatherUsageStats", "false", "--", "--db", str(tmp_path / "absent.duckdb")],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                    if response.read() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not start:\n{(tmp_path / 'streamlit.log').read_text()}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def test_step_in_the_browser_shows_the_oracle_answer(chromium, server):
    from playwright.sync_api import expect, sync_playwright

    query = engine.Query(weights=[1.0, 1.0, 1.0], k=10, window=1000, slide=50)
    slides = query.windows_per_object + 1
    answer = oracle_answers(data.synthetic_uniform().arrays, query, slides)[-1]

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(server)
            step = page.get_by_role("button", name="Step")
            expect(step).to_be_enabled(timeout=30_000)
            step.click()
            expect(page.get_by_text(f"Slide {slides} ·")).to_be_visible(timeout=30_000)
            tables = page.get_by_test_id("stTable")
            expect(tables).to_have_count(2)
            for i in range(2):
                rows = tables.nth(i).locator("tbody tr")
                expect(rows).to_have_count(query.k)
                cells = [rows.nth(r).locator("td").all_inner_texts() for r in range(query.k)]
                assert [int(c[1]) for c in cells] == answer.ids.tolist()
                assert [float(c[2]) for c in cells] == pytest.approx(answer.scores.tolist(), rel=1e-5)
                assert {c[3] for c in cells} == {"✓"}
        finally:
            browser.close()
