"""The report generator (``benchmarks/report.py``): the claims table, its verdict rules, the
targets, thin samples, the generated blocks of ``docs/algorithms`` and the harness' turnover rule.

Every expectation is written out by hand from the small tables below, never computed by the
code under test.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import engine
from benchmarks import harness, report, run
from benchmarks.common import MIN_TIMED_SLIDES, TooSlow, measure_runs, required_slides
from benchmarks.registry import Case

PAPER = json.loads(report.PAPER.read_text())
VERDICTS = ("reproduced", "reproduced in shape", "not reproduced", "reversed", "not measured")


# --------------------------------------------------------------------------- paper_figures.json

def test_every_claim_names_a_paper_a_known_kind_and_where_its_figure_comes_from():
    kinds = {"ratio", "value", "trend", "lowest", "series", "band"}
    ids = [claim["id"] for claim in PAPER["claims"]]
    assert len(ids) == len(set(ids))
    for claim in PAPER["claims"]:
        assert claim["paper"] in PAPER["papers"], claim["id"]
        assert claim["kind"] in kinds, claim["id"]
        assert claim["sources"] and all("bench" in s for s in claim["sources"]), claim["id"]
        if claim["kind"] in ("ratio", "value"):
            assert "paper_value" in claim or "paper_table" in claim, claim["id"]
        if "paper_table" in claim:
            assert claim["paper_table"] in PAPER["papers"][claim["paper"]], claim["id"]
        if claim["kind"] == "trend":
            assert claim["expected"] in ("rises", "falls", "flat"), claim["id"]


def test_the_issue_s_headline_claims_are_all_there():
    ids = {claim["id"] for claim in PAPER["claims"]}
    assert {"sap-fig9-mintopk", "sap-fig9-sma", "sap-fig9-kskyband", "sap-table3-equal", "sap-table8-smallest",
            "mintopk-sma-85", "mintopk-pretopk-time", "mintopk-pretopk-memory", "sao-filtering-005",
            "sao-avg-error", "sao-throughput", "sao-skew-max-error", "inc-table1-eaa", "inc-table2-precision",
            "inc-table3-eaa", "inc-table4-precision"} <= ids


def test_no_claim_cites_our_notes_or_a_shared_path_as_a_paper():
    text = report.PAPER.read_text()
    assert "shared/" not in text and "ALGORITHMS.md" not in text
    assert all("paper" not in model["source"].split("(")[0] for model in PAPER["models"])


# --------------------------------------------------------------------------- verdict rules

@pytest.mark.parametrize("ours,paper,bound,tolerance,expected", [
    (0.20, 0.17, "about", 1.0, "reproduced"),            # within a factor 2 of the paper's 17%
    (0.50, 0.17, "about", 1.0, "reproduced in shape"),   # faster, but not by the paper's margin
    (1.03, 0.17, "about", 1.0, "not reproduced"),        # a 3% difference is a tie, and a tie is not a win
    (0.96, 0.17, "about", 1.0, "not reproduced"),
    (1.37, 0.17, "about", 1.0, "reversed"),              # slower: the opposite of the claim
    (0.10, 0.15, "at_most", 0.0, "reproduced"),          # "at least 85% less": 90% less
    (0.51, 0.15, "at_most", 0.0, "reproduced in shape"),
    (6.00, 0.15, "at_most", 0.0, "reversed"),
    (1.31, 1.50, "about", 0.5, "reproduced"),            # a claim above 1 (k-skyband keeps 1.5x)
    (0.70, 1.50, "about", 0.5, "reversed"),
])
def test_ratio_verdict(ours, paper, bound, tolerance, expected):
    assert report.ratio_verdict(ours, paper, bound, tolerance) == expected


@pytest.mark.parametrize("ours,expected", [(0.80, "reproduced"), (0.84, "reproduced"), (0.76, "reproduced"),
                                           (0.95, "not reproduced"), (0.65, "not reproduced")])
def test_a_two_sided_value_is_tested_on_both_sides(ours, expected):
    assert report.value_verdict(ours, 0.8, "about", 0.05, absolute=True) == expected


def test_one_sided_values():
    assert report.value_verdict(0.05, 0.5, "at_most") == "reproduced"
    assert report.value_verdict(181, 20, "at_most") == "not reproduced"
    assert report.value_verdict(708_000, 100_000, "at_least") == "reproduced"


@pytest.mark.parametrize("values,expected", [([1, 2, 3], "rises"), ([3, 2, 1], "falls"), ([1, 1.02, 0.99], "flat"),
                                             ([1, 3, 1], "mixed"), ([5], "n/a")])
def test_direction(values, expected):
    assert report.direction(values) == expected


@pytest.mark.parametrize("ours,expected,verdict", [("rises", "rises", "reproduced"), ("falls", "rises", "reversed"),
                                                    ("flat", "rises", "not reproduced"),
                                                    ("mixed", "falls", "not reproduced"),
                                                    ("rises", "flat", "not reproduced")])
def test_trend_verdict(ours, expected, verdict):
    assert report.trend_verdict(ours, expected) == verdict


def test_lowest_verdict_counts_wins_and_reversals():
    assert report.lowest_verdict(3, 0, 3) == "reproduced"
    assert report.lowest_verdict(2, 0, 3) == "reproduced in shape"
    assert report.lowest_verdict(0, 3, 3) == "reversed"
    assert report.lowest_verdict(1, 1, 3) == "not reproduced"
    assert not report.beats(0.411, 0.411) and not report.beats(0.0, 0.0) and not report.beats(1.0, 1.04)
    assert report.beats(0.0107, 0.0117)


def test_series_verdict():
    assert report.series_verdict([350, 440, 500], [345, 450, 495], 0.25, False) == "reproduced"
    assert report.series_verdict([350, 650, 950], [345, 450, 495], 0.25, False) == "reproduced in shape"
    assert report.series_verdict([950, 650, 350], [345, 450, 495], 0.25, False) == "reversed"
    assert report.series_verdict([0.81, 0.95], [0.80, 0.86], 0.05, True) == "reproduced in shape"
    assert report.series_verdict([0.81, 0.95], [0.80, 0.81], 0.05, True) == "not reproduced"    # the paper: flat


# --------------------------------------------------------------------------- claims on results

def grid_row(case, algorithm, speed, *, workload="stock", n=10_000, s=100, k=10, timed=200, memory=1_000.0,
             candidates=50.0):
    return {"bench": "grid-sap", "family": "sap", "sweep": "default", "case": case, "workload": workload,
            "algorithm": algorithm, "n": n, "k": k, "s": s, "cnw": n // s, "objects_per_s": speed,
            "timed_slides": timed, "measured_bytes": memory, "avg_candidates": candidates, "status": "ok"}


def frames_of(rows) -> dict[str, pd.DataFrame]:
    frame = pd.DataFrame(rows)
    return {bench: part.reset_index(drop=True) for bench, part in frame.groupby("bench")}


def claim(claim_id: str) -> dict:
    return next(c for c in PAPER["claims"] if c["id"] == claim_id)


def test_every_claim_gets_a_verdict_on_a_small_result_set_and_on_none():
    frames = frames_of([grid_row("a", "sap", 100.0), grid_row("a", "mintopk", 200.0), grid_row("a", "sma", 50.0)])
    for results in (frames, {}):
        text = report.claims_section(PAPER, results)
        table = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| paper and")]
        assert len(table) == len(PAPER["claims"])
        for line in table:
            verdict = line.split(" | ")[4].split(" (provisional")[0]
            assert verdict in VERDICTS, line


def test_sap_twice_as_slow_as_mintopk_is_reversed_with_the_range_of_full_samples_only():
    rows = [grid_row("a", "sap", 100.0), grid_row("a", "mintopk", 200.0),                 # sap/mintopk time 2
            grid_row("b", "sap", 100.0, n=1_000), grid_row("b", "mintopk", 300.0, n=1_000),  # 3
            grid_row("c", "sap", 900.0, timed=20), grid_row("c", "mintopk", 100.0, timed=20)]  # thin: 0.11
    out = report.evaluate_claim(claim("sap-fig9-mintopk"), frames_of(rows), PAPER)
    assert out["verdict"] == "reversed"
    assert out["ours"].startswith("2.5 (median of 2 cases, 2-3;")             # case c never sets the range
    assert "2 thin rows left out" in out["source"]


def test_a_claim_on_thin_rows_only_is_provisional():
    rows = [grid_row("a", "sap", 100.0, timed=20), grid_row("a", "mintopk", 200.0, timed=20)]
    out = report.evaluate_claim(claim("sap-fig9-mintopk"), frames_of(rows), PAPER)
    assert out["verdict"] == "reversed (provisional: thin samples)"


def test_smallest_memory_with_a_tie_is_not_a_win():
    rows = [grid_row("a", "sap", 1.0, memory=100.0), grid_row("a", "mintopk", 1.0, memory=102.0),
            grid_row("a", "kskyband", 1.0, memory=500.0),
            grid_row("b", "sap", 1.0, memory=100.0), grid_row("b", "mintopk", 1.0, memory=300.0),
            grid_row("b", "kskyband", 1.0, memory=500.0)]
    out = report.evaluate_claim(claim("sap-table8-smallest"), frames_of(rows), PAPER)
    assert out["ours"].startswith("lowest in 1 of 2")
    assert out["verdict"] == "not reproduced"
    assert out["paper_figure"] == "lowest in 80 of 80 cells"       # computed from the paper's Table 8


def test_the_paper_s_ratio_comes_from_its_own_table():
    value, text = report.paper_figure(PAPER, claim("sap-table3-equal"))
    table = PAPER["papers"]["sap"]["table3_seconds_variants"]
    assert table["TRIP"]["sap"]["k"][0] == 9.5 and table["TRIP"]["sap-equal"]["k"][0] == 11.7
    assert 0.4 < value < 1.0 and "median of 80 cells" in text


def table2_row(dataset, m, variant, us):
    return {"bench": "sap", "section": "table2", "case": f"{dataset} n=100000 k=100 s=100 m={m}", "dataset": dataset,
            "algorithm": "sap-equal", "variant": variant, "n": 100_000, "k": 100, "s": 100, "m": m,
            "us_per_object": us, "timed_slides": 1_000, "status": "ok"}


def test_table2_ablation_ratios_pair_the_variants_of_one_case():
    rows = [table2_row("stock", m, variant, us) for m, times in ((5, (1.0, 0.6, 0.6)), (9, (1.0, 0.7, 0.5)))
            for variant, us in zip(("non-delay", "algo1", "algo1-savl"), times)]
    delay = report.evaluate_claim(claim("sap-table2-delay"), frames_of(rows), PAPER)
    assert delay["ours"].startswith("0.65 (median of 2 cases, 0.6-0.7;") and delay["verdict"] == "reproduced"
    assert delay["paper_figure"].startswith("0.565 (median of 85 cells")        # Table 2: 17 m x 5 data sets
    savl = report.evaluate_claim(claim("sap-table2-savl"), frames_of(rows), PAPER)
    assert savl["ours"].startswith("0.857 (median of 2 cases, 0.714-1;")
    assert savl["verdict"] == "reproduced" and savl["paper_figure"].startswith("0.892 (median of 85 cells")
    tie = [row for row in rows if row["m"] == 5]
    assert report.evaluate_claim(claim("sap-table2-savl"), frames_of(tie), PAPER)["verdict"] == "not reproduced"


def test_the_sharded_sao_replay_is_judged_on_its_c2_row():
    rows = [{"bench": "replay", "part": "d", "case": f"sao C={c}", "algorithm": "sao", "shards": c,
             "sao_s": seconds, "avg_precision": precision, "status": "ok", **extra}
            for c, seconds, precision, extra in ((1, 10.0, 0.90, {}),
                                                 (2, 6.0, 0.95, {"speedup_sao": 10 / 6, "precision_change": 0.05}))]
    speed = report.evaluate_claim(claim("sao-parallel-speedup"), frames_of(rows), PAPER)
    assert speed["ours"] == "1.67" and speed["verdict"] == "reproduced"   # within 25% of 2
    precision = report.evaluate_claim(claim("sao-parallel-precision"), frames_of(rows), PAPER)
    assert precision["verdict"] == "reproduced"
    rows[1]["precision_change"] = -0.1
    assert report.evaluate_claim(claim("sao-parallel-precision"), frames_of(rows), PAPER)["verdict"] == "not reproduced"


def test_a_trend_is_judged_on_the_module_table_before_the_grid():
    module = [{"bench": "sao", "data": "gaussian D=0", "W": 100_000, "M": 300, "K": 10, "d": 3,
               "allocation": "dynamic-errmin", "L": layers, "avg_error_pct": error, "status": "ok"}
              for layers, error in ((1, 10.7), (2, 1.4), (4, 0.7), (7, 2.6))]
    grid = [{"bench": "grid-sao", "family": "sao", "sweep": "layers", "algorithm": "sao", "param_layers": layers,
             "avg_error": error, "status": "ok"} for layers, error in ((1, 0.3), (4, 0.2), (7, 0.1))]
    out = report.evaluate_claim(claim("sao-L-error"), frames_of(module + grid), PAPER)
    assert out["verdict"] == "not reproduced" and out["ours"].startswith("mixed")
    assert out["source"].startswith("`sao`")
    out = report.evaluate_claim(claim("sao-L-error"), frames_of(grid), PAPER)
    assert out["verdict"] == "reproduced" and out["source"].startswith("`grid-sao`")


def test_skew_trend_is_a_claim():
    rows = [{"bench": "sao", "data": f"skewed p={p}", "p": p, "W": 100_000, "M": 300, "L": 4, "K": 10, "d": 3,
             "allocation": "dynamic-errmin", "max_error_pct": e, "status": "ok"}
            for p, e in ((0.2, 15.8), (0.5, 13.5), (0.9, 10.2))]
    out = report.evaluate_claim(claim("sao-skew-max-error"), frames_of(rows), PAPER)
    assert out["verdict"] == "reversed" and out["cause"]


# --------------------------------------------------------------------------- targets

def target(target_id: str) -> dict:
    return next(t for t in PAPER["targets"] if t["id"] == target_id)


def test_allocation_target_on_a_tie_is_not_met():
    rows = pd.DataFrame([{"family": "sao", "sweep": "allocation", "algorithm": "sao", "param_allocation": a,
                          "avg_error": e, "status": "ok", "quick": False, "n": 100_000, "s": 1_000,
                          "timed_slides": 200} for a, e in (("dynamic-errmin", 0.0), ("dynamic-uniform", 0.0),
                                                            ("static-errmin", 0.0006), ("static-uniform", 0.0004))])
    out = report.evaluate_target(target("sao-allocation"), rows, {"sao"})
    assert out["verdict"] == "NOT met" and "a tie" in out["why"] and "dynamic-uniform" in out["why"]


@pytest.mark.parametrize("precision,verdict", [(0.8, "met"), (0.95, "NOT met"), (0.65, "NOT met")])
def test_precision_around_0_8_is_two_sided(precision, verdict):
    rows = pd.DataFrame([{"family": "incomplete", "workload": "correlated", "sweep": "default", "algorithm": "approx",
                          "precision": precision, "status": "ok", "quick": False}])
    assert report.evaluate_target(target("approx-precision"), rows, {"approx"})["verdict"] == verdict


def test_pretopk_log_k_is_evaluated():
    rows = [{"bench": "mintopk", "section": "pretopk-k", "algorithm": "pretopk", "k": k, "s": s,
             "us_per_object": us, "status": "ok", "quick": False}
            for k, s, us in ((1, 10, 5.0), (10, 100, 5.5), (100, 1_000, 6.0), (100, 100, 20.0))]
    frame = pd.DataFrame(rows)
    out = report.evaluate_target(target("pretopk-log-k"), frame, {"pretopk"})
    assert out["verdict"] == "met" and out["measured"].startswith("1.2x from k = 1 to 100")   # 6.0 / 5.0
    linear = frame.copy()
    linear.loc[linear["k"] == 100, "us_per_object"] = 50.0                                  # 10x over 100x k
    assert report.evaluate_target(target("pretopk-log-k"), linear, {"pretopk"})["verdict"] == "NOT met"


# --------------------------------------------------------------------------- generated blocks

DOC = """# SAP

