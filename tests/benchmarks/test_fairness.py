"""Fairness of the benchmark modules: every competitor timed over the same work, none charged
numba's kernel load, none ranked on wrong answers.  Untimed: these tests check what is timed and
compared, never how fast.

* :func:`engine.warmup.load_kernels` must load every kernel a timed case can reach (checked in a
  fresh interpreter per algorithm: kernels loaded earlier in this process would hide a gap);
* each module calls it for every algorithm it times, before timing (a module run alone,
  ``benchmarks.run --only``, must not charge one competitor the cache load: a slide's
  process + topk is tens of microseconds, loading one kernel milliseconds);
* every algorithm of a ``bench_competitors`` case is timed over the same slides;
* an algorithm whose answers differ from the oracle's gets an error row, never a figure.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import engine
from benchmarks import bench_competitors, bench_core, bench_mintopk, bench_multi, bench_sap, common
from benchmarks.common import ROOT, agreement, first_disagreement, uniform_stream

EXACT_SINGLE = [info.name for info in engine.available() if info.exact and info.stream == "single"]

REACH = """
import json, sys
import numpy as np
import pandas as pd
from numba.core.registry import CPUDispatcher
import engine
from benchmarks import workloads
from benchmarks.common import decreasing_stream, uniform_stream
from engine.warmup import load_kernels

def signatures():
    return {(module, name, str(sig)) for module, space in list(sys.modules.items())
            if module.startswith("engine.kernels.") for name, value in vars(space).items()
            if isinstance(value, CPUDispatcher) for sig in value.overloads}

name = sys.argv[1]
load_kernels(name)
before = signatures()

def run(query, data):
    alg = engine.create(name, query)
    for batch in engine.slides(data, query):
        alg.process(batch)
        alg.topk()
        alg.stats()

# the modules' shapes, small: k = 1 .. 100, C_nw = 10 .. 100, uniform and decreasing scores
for n, s, k in ((1_000, 10, 10), (10_000, 100, 100), (1_000, 100, 10), (5_000, 50, 1)):
    query = engine.Query(weights=[1.0], k=k, window=n, slide=s)
    run(query, uniform_stream(3 * n))
    run(query, decreasing_stream(3 * n))
