"""Many queries at once (issue 21): the shared executor against one MinTopK per query.

Sections (column ``section``):

* ``cli``: the issue's workload, 48 count queries over one stream of 200,000 objects with two
  features: two weight vectors, and per weight vector six ``(window, slide)`` pairs (windows
  1,000 to 20,000, slides dividing them) with k in {1, 10, 50, 100}.  Both runs go through the
  same command line, ``python -m engine run-many`` on a Parquet file, default (shared) and ``--algorithm
  mintopk`` (one instance per query); their outputs must be byte-identical (``same_answers``).
  ``cpu_s`` is the child process' CPU time (reading the Parquet file and writing the answers included,
  the same work in both), ``peak_rss_bytes`` its peak resident size (``VmHWM``); ``measured_bytes`` and
  ``bytes`` are the structures' measured and modelled sizes at the end of the stream, from the
  same workload run in this process (the shared executor's ``stats`` against the sum over the
  MinTopK instances).  Target: ``vs_unshared`` (the unshared CPU time over the shared one) >= 5.
* ``cli scale``: 1,000 queries drawn as in ``scaling`` (quick: 100) through the same two
  command lines, byte-identical outputs: the re-scoped 5x target (``docs/algorithms/multi.md``,
  "Where the time goes"), since on the 48 queries the command line's fixed cost and the
  families kept at k = 100 bound the ratio near 2x.
* ``engine``: the same workload in this process, without the command line's fixed costs
  (interpreter and numba start-up, reading, writing the answers): CPU seconds of the shared
  executor's ``answers`` (every answer, as numpy columns) against those of 48 MinTopK instances
  (``process`` and ``topk`` per slide), the same answers.
* ``scaling``: the shared executor alone, in this process, for 1, 10, 100 and 1,000 queries
  drawn from the same distribution (k uniform in 1..100, the same six window / slide pairs,
  the same two weights): CPU seconds of ``answers`` over the stream (every answer as numpy
  columns: the Python work is per call and per query, not per answer).  Queries beyond the
  first few join existing families, so the cost grows sub-linearly (``cost_per_query``).

Figures are CPU times on a shared, loaded 2-core machine: noisy.  Quick mode: 20,000 objects, the
``cli scale`` section with 100 queries and the scaling section up to 100 queries.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import pyarrow
import pyarrow.parquet

import engine
from benchmarks.common import ROOT, table
from engine.multi import SharedTopK
from engine.warmup import load_kernels

COLUMNS = ["section", "case", "queries", "families", "objects", "cpu_s", "objects_per_s", "vs_unshared", "same_answers",
           "answers", "cost_per_query", "vs_one_query", "candidates", "bytes", "measured_bytes",
           "peak_rss_bytes"]

OBJECTS = 200_000
QUICK_OBJECTS = 20_000
WEIGHTS = ((1.0, 0.0), (0.6, 0.4))
PAIRS = ((1_000, 100), (2_000, 200), (5_000, 500), (10_000, 1_000), (20_000, 1_000), (20_000, 2_000))
KS = (1, 10, 50, 100)


def workload() -> list[engine.Query]:
    """The issue's 48 count queries: 2 weights x 6 (window, slide) pairs x 4 values of k."""
    return [engine.Query(weights, k=k, window=n, slide=s) for weights in WEIGHTS for n, s in PAIRS for k in KS]


def drawn(count: int, seed: int = 5) -> list[engine.Query]:
    """The workload's costliest query (k = 100 over the shortest slide), then ``count - 1``
    queries from the same distribution: k in 1..100, a pair, a weight vector."""
    rng = np.random.default_rng(seed)
    rest = count - 1
    pairs = rng.integers(0, len(PAIRS), rest)
    first = engine.Query(WEIGHTS[0], k=max(KS), window=PAIRS[0][0], slide=PAIRS[0][1])
    return [first] + [engine.Query(WEIGHTS[int(w)], k=int(k), window=PAIRS[p][0], slide=PAIRS[p][1])
                      for w, k, p in zip(rng.integers(0, 2, rest), rng.integers(1, 101, rest), pairs)]


