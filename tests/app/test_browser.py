"""End to end: a real `streamlit run` server driven by Playwright in headless Debian Chromium."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import engine
from app import data

from app import bench_view

from .conftest import DEMO, DEMO_ROWS, DEMO_RUN, RUN_QUERY, oracle_answers

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
def server(tmp_path, filled_db):
    """The dashboard on a free port over the test database (dataset ``demo``, run ``run-1``)."""
    yield from serve(filled_db, tmp_path)


def serve(db: Path, tmp_path: Path):
    """Run ``streamlit run`` on a free port over ``db``; yields its URL, stops it afterwards."""
    port = free_port()
    log = open(tmp_path / "streamlit.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app/streamlit_app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
         "--browser.gatherUsageStats", "false", "--", "--db", str(db)],
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


SCREENSHOTS = ROOT / "var" / "screenshots"


def screenshot(page, tmp_path: Path, name: str) -> Path:
    """The page as the user sees it, into the test's folder and ``var/screenshots/`` (gitignored)."""
    path = tmp_path / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, SCREENSHOTS / path.name)
    return path


def shown_slide(page) -> int:
    text = page.get_by_text(re.compile(r"^Slide [0-9,]+ ·")).first.inner_text()
    return int(text.split(" ·")[0].removeprefix("Slide ").replace(",", ""))


def table_ids(page, column: int, rows: int) -> list[int]:
    """The ids in ``column`` of the page's first table, once it shows ``rows`` rows (a caption of
    the same run can reach the browser before the table does)."""
    from playwright.sync_api import expect

    cells = page.get_by_test_id("stTable").first.locator("tbody tr")
    expect(cells).to_have_count(rows, timeout=30_000)
    return [int(cells.nth(r).locator("td").nth(column).inner_text()) for r in range(rows)]


def delivered_rows(page) -> int:
    """The Watch list's position: the rows its progress bar says were delivered."""
    text = page.get_by_text(re.compile(r"^[0-9,]+ of [0-9,]+ rows delivered")).first.inner_text()
    return int(text.split(" of ")[0].replace(",", ""))


HISTORY_LENGTH = "() => window.history.length"
LINK_AT_IS_SHOWN_ROW = """() => {
  const shown = document.body.innerText.match(/([0-9,]+) of [0-9,]+ rows delivered/);
  const at = new URLSearchParams(window.location.search).get("at");
  return shown !== null && at === shown[1].replace(/,/g, "");
}"""
POSITIONS_SEEN = """([pattern, count]) => {
  const shown = document.body.innerText.match(new RegExp(pattern));
  window.positionsSeen = window.positionsSeen || {};
  const seen = window.positionsSeen[pattern] = window.positionsSeen[pattern] || new Set();
  if (shown !== null) seen.add(shown[1]);
  return seen.size >= count;
}"""
"""Whether the page has shown ``count`` different positions (the first group of ``pattern``) since it was
loaded: a playing page shows a new one each tick."""
ROWS_DELIVERED = "([0-9,]+) of [0-9,]+ rows delivered"
SLIDE_SHOWN = "Slide ([0-9,]+) ·"