ids, t, x = workloads.stock(True, regular_hours=True)          # time windows (bench_mintopk arrival)
run(engine.Query(weights=[1.0], k=100, window=100_000, slide=10_000, kind="time"), (ids[:20_000], t[:20_000], x[:20_000]))
print(json.dumps(sorted(f"{module}.{kernel}" for module, kernel, _ in signatures() - before)))
"""


@pytest.mark.parametrize("name", EXACT_SINGLE)
def test_load_kernels_loads_every_kernel_a_timed_case_reaches(name):
    """In a fresh interpreter, after ``load_kernels(name)`` no timed shape loads another kernel
    signature (before ``k = 1`` joined the warm-up, SAP's ``offer_slides`` for ``k = 1`` did)."""
    done = subprocess.run([sys.executable, "-c", REACH, name], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


@pytest.fixture
def warmed(monkeypatch):
    """Record every ``load_kernels`` call of the benchmark modules (the real one still runs)."""
    calls = []
    real = common.load_kernels

    def record(name, **params):
        calls.append((name, params))
        real(name, **params)

    for module in (common, bench_competitors, bench_core, bench_mintopk, bench_multi, bench_sap):
        if hasattr(module, "load_kernels"):
            monkeypatch.setattr(module, "load_kernels", record)
    return calls


def small_case(n=1_000, s=100, k=5, slides=12):
    q = engine.Query(weights=[1.0], k=k, window=n, slide=s)
    return q, list(engine.slides(uniform_stream(n + slides * s, seed=4), q)), n // s


def test_competitors_load_kernels_and_time_the_same_slides(warmed):
    q, batches, warmup = small_case()
    found = {name: bench_competitors.measure(name, q, batches, warmup) for name in ("oracle", "mintopk", "sma")}
    assert [name for name, _ in warmed] == ["oracle", "mintopk", "sma"]
    # every algorithm over every slide after the fill: no per-algorithm budget cuts one short
    assert {r["timed_slides"] for r in found.values()} == {len(batches) - warmup}
    assert all(first_disagreement(found["oracle"]["answers"], r["answers"]) is None for r in found.values())


def test_common_measure_loads_kernels_and_keeps_the_answers(warmed):
    q, batches, warmup = small_case()
    got = common.measure("pretopk", q, batches, warmup, {"prefilter": False})
    assert warmed == [("pretopk", {"prefilter": False})]
    assert len(got.answers) == len(batches) - warmup


def test_sap_module_loads_kernels_of_each_variant(warmed):
    q, batches, warmup = small_case()
    bench_sap.measure(bench_sap.with_partitions(5), q, batches, warmup, delay=False, savl=False)
    assert warmed == [("sap-equal", {"delay": False, "savl": False})]


def test_mintopk_module_loads_kernels_before_each_section(warmed, monkeypatch):
    monkeypatch.setattr(bench_mintopk, "PRETOPK_KS", (1,))
    rows = bench_mintopk.pretopk_against_k(quick=True)
    assert {row["algorithm"] for row in rows} <= {name for name, params in warmed if params == {"prefilter": False}}
    warmed.clear()
    monkeypatch.setattr(bench_mintopk, "ARRIVAL_SLIDES_MS", (0, 100_000))
    rows = bench_mintopk.arrival(quick=True)
    assert {row["algorithm"] for row in rows} == {name for name, _ in warmed} == set(bench_mintopk.ARRIVAL_ALGORITHMS)


def test_multi_engine_section_loads_mintopk_before_timing_it(warmed):
    queries = [engine.Query((1.0, 0.0), k=3, window=500, slide=50)]
    bench_multi.structures(queries, 2_000)
    assert ("mintopk", {}) in warmed


def test_first_disagreement_catches_a_wrong_answer():
    a = engine.Answer(np.array([1, 2]), np.array([3.0, 2.0]), np.array([1, 2]))
    swapped = engine.Answer(np.array([2, 1]), np.array([3.0, 2.0]), np.array([2, 1]))   # ties may swap ids
    wrong = engine.Answer(np.array([1, 5]), np.array([3.0, 1.0]), np.array([1, 5]))
    short = engine.Answer(np.array([1]), np.array([3.0]), np.array([1]))
    assert first_disagreement([a, a], [a, swapped]) is None
    assert first_disagreement([a, a, a], [a, a, wrong]) == 2
    assert first_disagreement([a], [short]) == 0
    assert first_disagreement([a, a], [a]) == 1
    assert agreement(None, [wrong]) == {}
    assert agreement([a], [a]) == {"agrees_with_oracle": True}
    assert agreement([a], [wrong])["status"].startswith("error: answer differs from the oracle's")


CREATE = engine.create


class Wrong:
    """An exact algorithm (default MinTopK) with its answers cut to k - 1 objects: wrong."""

    params: dict = {}

    def __init__(self, query, inner: str = "mintopk", **params):
        self._inner = CREATE(inner, query, **params)

    def process(self, batch):
        self._inner.process(batch)

    def topk(self):
        answer = self._inner.topk()
        return engine.Answer(answer.ids[:-1], answer.scores[:-1], answer.seq[:-1])

    def stats(self):
        return self._inner.stats()

    _stats = stats


def test_core_reports_a_wrong_algorithm_as_an_error(monkeypatch):
    """bench_core checks every answer of an algorithm against the oracle's: a wrong one is an
    error row and gets no ratio, so no target reads it."""
    real_create = engine.create
    monkeypatch.setattr(bench_core, "exact_single_stream", lambda: ["oracle", "wrong", "mintopk"])
    monkeypatch.setattr(bench_core, "QUICK_CASES", {"t": (1_000, 100, 5)})
    monkeypatch.setattr(bench_core, "MIN_SLIDES_AFTER_FILL", {True: 20, False: 20})
    monkeypatch.setattr(bench_core, "load_kernels", lambda name, **params: None)
    monkeypatch.setattr(engine, "create", lambda name, q, **p: Wrong(q) if name == "wrong" else real_create(name, q, **p))
    rows = {row["algorithm"]: row for row in bench_core.run(quick=True)}
    assert rows["wrong"]["status"].startswith("error: answer differs")
    assert rows["wrong"]["agrees_with_oracle"] is False
    assert rows["mintopk"]["status"] == "ok" and rows["mintopk"]["agrees_with_oracle"] is True
    assert "vs_oracle" not in rows["wrong"] and "vs_oracle" in rows["mintopk"]


def test_competitors_report_a_wrong_algorithm_as_an_error(monkeypatch):
    real_create = engine.create
    monkeypatch.setattr(bench_competitors, "ALGORITHMS", ["mintopk", "wrong", "oracle"])
    monkeypatch.setattr(bench_competitors, "DISTRIBUTIONS", {"uniform": uniform_stream})
    monkeypatch.setattr(bench_competitors, "WINDOWS", (10,))
    monkeypatch.setattr(bench_competitors, "load_kernels", lambda name, **params: None)
    monkeypatch.setattr(engine, "create", lambda name, q, **p: Wrong(q) if name == "wrong" else real_create(name, q, **p))
    rows = {row["algorithm"]: row for row in bench_competitors.windows_sweep(quick=True)}
    assert rows["wrong"]["status"].startswith("error: answer differs")
    assert rows["mintopk"]["agrees_with_oracle"] is True and "status" not in rows["mintopk"]
    assert "answers" not in rows["mintopk"]


def test_a_target_matching_several_rows_is_not_judged_on_the_first():
    """A target whose ``where`` matches two rows of its algorithm (here two runs of the case with
    different figures) is not met by whichever row comes first: it says so, unjudged."""
    from benchmarks import report
    target = {"id": "t", "issue": 12, "text": "k-skyband at least 1,000,000 objects/s",
              "where": {"family": "sap", "workload": "time-u", "n": 100_000, "s": 1_000, "k": 10},
              "algorithm": "kskyband", "metric": "objects_per_s", "at_least": 1_000_000}
    row = {"family": "sap", "workload": "time-u", "n": 100_000, "s": 1_000, "k": 10, "status": "ok", "quick": False}
    grid = pd.DataFrame([{**row, "case": "run 1", "algorithm": "kskyband", "objects_per_s": 2e6},
                         {**row, "case": "run 2", "algorithm": "kskyband", "objects_per_s": 5e5}])
    out = report.evaluate_target(target, grid, {"kskyband"})
    assert out["verdict"] == "not measured" and "2 rows match" in out["why"]
    relative = {**target, "relative_to": "mintopk", "at_least": 1.5}
    grid = pd.DataFrame([{**row, "case": "run 1", "algorithm": "kskyband", "objects_per_s": 2e6},
                         {**row, "case": "run 1", "algorithm": "mintopk", "objects_per_s": 1e6},
                         {**row, "case": "run 2", "algorithm": "mintopk", "objects_per_s": 4e6}])
    out = report.evaluate_target(relative, grid, {"kskyband", "mintopk"})
    assert out["verdict"] == "not measured" and "2 rows match" in out["why"]
    assert report.evaluate_target(relative, grid.iloc[:2], {"kskyband", "mintopk"})["verdict"] == "met"


def test_replay_baselines_load_kernels_before_timing(monkeypatch, tmp_path):
    """bench_replay's engine-alone run (the denominator of replay-overhead) and the per-shard SAO
    CPU (C = 1 is measured first: the numerator of speedup_sao) load their kernels untimed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from benchmarks import bench_replay

    events = []
    monkeypatch.setattr(bench_replay, "load_kernels", lambda name, dimensions=1, **params: events.append((name, dimensions)))
    real_create = engine.create
    monkeypatch.setattr(engine, "create", lambda name, q, **p: events.append(("create", name)) or real_create(name, q, **p))
    m = 600
    rng = np.random.default_rng(2)
    path = tmp_path / "part.parquet"
    pq.write_table(pa.table({"id": np.arange(m), "seq": np.arange(m), "t": np.arange(m), "notional": rng.random(m),
                             "price": rng.random(m), "size": rng.random(m)}), path)
    query = {"weights": {"notional": 1.0}, "k": 3, "window": 100, "slide": 10, "kind": "count"}
    bench_replay.engine_alone(("tiny", path), [query], ["oracle", "mintopk"])
    assert events[:2] == [("oracle", 1), ("mintopk", 1)] and ("create", "oracle") in events[2:]
    events.clear()
    bench_replay.sao_shard_cpu(("tiny", path), query, 20, 1)
    assert events[0] == ("sao", len(bench_replay.FEATURES)) and ("create", "sao") in events[1:]


def test_bench_sao_advantage_case_loads_both_sides_kernels_before_timing(monkeypatch):
    """advantage_case times one SAO index against one exact MinTopK per weight vector: both load
    their kernels first (run alone, MinTopK's side was charged 3.4 s of numba's cache load)."""
    from benchmarks import bench_sao

    events = []
    monkeypatch.setattr(bench_sao, "load_kernels", lambda name, dimensions=1, **params: events.append((name, dimensions)))
    real_create = engine.create
    monkeypatch.setattr(engine, "create", lambda name, q, **p: events.append(("create", name)) or real_create(name, q, **p))
    bench_sao.advantage_case(queries=2, rows=2_000, window=500, slide=100, memory=40)
    first_timed = events.index(("create", "sao"))
    assert {("sao", 3), ("mintopk", 1)} <= set(events[:first_timed])
    assert ("create", "mintopk") in events[first_timed:]


def test_harness_reports_an_exact_algorithm_with_wrong_answers_as_an_error(monkeypatch):
    """The grid records ``agrees_with_oracle``; an exact algorithm that disagrees at some timed
    slide is an error row (no objects/s ratio, never ``ok``), whatever its speed."""
    from benchmarks import harness
    from benchmarks.registry import Case

    wrong = engine.AlgorithmInfo("wrong", True, "single", "mintopk, answers cut short", {})
    real_create = engine.create
    real_available = engine.available
    monkeypatch.setattr(engine, "available", lambda: [*real_available(), wrong])
    monkeypatch.setattr(harness, "algorithms", lambda stream, family=None, only=():
                        [i for i in engine.available() if i.name in ("mintopk", "wrong")])
    monkeypatch.setattr(engine, "create", lambda name, q, **p: Wrong(q) if name == "wrong" else real_create(name, q, **p))
    monkeypatch.setattr(harness, "settings", lambda quick: {"repeats": 1, "budget": 0.0, "fill_limit": 600.0,
                                                           "repeat_budget": 600.0})
    rows = {row["algorithm"]: row for row in harness.run_case(Case("sap", "default", "time-u", 40, 3, 10), True)}
    assert rows["mintopk"]["status"] == "ok" and rows["mintopk"]["agrees_with_oracle"] and "vs_oracle" in rows["mintopk"]
    assert rows["wrong"]["agrees_with_oracle"] is False
    assert rows["wrong"]["status"].startswith("error:") and "vs_oracle" not in rows["wrong"]


def test_incomplete_module_checks_sla_against_the_brute_force(monkeypatch):
    """bench_incomplete times SLA beside EAA: a wrong SLA stops the module (as a wrong EAA does)."""
    from benchmarks import bench_incomplete

    real_create = engine.create

    monkeypatch.setattr(engine, "create", lambda name, q, **p: Wrong(q, "sla") if name == "sla" else real_create(name, q, **p))
    monkeypatch.setattr(bench_incomplete, "EVALUATIONS", 3)
    with pytest.raises(AssertionError, match="sla differs"):
        bench_incomplete.run_case(2, 100, 3, 0.5)


def test_mintopk_module_checks_every_section_against_the_oracle(monkeypatch):
    """PreTopK against k and the arrival section: each timed answer against the oracle's; a wrong
    algorithm is an error row."""
    real_create = engine.create
    monkeypatch.setattr(bench_mintopk, "PRETOPK_KS", (1,))
    monkeypatch.setattr(bench_mintopk, "load_kernels", lambda name, **params: None)
    rows = bench_mintopk.pretopk_against_k(quick=True)
    assert rows and all(row["agrees_with_oracle"] and "status" not in row for row in rows)
    monkeypatch.setattr(engine, "create", lambda name, q, **p: Wrong(q, name, **p) if name == "pretopk"
                        else real_create(name, q, **p))
    rows = bench_mintopk.pretopk_against_k(quick=True)
    assert {row["algorithm"]: row.get("status", "ok")[:6] for row in rows} == {"pretopk": "error:", "mintopk": "ok"}


def test_sap_module_checks_each_variant_against_the_oracle():
    q, batches, warmup = small_case()
    truth = common.exact_answers(q, batches, warmup)
    good = bench_sap.measure(bench_sap.with_partitions(5), q, batches, warmup, truth, savl=False)
    assert good["agrees_with_oracle"] is True and "status" not in good
    bad = bench_sap.measure(bench_sap.with_partitions(5), q, batches, warmup, [truth[0]] * len(truth), savl=False)
    assert bad["agrees_with_oracle"] is False and bad["status"].startswith("error:")


def test_competitors_memory_table_checks_exact_algorithms_only(monkeypatch):
    """An approximate index (SAO) in the memory table is not an error for differing from the oracle."""
    exact = next(i for i in engine.available() if i.name == "mintopk")
    approximate = engine.AlgorithmInfo("wrong", False, "single", "approximate", {})
    monkeypatch.setattr(engine, "available", lambda: [exact, approximate])
    real_create = engine.create
    monkeypatch.setattr(engine, "create", lambda name, q, **p: Wrong(q) if name == "wrong" else real_create(name, q, **p))
    monkeypatch.setattr(bench_competitors, "load_kernels", lambda name, **params: None)
    monkeypatch.setattr(bench_competitors, "required_slides", lambda n, s: 3)
    rows = {row["algorithm"]: row for row in bench_competitors.memory_table(quick=True)}
    assert rows["mintopk"]["agrees_with_oracle"] is True
    assert "status" not in rows["wrong"] and "agrees_with_oracle" not in rows["wrong"]
