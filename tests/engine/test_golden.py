"""Golden state files of every released format restore and continue exactly, and alike.

Each file (``tests/engine/golden/<version>/<algorithm>-<kind>.json``, written by
``tests/engine/golden/generate.py`` with the engine of that version) holds a stream, a query
and the state after ``cut`` slides.  The restored algorithm finishes the stream; every later
answer must equal the exact answer of the whole stream (the oracle's, or for approximate
algorithms an answer of the right length) at every slide.  The files of every two formats hold the same
streams, and their states continue with identical answers (exact or approximate).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import engine
from tests.engine.golden.generate import golden_query, stream_arrays
from tests.streams import assert_same_answer

GOLDEN = Path(__file__).parent / "golden"
FILES = sorted(GOLDEN.glob("v*/*.json"))
EXACT = {info.name: info.exact for info in engine.available()}
REFERENCE = {info.name: ("oracle" if info.stream == "single" else "oracle-incomplete") for info in engine.available()}


def test_every_algorithm_has_a_golden_file_of_every_format():
    versions = sorted(path.name for path in GOLDEN.glob("v*") if path.is_dir())
    assert "v1" in versions
    for version in versions:
        present = {path.stem for path in (GOLDEN / version).glob("*.json")}
        for name in EXACT:
            for kind in ("count", "time"):
                assert f"{name}-{kind}" in present, f"{version} lacks {name}-{kind}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_state_restores_and_continues_exactly(path):
    doc = json.loads(path.read_text())
    q = golden_query(doc["kind"])
    assert doc["state"]["format_version"] == int(path.parent.name[1:])
    restored = engine.restore(doc["state"], query=q, algorithm=doc["algorithm"], params={})
    reference = engine.create(REFERENCE[doc["algorithm"]], q)
    for index, batch in enumerate(engine.slides(stream_arrays(doc["stream"]), q)):
        reference.process(batch)
        if index < doc["cut"]:
            continue
        restored.process(batch)
        context = f"{path.parent.name}/{path.stem} slide {index}"
        if EXACT[doc["algorithm"]]:
            assert_same_answer(reference.topk(), restored.topk(), context)
        else:
            assert len(restored.topk()) == len(reference.topk()), context
    restored.check()


def continued_answers(path: Path) -> tuple[list, list]:
    """The stream of a golden file, and the answers its restored state gives after the cut."""
    doc = json.loads(path.read_text())
    q = golden_query(doc["kind"])
    restored = engine.restore(doc["state"], query=q, algorithm=doc["algorithm"], params={})
    answers = []
    for index, batch in enumerate(engine.slides(stream_arrays(doc["stream"]), q)):
        if index >= doc["cut"]:
            restored.process(batch)
            answers.append(restored.topk())
    return doc["stream"], answers


PAIRS = [(older, newer) for newer in FILES for older in FILES
         if older.stem == newer.stem and older.parent.name < newer.parent.name]


def test_every_newer_format_is_compared_with_the_older_ones():
    versions = {path.parent.name for path in FILES}
    assert len(PAIRS) == len(EXACT) * 2 * (len(versions) * (len(versions) - 1) // 2)


@pytest.mark.parametrize("older, newer", PAIRS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_golden_states_of_two_formats_continue_with_identical_answers(older, newer):
    old_stream, old_answers = continued_answers(older)
    new_stream, new_answers = continued_answers(newer)
    assert old_stream == new_stream
    assert len(old_answers) == len(new_answers) > 0
    for index, (old, new) in enumerate(zip(old_answers, new_answers)):
        assert_same_answer(old, new, f"{newer.stem} slide {index} after the cut")