def test_live_and_runs_in_the_browser(chromium, server, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    query = engine.Query(weights=[1.0, 1.0, 1.0], k=10, window=1000, slide=50)
    slides = query.windows_per_object + 1
    answer = oracle_answers(data.synthetic_uniform().arrays, query, slides)[-1]

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2600})
            page.goto(f"{server}/?ds=synthetic%3A+uniform")  # the URL picks the 20,000-row built-in stream
            step = page.get_by_role("button", name="Step")
            expect(step).to_be_enabled(timeout=30_000)
            step.click()
            expect(page.get_by_text(f"Slide {slides - 1} ·")).to_be_visible(timeout=30_000)
            table = page.get_by_test_id("stTable")
            expect(table).to_have_count(1)
            expect(table.locator("tbody tr")).to_have_count(query.k)
            assert table_ids(page, 1, len(answer.ids)) == answer.ids.tolist()  # exact id column
            mintopk = table.locator("tbody tr td:nth-child(4)").all_inner_texts()  # rank, exact id, score, mintopk
            assert mintopk == ["✓"] * query.k
            assert "stock" not in page.url and "at=20" in page.url

            # Play, then Pause: the slide stops moving within one tick (1 s, 20 slides at the default speed).
            # Playing adds no browser-history entry per tick (at most one, from Play's run).
            history_before = page.evaluate(HISTORY_LENGTH)
            page.get_by_role("button", name="Play").click()
            expect(page.get_by_role("button", name="Pause")).to_be_visible(timeout=20_000)
            page.wait_for_function("() => /Slide (2[3-9]|[3-9][0-9]|[0-9]{3,}) ·/.test(document.body.innerText)",
                                   timeout=40_000)
            page.wait_for_function(POSITIONS_SEEN, arg=[SLIDE_SHOWN, 5], timeout=60_000)  # 4 ticks or more
            assert page.evaluate(HISTORY_LENGTH) - history_before <= 1
            page.get_by_role("button", name="Pause").click()
            expect(page.get_by_role("button", name="Play")).to_be_visible(timeout=20_000)
            paused_at = shown_slide(page)
            page.wait_for_timeout(2_500)
            assert shown_slide(page) - paused_at <= 20
            settled = shown_slide(page)
            page.wait_for_timeout(1_500)
            assert shown_slide(page) == settled
            screenshot(page, tmp_path, "live-paused")

            # k = 5: five rows, still the same position.
            k = page.get_by_label("k", exact=True)
            k.fill("5")
            k.press("Enter")
            expect(page.get_by_test_id("stTable").locator("tbody tr")).to_have_count(5, timeout=30_000)
            assert shown_slide(page) == settled

            # Time windows: lengths that suit the clock, no error, the same table shape.
            page.get_by_test_id("stRadio").get_by_text("time", exact=True).click()
            expect(page).to_have_url(re.compile(r"kind=time"), timeout=30_000)  # the rerun has happened
            expect(page.get_by_role("textbox", name=re.compile(r"^Window"))).to_have_value("1000", timeout=30_000)
            expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
            expect(page.get_by_test_id("stTable").locator("tbody tr")).to_have_count(5, timeout=30_000)
            screenshot(page, tmp_path, "live-time-window")

            # Runs: the run written by the fixtures, scrubbed with the same table.
            page.get_by_role("link", name="Runs").click()
            expect(page.get_by_text("Top-5 at slide")).to_be_visible(timeout=30_000)
            last = len(oracle_answers(data.load_trace(Path(os.environ["TOPK_DB"]), "demo").arrays, RUN_QUERY)) - 1
            expect(page.get_by_text(f"Top-5 at slide {last}")).to_be_visible()
            expect(page.get_by_test_id("stTable").locator("tbody tr")).to_have_count(RUN_QUERY.k)
            assert "run=run-1" in page.url
            screenshot(page, tmp_path, "runs")
        finally:
            browser.close()


