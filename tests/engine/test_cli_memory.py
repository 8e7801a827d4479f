"""``run-many``'s shared executor answers every slide boundary of a gap in ``t`` at once: with
``--max-slides`` raised, a gap of 200,000,000 boundaries was ended by the system's out-of-memory
killer (exit 137, no message).  It is refused when the boundaries would need more memory than is
available, naming the row, the boundaries and the memory, before any output."""

from __future__ import annotations

import json
from pathlib import Path

from engine import cli

GAP = 10_000
"""Boundaries the gap below passes (one time query sliding by 1)."""


def workload(tmp_path: Path) -> list[str]:
    source = tmp_path / "data.csv"
    source.write_text(f"id,t,x\n1,0,1.0\n2,1,2.0\n3,{GAP + 1},0.5\n")
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps([{"weights": [1.0], "k": 1, "window": 2, "slide": 1, "kind": "time"}]))
    return ["run-many", "--queries", str(queries), "--input", str(source), "--output", str(tmp_path / "out.jsonl"),
            "--max-slides", "1000000000"]


def test_a_gap_needing_more_memory_than_available_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "available_memory", lambda: (GAP - 1) * cli.GAP_ANSWER_BYTES)
    status = cli.main(workload(tmp_path))
    message = capsys.readouterr().err
    assert status == cli.EXIT_ERROR
    assert message == (f"error: {tmp_path / 'data.csv'} line 4: column t jumps from 1 to {GAP + 1} here: the shared "
                       f"executor would answer the {GAP:,} slide boundaries of the 1 time queries in between at "
                       "once, about 0.0 GB, more than the 0.0 GB of memory available; use larger slides or "
                       "--algorithm NAME (one instance per query, answers streamed)\n")
    assert not (tmp_path / "out.jsonl").exists()


def test_a_gap_the_memory_holds_is_answered(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "available_memory", lambda: GAP * cli.GAP_ANSWER_BYTES)
    assert cli.main(workload(tmp_path)) == 0, capsys.readouterr().err
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == GAP + 1


def test_without_a_memory_figure_only_max_slides_bounds_the_gap(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "available_memory", lambda: None)
    assert cli.main(workload(tmp_path)) == 0, capsys.readouterr().err


def test_the_memory_available_is_read_on_linux():
    memory = cli.available_memory()
    assert memory is not None and memory > 0
