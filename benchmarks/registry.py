"""The registry of experiments: workloads x algorithms x parameter grids.

Algorithms are not listed here: every case runs every algorithm ``engine.available()`` returns
for its stream model (``single`` or ``incomplete``), so a newly registered algorithm is
measured with no change to the harness.  A case only names the workload, the query and the
parameter it sweeps; parameters an algorithm does not take (``memory`` for SAO, ...) are
simply not passed to it.

The grids scale the papers' to a 2-core machine and a Python engine:

* **SAP paper Table 1** (n in 0.01%..1% of D, k in 10..1000, s in 0.01%..10% of n; Tables
  5-9): here n = 100,000 by default, k in {10, 100, 1000}, s in {10, 100, 1000} (issue 6), n in
  {10,000, 50,000, 100,000} at s = n / 100, and C_nw = n / s in {10, 100, 1000} at s = 100
  (issue 12), on TIME-U, TIME-R, the stock notional and the taxi speed.
* **SAO paper section 4** (W = 10^6, M = 500, L = 4, K = 10, d = 3): W = 100,000, M in
  {150, 300, 500, 1000} (the paper's absolute M: with M/W = 0.05% at this W the hulls hold too
  few tuples to filter anything), the four allocations, L in {1, 2, 4, 7}, d in {2, 3, 4}, on the drifting
  Gaussian (D = 0 and 1) and the skewed uniform set (p = 0.5, 0.9); W in {50,000 .. 400,000} at
  M = 500 (Figs. 14-15); the paper's own W = 10^6 at M = 200 and 500 (M/W = 0.02%, 0.05%); K is
  ``bench_sao.py``'s.
* **SAP paper Appendix D, Table 5** (high-speed streams): n = 100,000, k = 1,000, s in {1%, 5%,
  10%} of n, SAP and MinTopK only.
* **Incomplete-streams paper Tables 1-4** (window 1000, k = 10, 3 streams, xi = 0.5; World
  Cup window 500, k = 20, 2 streams): the same values, since the paper's sizes fit here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import engine


@dataclass(frozen=True)
class Case:
    """One point of a grid: a workload and a query (plus workload options and algorithm params)."""

    family: str          # "sap" (exact single stream), "sao" (any-weights index), "incomplete"
    sweep: str           # the parameter(s) this case varies, comma-separated ("default,k", "s", "cnw", ...)
    workload: str
    n: int
    k: int
    s: int
    d: int = 1
    kind: str = "count"
    options: tuple = ()  # workload options, e.g. (("drift", 1.0),)
    params: tuple = ()   # algorithm parameters, e.g. (("memory", 500),)
    only: tuple = ()     # the algorithms a paper's experiment compares (empty: all of the family)
    limits: tuple = ()   # harness limits this case needs beyond the defaults, e.g. (("fill_limit", 300.0),)

    @property
    def stream(self) -> str:
        return "incomplete" if self.family == "incomplete" else "single"

    @property
    def label(self) -> str:
        extra = "".join(f" {k}={v}" for k, v in self.options + self.params)
        return f"{self.workload} n={self.n} k={self.k} s={self.s}{' d=%d' % self.d if self.d > 1 else ''}{extra}"

    def query(self) -> engine.Query:
        """Weights all 1 (the papers' sum over features or streams)."""
        return engine.Query(weights=(1.0,) * self.d, k=self.k, window=self.n, slide=self.s, kind=self.kind)


def is_index(info: engine.AlgorithmInfo) -> bool:
    """An approximate any-weights index under a memory budget (SAO): measured by its own family."""
    return not info.exact and "memory" in info.defaults


def algorithms(stream: str, family: str | None = None, only: tuple = ()) -> list[engine.AlgorithmInfo]:
    """The registered algorithms for a stream model: the ``sao`` family takes the any-weights
    indexes, the ``sap`` family every other single-stream algorithm; ``only`` keeps the named ones."""
    found = [info for info in engine.available() if info.stream == stream and (not only or info.name in only)]
    if family == "sao":
        return [info for info in found if is_index(info)]
    if family == "sap":
        return [info for info in found if not is_index(info)]
    return found


def params_for(info: engine.AlgorithmInfo, case: Case) -> dict:
    """The case's algorithm parameters that ``info`` takes."""
    return {key: value for key, value in case.params if key in info.defaults}


def _unique(cases):
    """Each point once; a point shared by several sweeps names them all (``"default,k,s"``)."""
    merged: dict[tuple, Case] = {}
    for case in cases:
        key = (case.family, case.workload, case.n, case.k, case.s, case.d, case.kind, case.options, case.params,
               case.only, case.limits)
        if key in merged:
            sweeps = merged[key].sweep.split(",")
            if case.sweep not in sweeps:
                merged[key] = replace(merged[key], sweep=",".join(sweeps + [case.sweep]))
        else:
            merged[key] = case
    return list(merged.values())


def sap_cases(quick: bool) -> list[Case]:
    """Throughput, candidates and memory vs n, k, s and C_nw (SAP paper Tables 5-9, Fig. 9)."""
    cases = []
    if quick:
        for workload in ("time-u", "time-r"):
            n, k, s = 10_000, 10, 1_000        # C_nw = 10 keeps PreTopK's fill short
            cases.append(Case("sap", "default", workload, n, k, s))
            cases += [Case("sap", "k", workload, n, kk, s) for kk in (10, 100)]
            cases += [Case("sap", "s", workload, n, k, ss) for ss in (100, 1_000)]
        cases.append(Case("sap", "default", "stock", 10_000, 10, 100))
        cases.append(Case("sap", "default", "taxi", 5_000, 10, 50))
        return _unique(cases)
    for workload in ("time-u", "time-r", "stock"):
        n, k, s = 100_000, 100, 1_000
        cases.append(Case("sap", "default", workload, n, k, s))
        cases += [Case("sap", "k", workload, n, kk, s) for kk in (10, 100, 1_000)]
        cases += [Case("sap", "s", workload, n, k, ss) for ss in (10, 100, 1_000)]
        if workload != "stock":
            cases += [Case("sap", "n", workload, nn, k, nn // 100) for nn in (10_000, 50_000, 100_000)]
            cases += [Case("sap", "cnw", workload, nn, 10, 100) for nn in (1_000, 10_000, 100_000)]
    cases.append(Case("sap", "default", "taxi", 10_000, 10, 100))
    cases += [Case("sap", "k", "taxi", 10_000, kk, 100) for kk in (10, 100)]
    cases += [Case("sap", "s", "taxi", 10_000, 10, ss) for ss in (10, 100, 1_000)]
    cases.append(Case("sap", "time-window", "stock", 60_000, 10, 1_000, kind="time",
                      options=(("regular_hours", True),)))      # one minute, slides of one second
    # SAP paper Table 5 (high-speed streams, SAP against MinTopK only): k = 1,000, s = 1%-10% of n
    cases += [Case("sap", "high-speed", workload, 100_000, 1_000, ss, only=HIGH_SPEED)
              for workload in ("time-u", "time-r") for ss in (5_000, 10_000)]
    return _unique(cases)


HIGH_SPEED = ("sap", "mintopk")
"""SAP paper Appendix D compares SAP with MinTopK only (Tables 5, 7, 9); the oracle runs beside them."""


PAPER_W_LIMITS = (("fill_limit", 400.0), ("turnover_limit", 600.0), ("repeats", 1))
"""The SAO paper's W = 10^6 in Python: minutes per window under tracing, one timed run."""


def sao_cases(quick: bool) -> list[Case]:
    """Error, filtering and throughput vs M/W, L, K, d and allocation (SAO paper Figs. 8-24)."""
    def case(sweep, workload="drifting-gaussian", n=None, k=10, d=3, memory=None, layers=4,
             allocation="dynamic-errmin", options=(("drift", 0.0),)):
        n = n or (20_000 if quick else 100_000)
        memory = memory or (300 if quick else 500)  # the paper's M: the hulls need hundreds of tuples
        params = (("memory", memory), ("layers", layers), ("allocation", allocation))
        return Case("sao", sweep, workload, n, k, n // 100, d=d, options=options, params=params)

    if quick:
        return _unique([case("default"), case("allocation"), case("allocation", allocation="static-uniform")])
    cases = [case("default")]
    cases += [case("memory", memory=m) for m in (150, 300, 500, 1_000)]   # M/W = 0.15% .. 1%
    cases += [case("allocation", allocation=a) for a in ("dynamic-errmin", "dynamic-uniform",
                                                         "static-errmin", "static-uniform")]
    cases += [case("layers", layers=l) for l in (1, 2, 4, 7)]
    cases += [case("d", d=dd) for dd in (2, 3, 4)]
    cases += [case("drift", options=(("drift", dd),)) for dd in (0.0, 1.0)]
    cases += [case("skew", workload="skewed-uniform", options=(("p", p),)) for p in (0.5, 0.9)]
    # Figs. 14-15: the window size at the paper's M = 500 (paper: W = 250,000 .. 1,500,000)
    cases += [case("window", n=w, memory=500) for w in (50_000, 100_000, 200_000, 400_000)]
    # Figs. 8-10 at the paper's own W = 10^6: M/W = 0.02% (filtering 89%) and 0.05% (99.8%); at M = 200
    # a tenth of the tuples pass the filter and the traced fill alone takes minutes: one timed run
    cases += [replace(case("paper-w", n=1_000_000, memory=m), limits=PAPER_W_LIMITS) for m in (200, 500)]
    return _unique(cases)


def hundredth(n: int) -> int:
    """The largest slide ``s <= n / 100`` that divides ``n`` (a query needs ``n % s == 0``)."""
    return max(d for d in range(1, max(1, n // 100) + 1) if n % d == 0)


GENERATOR_MEMORY = 30
"""The correlated generator's per-stream memory ``C``: the paper does not give it; 30 is the value
``bench_incomplete.py`` calibrated once on Table 1's first row (EAA's size), used here unchanged."""


def incomplete_cases(quick: bool) -> list[Case]:
    """Retained size and precision vs W, k, streams and xi (incomplete paper Tables 1-4, Fig. 5)."""
    def synthetic(sweep, n=1_000, k=10, streams=3, xi=0.5):
        return Case("incomplete", sweep, "correlated", n, k, hundredth(n), d=streams,
                    options=(("xi", xi), ("memory", GENERATOR_MEMORY)))

    def worldcup(sweep, n=500, k=20, streams=2):
        return Case("incomplete", sweep, "worldcup", n, k, hundredth(n), d=streams)

    if quick:
        return _unique([synthetic("default"), synthetic("k"), synthetic("k", k=100), synthetic("xi"),
                        synthetic("xi", xi=0.9), worldcup("default")])
    cases = [synthetic("default")]
    cases += [synthetic("streams", streams=d) for d in (2, 3, 4, 6)]
    cases += [synthetic("k", k=kk) for kk in (10, 20, 50, 100)]
    cases += [synthetic("xi", streams=2, xi=xi) for xi in (0.1, 0.3, 0.5, 0.7, 0.9)]
    cases += [synthetic("n", n=w) for w in (500, 1_000, 2_000, 4_000)]
    cases += [worldcup("default")]
    cases += [worldcup("streams", streams=d) for d in (2, 3, 4)]
    cases += [worldcup("n", n=w) for w in (500, 750, 1_000)]
    return _unique(cases)