def stream(m: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    return np.arange(m, dtype=np.int64), np.arange(m, dtype=np.int64), rng.random((m, 2))


def write_inputs(directory: str, m: int, queries: list[engine.Query]) -> tuple[str, str]:
    """The stream as Parquet (read in a fraction of the CSV's time, the same for both runs) and
    the workload file."""
    ids, t, x = stream(m)
    source = os.path.join(directory, "stream.parquet")
    pyarrow.parquet.write_table(pyarrow.table({"id": ids, "t": t, "a": x[:, 0], "b": x[:, 1]}), source)
    spec = os.path.join(directory, "queries.json")
    with open(spec, "w") as out:
        json.dump([q.to_dict() for q in queries], out)
    return source, spec


def run_cli(args: list[str]) -> tuple[float, int]:
    """CPU seconds and peak RSS (bytes) of one ``python -m engine`` child."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", _CHILD, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"run-many failed: {done.stderr.strip()}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, int(done.stdout.strip())


_CHILD = """
import resource, sys
from engine.cli import main
status = main(sys.argv[1:])
try:  # the peak of this process' own memory: Linux carries ru_maxrss over from the parent
    with open("/proc/self/status") as status_file:
        print(next(int(line.split()[1]) for line in status_file if line.startswith("VmHWM:")) * 1024)
except OSError:
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
sys.exit(status)
"""


def structures(queries: list[engine.Query], m: int) -> tuple[dict, dict]:
    """Both runs in this process: CPU seconds (``cpu_s``) and, at the end of the stream, the
    shared executor's stats and MinTopK's summed over its instances."""
    ids, t, x = stream(m)
    SharedTopK(queries).process(ids[:1000], t[:1000], x[:1000])  # kernels loaded before timing
    shared = SharedTopK(queries)
    started = time.process_time()
    for lo in range(0, m, 1 << 16):
        shared.answers(ids[lo:lo + (1 << 16)], t[lo:lo + (1 << 16)], x[lo:lo + (1 << 16)])
    shared_stats = {**shared.stats(), "cpu_s": time.process_time() - started}
    unshared = {"candidates": 0, "bytes": 0, "measured_bytes": 0, "cpu_s": 0.0}
    load_kernels("mintopk")                                                  # likewise
    for query in queries:
        algorithm = engine.create("mintopk", query)
        batches = list(engine.slides((ids, t, x), query))
        started = time.process_time()
        for batch in batches:
            algorithm.process(batch)
            algorithm.topk()
        unshared["cpu_s"] += time.process_time() - started
        stats = algorithm.stats()
        for key in ("candidates", "bytes", "measured_bytes"):
            unshared[key] += int(stats[key])
    return shared_stats, unshared


def both_clis(queries: list[engine.Query], m: int) -> tuple[dict[str, tuple[float, int]], bool, int]:
    """``run-many`` shared and ``--algorithm mintopk`` on the same files: CPU seconds and peak
    RSS per case, whether the outputs are byte-identical, and the number of answers."""
    with tempfile.TemporaryDirectory() as directory:
        source, spec = write_inputs(directory, m, queries)
        outputs, figures = {}, {}
        warm = os.path.join(directory, "warm.jsonl")
        run_cli(["run-many", "--queries", spec, "--input", source, "--output", warm])  # loads the kernel cache
        for case, extra in (("shared", []), ("unshared mintopk", ["--algorithm", "mintopk"])):
            outputs[case] = os.path.join(directory, case.replace(" ", "-") + ".jsonl")
            figures[case] = run_cli(["run-many", "--queries", spec, "--input", source, "--output", outputs[case], *extra])
        with open(outputs["shared"], "rb") as a, open(outputs["unshared mintopk"], "rb") as b:
            same = a.read() == b.read()
        with open(outputs["shared"], "rb") as a:
            answers = sum(1 for _ in a)
    return figures, same, answers


def cli_section(m: int) -> list[dict]:
    queries = workload()
    rows = []
    figures, same, answers = both_clis(queries, m)
    shared_stats, unshared_stats = structures(queries, m)
    for case, (cpu, rss) in figures.items():
        memory = shared_stats if case == "shared" else unshared_stats
        rows.append({"section": "cli", "case": case, "queries": len(queries), "objects": m,
                     "families": shared_stats["families"] if case == "shared" else len(queries),
                     "cpu_s": cpu, "objects_per_s": m / cpu, "vs_unshared": figures["unshared mintopk"][0] / cpu,
                     "same_answers": same, "answers": answers, "candidates": memory["candidates"],
                     "bytes": memory["bytes"], "measured_bytes": memory["measured_bytes"], "peak_rss_bytes": rss})
    for case, memory in (("shared", shared_stats), ("unshared mintopk", unshared_stats)):
        rows.append({"section": "engine", "case": case, "queries": len(queries), "objects": m,
                     "families": shared_stats["families"] if case == "shared" else len(queries),
                     "cpu_s": memory["cpu_s"], "objects_per_s": m / memory["cpu_s"],
                     "vs_unshared": unshared_stats["cpu_s"] / memory["cpu_s"], "candidates": memory["candidates"],
                     "bytes": memory["bytes"], "measured_bytes": memory["measured_bytes"]})
    return rows


def cli_scale_section(m: int, count: int) -> list[dict]:
    """``count`` drawn queries (as in ``scaling``) through both command lines: where the
    per-query work is what the shared executor saves."""
    figures, same, answers = both_clis(drawn(count), m)
    families = SharedTopK(drawn(count)).stats()["families"]
    return [{"section": "cli scale", "case": case, "queries": count, "objects": m,
             "families": families if case == "shared" else count, "cpu_s": cpu, "objects_per_s": m / cpu,
             "vs_unshared": figures["unshared mintopk"][0] / cpu, "same_answers": same, "answers": answers,
             "peak_rss_bytes": rss} for case, (cpu, rss) in figures.items()]


def scaling_section(m: int, counts: tuple[int, ...]) -> list[dict]:
    ids, t, x = stream(m)
    SharedTopK(drawn(2)).process(ids[:5000], t[:5000], x[:5000])  # kernels loaded before timing
    rows, base = [], None
    for count in counts:
        executor = SharedTopK(drawn(count))
        cpu, answers = 0.0, 0
        for lo in range(0, m, 1 << 16):
            part = slice(lo, lo + (1 << 16))
            started = time.process_time()
            answers += len(executor.answers(ids[part], t[part], x[part]).query)
            cpu += time.process_time() - started
        stats = executor.stats()
        base = base or cpu
        rows.append({"section": "scaling", "case": f"{count} queries", "queries": count, "objects": m,
                     "families": stats["families"], "cpu_s": cpu, "objects_per_s": m / cpu, "answers": answers,
                     "cost_per_query": cpu / count, "vs_one_query": cpu / base, "candidates": stats["candidates"], "bytes": stats["bytes"],
                     "measured_bytes": stats["measured_bytes"]})
    return rows


def run(quick: bool = False) -> list[dict]:
    m = QUICK_OBJECTS if quick else OBJECTS
    rows = [{"bench": "multi", **row} for row in cli_section(m)]
    rows += [{"bench": "multi", **row} for row in cli_scale_section(m, 100 if quick else 1000)]
    counts = (1, 10, 100) if quick else (1, 10, 100, 1000)
    rows += [{"bench": "multi", **row} for row in scaling_section(m, counts)]
    return rows


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    print(table(run(quick=parser.parse_args().quick), COLUMNS))