Prose the other helpers edit.

<!-- generated:sap-table -->
| old | table |
|---|---|
| 1 | 2 |
<!-- /generated -->

More prose.

<!-- generated:unknown -->
kept as is
<!-- /generated -->
"""


def test_rewrite_blocks_touches_only_the_named_blocks():
    out = report.rewrite_blocks(DOC, {"sap-table": "| new |\n|---|\n| 3 |\n"})
    assert out == DOC.replace("| old | table |\n|---|---|\n| 1 | 2 |\n", "| new |\n|---|\n| 3 |\n")
    assert report.rewrite_blocks(DOC, {}) == DOC
    assert report.rewrite_blocks(out, {"sap-table": "| new |\n|---|\n| 3 |"}) == out       # idempotent


def test_write_doc_tables_fills_the_blocks_from_the_results(tmp_path):
    (tmp_path / "mintopk.md").write_text("intro\n<!-- generated:mintopk-cnw -->\nold\n<!-- /generated -->\nend\n")
    rows = [{"bench": "competitors", "section": "c_nw", "distribution": "uniform", "c_nw": 10, "algorithm": a,
             "objects_per_s": v, "timed_slides": 200, "status": "ok", "run_id": "r1", "commit": "f" * 40,
             "quick": False, "load_1m": 1.0, "cores": 2} for a, v in (("mintopk", 1_500_000.0), ("oracle", 2_000_000.0))]
    assert report.write_doc_tables(frames_of(rows), tmp_path) == [tmp_path / "mintopk.md"]
    text = (tmp_path / "mintopk.md").read_text()
    assert text.startswith("intro\n<!-- generated:mintopk-cnw -->\n*Generated by `benchmarks/report.py`")
    assert "| 10 | uniform | 1.5M | 2M | 200 |" in text and "old" not in text and text.endswith("-->\nend\n")


def test_method_section_is_read_from_the_harness_constants(monkeypatch):
    monkeypatch.setitem(harness.FULL_SETTINGS, "repeats", 7)
    monkeypatch.setitem(harness.FULL_SETTINGS, "repeat_budget", 42.0)
    text = report.methods()
    assert "up to 7 timed runs" in text and "42 s of CPU" in text and f"or {MIN_TIMED_SLIDES} slides" in text


# --------------------------------------------------------------------------- the turnover rule

def test_required_slides_is_one_turnover_or_the_minimum():
    assert required_slides(100_000, 10) == 10_000
    assert required_slides(100_000, 1_000) == MIN_TIMED_SLIDES == 200
    assert required_slides(2_001, 10) == 201                      # a partial slide rounds up


class Counting:
    """An algorithm that costs nothing; counts the slides it processed."""

    def __init__(self) -> None:
        self.slides = 0

    def process(self, batch) -> None:
        self.slides += 1

    def topk(self):
        return engine.Answer.empty()

    def stats(self) -> dict:
        return {"candidates": 0, "retained": 0, "bytes": 0}


def test_the_budget_never_stops_a_row_before_its_minimum():
    query = engine.Query(weights=[1.0], k=2, window=20, slide=10)
    batches = list(engine.slides((np.arange(400), np.arange(400), np.ones(400)), query))     # 40 slides
    runs = measure_runs(Counting, batches, warmup=2, repeats=1, budget=0.0, min_slides=30)
    assert runs.timed_slides == 30 and runs.timed_objects == 300


def test_a_row_that_cannot_reach_its_minimum_in_time_is_skipped(monkeypatch):
    clock = iter(np.arange(0.0, 1e6, 1.0))                        # every reading one second later
    monkeypatch.setattr("benchmarks.common.time.process_time", lambda: next(clock))
    query = engine.Query(weights=[1.0], k=2, window=20, slide=10)
    batches = list(engine.slides((np.arange(400), np.arange(400), np.ones(400)), query))
    with pytest.raises(TooSlow, match="of the 30 slides of one turnover"):
        measure_runs(Counting, batches, warmup=2, repeats=1, budget=0.0, min_slides=30, turnover_limit=5.0)


def test_a_window_fill_slow_only_while_kernels_compile_is_measured_again(monkeypatch):
    """A fresh clone's first run compiles numba's kernels inside the first fill: that run is
    measured again, once; a fill as slow without any compiling is skipped."""
    now = [0.0]
    monkeypatch.setattr("benchmarks.common.time.process_time", lambda: now[0])
    made = []

    class CompilingFirst(Counting):
        def __init__(self) -> None:
            super().__init__()
            made.append(self)

        def process(self, batch) -> None:
            super().process(batch)
            if len(made) == 1:
                now[0] += 100.0        # the first instance's slides pay the compiler

    query = engine.Query(weights=[1.0], k=2, window=20, slide=10)
    batches = list(engine.slides((np.arange(400), np.arange(400), np.ones(400)), query))
    compiled = iter([3, 5])            # kernels before and after the first try
    runs = measure_runs(CompilingFirst, batches, warmup=2, repeats=1, budget=0.0, min_slides=30, fill_limit=10.0,
                        kernels=lambda: next(compiled))
    assert runs.timed_slides == 30 and len(made) == 3     # the first try, the second's warm-up and its timed run
    made.clear()
    with pytest.raises(TooSlow, match="filling one window took over 10 s"):
        measure_runs(CompilingFirst, batches, warmup=2, repeats=1, budget=0.0, min_slides=30, fill_limit=10.0,
                     kernels=lambda: 5)


@pytest.mark.parametrize("case,rows", [(Case("sap", "s", "time-u", 100_000, 100, 10), 100_000),
                                       (Case("sap", "default", "time-u", 100_000, 10, 1_000), 200_000),
                                       (Case("incomplete", "default", "correlated", 1_000, 10, 10, d=3), 4_000)])
def test_each_case_streams_enough_rows_for_its_minimum(case, rows):
    assert harness.timed_rows(case) == rows


def test_a_harness_row_covers_its_minimum_and_says_so(monkeypatch):
    monkeypatch.setattr(harness, "algorithms", lambda stream, family=None, only=(): [
        i for i in engine.available() if i.name == "mintopk"])
    monkeypatch.setattr(harness, "settings", lambda quick: {"repeats": 1, "budget": 0.0, "fill_limit": 10.0,
                                                           "repeat_budget": 5.0, "turnover_limit": 60.0})
    rows = harness.run_case(Case("sap", "default", "time-u", 40, 3, 10, only=("mintopk",)), quick=True, log=lambda *a: None)
    assert sorted(row["algorithm"] for row in rows) == ["mintopk", "oracle"]       # `only`: no SQL either
    for row in rows:
        assert row["required_slides"] == 200 and row["timed_slides"] == 200 and row["thin"] is False


def test_projected_seconds_of_an_earlier_row_under_the_turnover_rule():
    cfg = {"repeats": 3, "fill_limit": 60.0, "repeat_budget": 20.0, "turnover_limit": 120.0}
    # n = 100,000, s = 1,000: 200 slides of 1,000 objects at 1M objects/s = 0.2 s each run untraced;
    # fill 2 s traced: 2 + 3 x 0.2 traced, then 3 runs of (1 + 0.2)
    row = {"objects_per_s": 1e6, "s": 1_000, "n": 100_000, "fill_seconds": 2.0, "kind": "count"}
    assert run.projected_seconds(row, cfg) == pytest.approx(2 + 0.6 + 3 * 1.2)
    assert run.projected_seconds({**row, "fill_seconds": 80.0}, cfg) == 60.0           # skipped at its fill
    slow = {**row, "s": 10, "objects_per_s": 1_000.0}                                  # 10,000 slides x 10 s
    assert run.projected_seconds(slow, cfg) == pytest.approx(2 + 120)                  # skipped at the limit
    assert run.projected_seconds({**row, "kind": "time"}, cfg) is None


def test_the_docstring_examples_hold():
    import doctest

    from benchmarks import common
    for module in (report, common):
        assert doctest.testmod(module).failed == 0, module.__name__


def test_the_sap_variants_table_leaves_out_a_case_whose_sap_row_was_skipped():
    """A full run can skip a row (turnover or fill over its CPU budget): the report is still built."""
    skipped = {**grid_row("b", "sap", 0.0), "status": "skipped: filling one window took over 60 s of CPU"}
    rows = pd.DataFrame([grid_row("a", "sap", 100.0), grid_row("a", "sap-equal", 200.0),
                         skipped, grid_row("b", "sap-equal", 50.0)])
    table = report.sap_variants_md(rows, "stock", PAPER)
    cases = [line.split(" | ")[0].removeprefix("| ") for line in table.splitlines()[2:] if line.startswith("| ")]
    assert cases == ["a"]