def test_watch_list_playback_leaves_one_back_step_and_pause_writes_the_link(chromium, server, tmp_path):
    """Playback wrote ``at`` into the address on every tick, and the browser keeps each address in its
    history: after a minute of play leaving the page took about 60 Back presses. The link is now written
    when playback pauses, as on the Live page; a link copied then reopens at the paused row."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2000})
            page.goto(f"{server}/watchlist?ds=synthetic%3A+uniform")  # 20,000 rows, played at 1,000 rows/s
            play = page.get_by_role("button", name="Play")
            expect(play).to_be_enabled(timeout=60_000)
            expect(page).to_have_url(re.compile(r"[?&]at=0(&|$)"), timeout=30_000)
            before = page.evaluate(HISTORY_LENGTH)
            play.click()
            expect(page.get_by_role("button", name="Pause")).to_be_visible(timeout=30_000)
            page.wait_for_function(POSITIONS_SEEN, arg=[ROWS_DELIVERED, 9], timeout=90_000)  # 8 ticks
            assert page.evaluate(HISTORY_LENGTH) - before <= 1

            page.get_by_role("button", name="Pause").click()
            expect(page.get_by_role("button", name="Play")).to_be_visible(timeout=30_000)
            page.wait_for_function(LINK_AT_IS_SHOWN_ROW, timeout=30_000)
            paused_at = delivered_rows(page)
            assert paused_at > 0
            screenshot(page, tmp_path, "watchlist-paused")

            shared = browser.new_page(viewport={"width": 1400, "height": 2000})
            shared.goto(page.url)
            expect(shared.get_by_text(f"{paused_at:,} of 20,000 rows delivered")).to_be_visible(timeout=60_000)
            expect(shared.get_by_test_id("stAlertContentWarning")).to_have_count(0)
        finally:
            browser.close()


@pytest.fixture
def pipeline_db(tmp_path) -> Path:
    """A database filled by the real pipelines: a synthetic ingest, then a Spark replay."""
    db, config = tmp_path / "pipeline.duckdb", tmp_path / "replay.json"
    config.write_text(json.dumps({
        "name": "browser", "dataset": "uni", "shards": 2,
        "queries": [{"weights": {"x_0": 1.0, "x_1": 0.5}, "k": 4, "window": 400, "slide": 100, "kind": "count"}],
        "algorithms": [{"name": "oracle"}, {"name": "sap"}, {"name": "sao", "params": {"memory": 40}}]}))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    for command in (["pipelines.ingest", "synthetic:time-u", "--rows", "2000", "--dims", "2", "--name", "uni",
                     "--out", str(tmp_path / "datasets")],
                    ["pipelines.replay", "--config", str(config)]):
        done = subprocess.run([sys.executable, "-m", *command, "--db", str(db)], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{command[0]} failed:\n{done.stdout}\n{done.stderr}"
    return db


def test_runs_page_on_a_run_made_by_the_pipeline(chromium, pipeline_db, tmp_path):
    from playwright.sync_api import expect, sync_playwright

    import duckdb

    with duckdb.connect(str(pipeline_db), read_only=True) as con:
        run_id, = con.execute("SELECT run_id FROM runs WHERE status = 'finished'").fetchone()
        last, = con.execute("SELECT max(slide) FROM answers WHERE algorithm = 'oracle'").fetchone()
    for url in serve(pipeline_db, tmp_path):
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            page.goto(f"{url}/runs?run={run_id}")
            expect(page.get_by_text(f"Top-4 at slide {last}")).to_be_visible(timeout=60_000)
            expect(page.get_by_test_id("stTable").first.locator("tbody tr")).to_have_count(4)
            expect(page.get_by_text("sap").first).to_be_visible()
            screenshot(page, tmp_path, "runs-pipeline")
            browser.close()


def test_a_newcomer_meets_the_demo_its_run_and_the_report(chromium, demo_db, tmp_path):
    """After `make run`: Live and Runs open on the demo, the run link lands on that run and query, and the
    Benchmarks page shows the shipped figures of every family (no placeholder). A screenshot of each page."""
    from playwright.sync_api import expect, sync_playwright

    slides = DEMO_ROWS // DEMO["queries"][0]["slide"]
    first_window = DEMO["queries"][0]["window"] // DEMO["queries"][0]["slide"]
    for url in serve(demo_db, tmp_path):
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page(viewport={"width": 1500, "height": 2400})
                page.goto(url)
                expect(page.get_by_text(f"Slide {first_window - 1} ·")).to_be_visible(timeout=60_000)
                sidebar = page.get_by_test_id("stSidebar")
                expect(sidebar.get_by_role("combobox", name="Dataset", exact=True)).to_have_value("spy")
                for algorithm in DEMO["algorithms"]:
                    expect(sidebar.get_by_test_id("stMultiSelect")).to_contain_text(algorithm["name"])
                assert "ds=spy" in page.url and "alg=oracle%2Cmintopk%2Csap%2Csao" in page.url
                expect(page.get_by_text("Any weights at once: sao against the exact answers")).to_be_visible()
                screenshot(page, tmp_path, "live-demo")

                expect(sidebar.get_by_text(f"A pipeline run replayed this query: {DEMO_RUN}, query #0.")).to_be_visible()
                sidebar.get_by_role("link", name="See its run").click()
                expect(page.get_by_text(f"Top-10 at slide {slides - 1}")).to_be_visible(timeout=60_000)
                expect(page).to_have_url(re.compile(f"run={DEMO_RUN}&query=0"))
                expect(page.get_by_role("combobox", name="Query", exact=True)).to_have_value(re.compile("largest notional"))
                screenshot(page, tmp_path, "runs-demo")

                fresh = browser.new_page(viewport={"width": 1500, "height": 1400})
                fresh.goto(f"{url}/runs")  # a new session: Runs opens on the demo run, not the later taxi run
                expect(fresh.get_by_text(f"Top-10 at slide {slides - 1}")).to_be_visible(timeout=60_000)
                expect(fresh.get_by_role("combobox", name="Run", exact=True)).to_have_value(re.compile(DEMO_RUN))

                fresh.goto(f"{url}/benchmarks")
                for family in bench_view.FAMILIES:
                    expect(fresh.get_by_role("heading", name=family.title)).to_be_visible(timeout=60_000)
                expect(fresh.get_by_text("No benchmark results")).to_have_count(0)
                charts_drawn = fresh.locator("[data-testid='stVegaLiteChart'] canvas, "
                                             "[data-testid='stVegaLiteChart'] svg")
                expect(charts_drawn.nth(11)).to_be_visible(timeout=60_000)  # at least 12, drawn as they come
                fresh.wait_for_timeout(1_000)
                screenshot(fresh, tmp_path, "benchmarks")
            finally:
                browser.close()


def test_hostile_links_a_busy_database_and_a_shared_view_in_the_browser(chromium, server, tmp_path):
    """Links with values no page writes give a warning in the page, never an exception box; a pipeline
    holding the database keeps the view; a link made from a view changed live reopens that view."""
    from playwright.sync_api import expect, sync_playwright

    from .test_live import database_held

    long = "9" * 5000  # more digits than Python's int() reads
    links = [(f"/?ds=demo&k={long}&at={long}&speed={long}&w=%EF%BC%91,1", "is more than 1000: k = 1000 is used"),
             (f"/watchlist?ds=demo&at={long}&q=count:%EF%BC%92:300:60:1,0", "written with the digits 0-9"),
             (f"/runs?run=run-1&query={long}&slide={long}", "(5,000 characters) is not one of run")]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2000})
            for link, note in links:
                page.goto(server + link)
                expect(page.get_by_test_id("stAlertContentWarning").filter(has_text=note)).to_be_visible(timeout=60_000)
                expect(page.get_by_test_id("stException")).to_have_count(0)

            page.goto(f"{server}/?ds=demo&kind=count&window=200&slide=50&k=4&w=0.5,-1")
            expect(page.get_by_text(re.compile(r"^Slide 3 ·"))).to_be_visible(timeout=60_000)
            weight = page.get_by_test_id("stSidebar").get_by_role("slider").first
            weight.focus()
            weight.press("ArrowLeft")  # 0.5 - 0.05: a value a link writes in full (0.45)
            expect(page).to_have_url(re.compile(r"w=0.45%2C-1"), timeout=30_000)
            with database_held(os.environ["TOPK_DB"]):
                page.get_by_role("button", name="Step").click()
                expect(page.get_by_text(re.compile(r"^Slide 4 ·"))).to_be_visible(timeout=30_000)
                expect(page.get_by_text("is held by another process")).to_be_visible()
                expect(page).to_have_url(re.compile(r"ds=demo&.*k=4&.*w=0.45%2C-1&at=4"))
            query = engine.Query(weights=[0.45, -1.0], k=4, window=RUN_QUERY.window, slide=RUN_QUERY.slide)
            answer = oracle_answers(data.load_trace(Path(os.environ["TOPK_DB"]), "demo").arrays, query, 5)[-1]
            assert table_ids(page, 1, len(answer.ids)) == answer.ids.tolist()

            shared = browser.new_page(viewport={"width": 1400, "height": 2000})
            shared.goto(page.url)
            expect(shared.get_by_text(re.compile(r"^Slide 4 ·"))).to_be_visible(timeout=60_000)
            assert table_ids(shared, 1, len(answer.ids)) == answer.ids.tolist() and shared.url == page.url
            expect(shared.get_by_test_id("stAlertContentWarning")).to_have_count(0)
        finally:
            browser.close()



HEAVY_ALGORITHMS = ("oracle", "pretopk", "mintopk", "kskyband", "tma", "sma", "sap-equal", "sap-dynamic", "sap", "sao")
HEAVY_PLAYBACK = f"/?ds=synthetic%3A+uniform&window=200&slide=1&speed=200&alg={','.join(HEAVY_ALGORITHMS)}"
"""Every single-stream algorithm at one slide per answer: a tick's page (ten tiles, ten charts) takes
the browser longer than a second to receive and draw on a loaded two-core machine."""


def test_playback_of_a_heavy_setup_keeps_going_and_keeps_its_session(chromium, server, tmp_path):
    """Ticks requested blindly once a second piled up in the server's send queue for the session; when it
    was full Streamlit dropped the session without closing the websocket, and the page went on showing
    Pause with nothing moving. After 40 s of play the slide still advances and Pause still answers.
    Each tick played one second's worth of slides however long the browser took to draw the last: 7 of
    the 200 slides/s asked; the caption now compares the pace reached with the speed."""
    from playwright.sync_api import expect, sync_playwright

    from engine.warmup import load_kernels

    for name in HEAVY_ALGORITHMS:  # compiled here, before the page's first run
        load_kernels(name, 3)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2600})
            page.goto(server + HEAVY_PLAYBACK)
            play = page.get_by_role("button", name="Play")
            expect(play).to_be_enabled(timeout=60_000)
            play.click()
            expect(page.get_by_role("button", name="Pause")).to_be_visible(timeout=30_000)
            page.wait_for_timeout(40_000)
            after_40_s = shown_slide(page)
            # Each tick processes the slides due since the last one and says how that compares with the speed.
            expect(page.get_by_text(re.compile(r"^Playing at [0-9,]+ slides/s of the 200 asked"))).to_be_visible()
            page.wait_for_function("shown => { const m = document.body.innerText.match(/Slide ([0-9,]+) ·/); "
                                   "return m !== null && Number(m[1].replace(/,/g, '')) > shown; }",
                                   arg=after_40_s, timeout=30_000)
            page.get_by_role("button", name="Pause").click()
            expect(page.get_by_role("button", name="Play")).to_be_visible(timeout=30_000)
            screenshot(page, tmp_path, "live-heavy-paused")
        finally:
            browser.close()


def test_back_and_forward_show_the_view_of_each_address(chromium, server, tmp_path):
    """Back and Forward rerun the page on that history entry's address: the page shows its view (a page
    reading the address only at the session's start showed the last view under every address)."""
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 2000})
            page.goto(f"{server}/?ds=demo&kind=count&window=200&slide=50&k=4&w=0.5,-1")
            expect(page.get_by_text(re.compile(r"^Slide 3 ·"))).to_be_visible(timeout=60_000)
            k = page.get_by_test_id("stSidebar").get_by_label("k", exact=True)
            k.fill("7")
            k.press("Enter")
            expect(page).to_have_url(re.compile(r"&k=7&"), timeout=30_000)
            page.get_by_role("button", name="Step").click()
            expect(page.get_by_text(re.compile(r"^Slide 4 ·"))).to_be_visible(timeout=30_000)
            expect(page).to_have_url(re.compile(r"&at=4"))

            page.go_back()  # before the Step
            expect(page.get_by_text(re.compile(r"^Slide 3 ·"))).to_be_visible(timeout=30_000)
            expect(k).to_have_value("7")
            page.go_back()  # before k = 7
            expect(k).to_have_value("4", timeout=30_000)
            expect(page).to_have_url(re.compile(r"&k=4&.*&at=3"))
            query = engine.Query(weights=[0.5, -1.0], k=4, window=RUN_QUERY.window, slide=RUN_QUERY.slide)
            answer = oracle_answers(data.load_trace(Path(os.environ["TOPK_DB"]), "demo").arrays, query, 4)[-1]
            expect(page.get_by_test_id("stTable").first.locator("tbody tr")).to_have_count(4)
            assert table_ids(page, 1, len(answer.ids)) == answer.ids.tolist()
            page.go_forward()
            page.go_forward()
            expect(page.get_by_text(re.compile(r"^Slide 4 ·"))).to_be_visible(timeout=30_000)
            expect(k).to_have_value("7")
            expect(page.get_by_test_id("stException")).to_have_count(0)
        finally:
            browser.close()
