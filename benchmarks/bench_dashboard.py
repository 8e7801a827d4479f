"""Measure the Live page as a user feels it, in a real browser: knob-to-table latency and playback rate.

``python -m benchmarks.bench_dashboard --db var/topk.duckdb [--dataset spy] [--seconds 10]`` starts
``streamlit run`` on a free port, opens the Live page in headless Chromium with every
registered single-stream algorithm (six on main today), and reports

- ``knob_to_table_s``: from typing a new ``k`` (Enter) until the comparison table shows ``k``
  rows, median over a few changes;
- ``playback_objects_per_s``: trace rows replayed per second of wall-clock time while playing
  at the highest speed (one refresh per second), from the page's own status line.

Exposes ``COLUMNS`` and ``run(quick)`` like every ``benchmarks`` module, so ``make bench``
can list it. A measurement, never a test assertion.
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

import engine

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
COLUMNS = ["dataset", "algorithms", "at", "knob_to_table_s", "knob_server_cpu_s", "playback_objects_per_s",
           "playback_slides_per_s", "playback_reached_the_end", "playback_server_cpu_per_wall_s", "load_average"]
SERVER = re.compile(r"Computed in ([0-9.]+) s on the server")
STATUS = re.compile(r"Slide ([0-9,]+) ·.* ([0-9,]+) of ([0-9,]+) rows replayed")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(db: Path, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app/streamlit_app.py", "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1", "--server.fileWatcherType", "none",
         "--browser.gatherUsageStats", "false", "--", "--db", str(db)],
        cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.read() == b"ok":
                    return proc, url
        except OSError:
            time.sleep(0.2)
    proc.terminate()
    raise RuntimeError(f"streamlit did not start:\n{log.read_text()}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``), to tell work from waiting on a busy machine."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status(page) -> tuple[int, int]:
    """``(slide, rows replayed)`` from the Live page's status line."""
    text = page.get_by_text(STATUS).first.inner_text()
    match = STATUS.search(text)
    return int(match.group(1).replace(",", "")), int(match.group(2).replace(",", ""))


def measure(db: Path, dataset: str, seconds: float, changes: int = 4, algorithms: list[str] | None = None,
            at: int | None = None) -> dict:
    from playwright.sync_api import expect, sync_playwright

    algorithms = algorithms or [info.name for info in engine.available() if info.stream == "single"]
    with tempfile.TemporaryDirectory() as tmp:
        proc, url = start_server(db, Path(tmp) / "streamlit.log")
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox",
                                                                                     "--disable-gpu"])
                page = browser.new_page(viewport={"width": 1400, "height": 1600})
                page.goto(f"{url}/?ds={quote(dataset)}&alg={quote(','.join(algorithms))}"
                          + (f"&at={at}" if at is not None else ""))
                rows = page.get_by_test_id("stTable").first.locator("tbody tr")
                expect(rows).to_have_count(10, timeout=60_000)
                k_input = page.get_by_label("k", exact=True)
                latencies, server = [], []
                for k in [7, 12, 5, 10][:changes]:
                    page.wait_for_timeout(1_000)
                    cpu = cpu_seconds(proc.pid)
                    start = time.perf_counter()
                    k_input.fill(str(k))
                    k_input.press("Enter")
                    expect(rows).to_have_count(k, timeout=60_000)
                    latencies.append(time.perf_counter() - start)
                    page.wait_for_timeout(1_000)  # let the rest of the page arrive before the next change
                    server.append(cpu_seconds(proc.pid) - cpu)
                # Playback at the top speed: the tick budget, not the speed, sets the pace.
                page.get_by_role("slider", name="Speed (slides per second)").focus()
                page.keyboard.press("End")
                page.wait_for_timeout(1_500)
                page.get_by_role("button", name="Play").click()
                expect(page.get_by_role("button", name="Pause")).to_be_visible(timeout=10_000)
                page.wait_for_timeout(2_000)  # the first tick
                slide0, rows0 = status(page)
                cpu = cpu_seconds(proc.pid)
                start = time.perf_counter()
                page.wait_for_timeout(seconds * 1000)
                slide1, rows1 = status(page)
                elapsed = time.perf_counter() - start
                play_cpu = cpu_seconds(proc.pid) - cpu
                pause = page.get_by_role("button", name="Pause")
                if pause.count() and pause.is_enabled():  # disabled once the playback reached the end
                    pause.click()
                ended = page.get_by_text("end of the trace").count() > 0
                browser.close()
        finally:
            proc.terminate()
            proc.wait(timeout=10)
    return {"dataset": dataset, "algorithms": ",".join(algorithms), "at": at,
            "knob_to_table_s": round(statistics.median(latencies), 3),
            "knob_server_cpu_s": round(statistics.median(server), 3),
            "playback_server_cpu_per_wall_s": round(play_cpu / elapsed, 2),
            "load_average": os.getloadavg()[0],
            "playback_objects_per_s": round((rows1 - rows0) / elapsed),
            "playback_reached_the_end": ended,
            "playback_slides_per_s": round((slide1 - slide0) / elapsed, 1)}


def run(quick: bool) -> list[dict]:
    """The benchmark protocol: one row, on ``$TOPK_DB`` (default ``var/topk.duckdb``) dataset ``spy``."""
    db = Path(os.environ.get("TOPK_DB", "var/topk.duckdb"))
    return [measure(db, "spy", 5 if quick else 10, 2 if quick else 4)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="var/topk.duckdb")
    parser.add_argument("--dataset", default="spy")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--algorithms", help="comma separated (default: every single-stream algorithm)")
    parser.add_argument("--at", type=int, help="the slide to open the page at (default: the first window)")
    args = parser.parse_args(argv)
    result = measure(Path(args.db).resolve(), args.dataset, args.seconds,
                     algorithms=args.algorithms.split(",") if args.algorithms else None, at=args.at)
    for key in COLUMNS:
        print(f"{key:>24}: {result[key]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
