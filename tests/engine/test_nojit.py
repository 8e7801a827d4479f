"""Every registered algorithm runs as plain Python with ``NUMBA_DISABLE_JIT=1`` (debuggable).

One subprocess with the JIT disabled runs every algorithm of ``engine.available()`` over the
golden files' small streams (count and time windows, object and attribute streams), checking
its invariants after every slide and its answer against the oracle of its stream model (exact
algorithms: equal at every slide; approximate ones: an answer of the right length).
"""

from __future__ import annotations


import pytest

import engine
from tests.nojit import run_script

SCRIPT = """
import json
import numba
import engine
from tests.engine.golden.generate import golden_query, golden_stream, stream_arrays
from tests.streams import assert_same_answer

assert numba.config.DISABLE_JIT, "the JIT is on"
found = {}
for info in engine.available():
    try:
        for kind in ("count", "time"):
            q = golden_query(kind)
            reference = engine.create("oracle" if info.stream == "single" else "oracle-incomplete", q)
            algorithm = engine.create(info.name, q)
            for batch in engine.slides(stream_arrays(golden_stream(info.name, kind)), q):
                reference.process(batch)
                algorithm.process(batch)
                algorithm.check()
                algorithm.stats()
                if info.exact:
                    assert_same_answer(reference.topk(), algorithm.topk(), f"{kind} slide {batch.index}")
                else:
                    assert len(algorithm.topk()) == len(reference.topk()), f"{kind} slide {batch.index}"
        found[info.name] = "ok"
    except Exception as error:
        found[info.name] = f"{type(error).__name__}: {error}"
print(json.dumps(found))
"""


@pytest.fixture(scope="module")
def without_jit() -> dict[str, str]:
    """Each algorithm's outcome in a process with the JIT disabled."""
    return run_script(SCRIPT, no_jit=True)


@pytest.mark.parametrize("name", [info.name for info in engine.available()])
def test_every_algorithm_runs_as_plain_python(without_jit, name):
    assert without_jit.get(name) == "ok", without_jit.get(name, "not run")
