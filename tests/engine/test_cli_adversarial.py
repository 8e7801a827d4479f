"""The command line as an adversarial user drives it: odd numbers, odd files, odd outputs,
queries at the int64 limits, and every exact single-stream algorithm against an independent
reference (``tests/reference.py``) on adversarial files, at every slide."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import engine
from engine import cli, registry
from tests.reference import reference_answers

EXACT_SINGLE = [info.name for info in engine.available() if info.stream == "single" and info.exact]
PREVIOUS_OUTPUT = "answers of an earlier run\n"


def run(capsys, *args: str) -> tuple[int, str]:
    """``python -m engine`` in this process: the exit status and stderr (an exception fails the test)."""
    status = cli.main(list(args))
    return status, capsys.readouterr().err


def assert_refused(status: int, message: str, fragments: list[str]) -> None:
    assert status == 2
    assert message.startswith("error: ") and len(message.splitlines()) == 1, message
    for fragment in fragments:
        assert fragment in message, message


def write_rows(path: Path, header: str, rows) -> Path:
    path.write_text(header + "\n" + "".join(",".join(map(repr, row)) + "\n" for row in rows))
    return path


def output_lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def expected_lines(ids, t, x, weights, k, window, slide, kind) -> list[dict]:
    """``run``'s slide, end, ids and scores, from the plain-Python reference."""
    return [{"slide": j, "end": end, "ids": [o[0] for o in answer], "scores": [o[1] for o in answer]}
            for j, (end, answer) in enumerate(reference_answers(ids, t, x, weights, k, window, slide, kind))]


# ---------------------------------------------------- exact algorithms on adversarial files

def adversarial_file(case: str):
    """``(ids, t, features, weights, k, window, slide, kind)`` of an adversarial stream."""
    rng = np.random.default_rng(len(case))
    m = 47
    steady = list(range(m))
    ties = rng.integers(0, 3, (m, 2)).astype(float).tolist()
    duplicate_ids = rng.integers(0, 4, m).tolist()
    if case == "ties, duplicate ids, s = 1":
        return duplicate_ids, steady, ties, [1.0, 0.0], 3, 5, 1, "count"
    if case == "increasing, s = n":
        return steady, steady, [[float(i), 1.0] for i in steady], [1.0, 1.0], 2, 6, 6, "count"
    if case == "decreasing, negative weight":
        return steady, steady, [[float(-i), float(i % 3)] for i in steady], [-1.0, 0.5], 4, 8, 2, "count"
    if case == "k > window":
        return steady, steady, ties, [0.5, 1.0], 20, 6, 3, "count"
    if case == "constant, zero weights":
        return duplicate_ids, steady, [[7.0, 7.0]] * m, [0.0, 0.0], 3, 4, 2, "count"
    if case == "time, empty slides, negative t":
        t = np.cumsum(np.where(rng.random(m) < 0.2, rng.integers(5, 15, m), rng.integers(0, 2, m))) - 60
        return steady, t.tolist(), ties, [1.0, 1.0], 3, 6, 2, "time"
    if case == "time, bursts of equal t, k > window":
        return duplicate_ids, sorted(rng.integers(0, 6, m).tolist()), ties, [1.0, -1.0], 30, 4, 1, "time"
    if case == "signed zeros":
        return steady, steady, [[0.0, -0.0] if i % 2 else [-0.0, 0.0] for i in steady], [1.0, 1.0], 2, 4, 2, "count"
    raise ValueError(case)


ADVERSARIAL = ["ties, duplicate ids, s = 1", "increasing, s = n", "decreasing, negative weight", "k > window",
               "constant, zero weights", "time, empty slides, negative t", "time, bursts of equal t, k > window",
               "signed zeros"]


@pytest.mark.parametrize("case", ADVERSARIAL)
@pytest.mark.parametrize("name", EXACT_SINGLE)
def test_exact_algorithms_answer_as_the_reference_at_every_slide(tmp_path, capsys, name, case):
    ids, t, x, weights, k, window, slide, kind = adversarial_file(case)
    source = write_rows(tmp_path / "data.csv", "id,t,a,b", [(i, when, *row) for i, when, row in zip(ids, t, x)])
    output = tmp_path / "out.jsonl"
    status, message = run(capsys, "run", "--algorithm", name, "--k", str(k), "--window", str(window),
                          "--slide", str(slide), "--kind", kind, "--weights=" + ",".join(map(repr, weights)),
                          "--input", str(source), "--output", str(output))
    assert status == 0, message
    got = [{key: line[key] for key in ("slide", "end", "ids", "scores")} for line in output_lines(output)]
    expected = expected_lines(ids, t, x, weights, k, window, slide, kind)
    assert len(expected) > 1
    if "empty slides" in case:
        assert any(not any(line["end"] - slide <= when < line["end"] for when in t) for line in expected)
    assert got == expected


@pytest.mark.parametrize("k", [10**12, 2**63 - 1])
@pytest.mark.parametrize("kind", ["count", "time"])
def test_the_shared_executor_answers_a_huge_k_as_the_reference(k, kind):
    """engine.multi.SharedTopK sized its answer buffers by k: 29 TiB for k = 10**12 (MemoryError),
    numpy's 'Maximum allowed dimension exceeded' for 2**63 - 1.  An answer holds at most every
    record of the list, which now bounds them."""
    from engine.multi import SharedTopK

    ids, t, x, *_ = adversarial_file("time, bursts of equal t, k > window")
    queries = [engine.Query(weights=[1.0, -1.0], k=k, window=4, slide=2, kind=kind),
               engine.Query(weights=[1.0, -1.0], k=3, window=4, slide=2, kind=kind),
               engine.Query(weights=[0.5, 1.0], k=k, window=6, slide=3, kind=kind)]
    executor = SharedTopK(queries)
    results = executor.process(np.array(ids[:20]), np.array(t[:20]), np.array(x[:20]))
    results += executor.process(np.array(ids[20:]), np.array(t[20:]), np.array(x[20:]))
    executor.check()
    for handle, query in enumerate(queries):
        expected = [(end, [o[0] for o in answer], [o[1] for o in answer]) for end, answer in
                    reference_answers(ids, t, x, query.weights, query.k, query.window, query.slide, kind)]
        got = [(r.end, r.answer.ids.tolist(), r.answer.scores.tolist()) for r in results if r.query == handle]
        assert got == expected


@pytest.mark.parametrize("algorithm", ["shared", "oracle"])
def test_run_many_answers_as_the_reference_with_a_huge_k(tmp_path, capsys, algorithm):
    """A k far above the rows (10**12) answers every object of the window; the shared executor
    once sized its answer buffers by k and ran out of memory."""
    ids, t, x, *_ = adversarial_file("time, empty slides, negative t")
    source = write_rows(tmp_path / "data.csv", "id,t,a,b", [(i, when, *row) for i, when, row in zip(ids, t, x)])
    workload = [{"weights": [1.0, -1.0], "k": 10**12, "window": 6, "slide": 2},
                {"weights": [0.5, 1.0], "k": 2, "window": 9, "slide": 3, "kind": "time"}]
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps(workload))
    output = tmp_path / "out.jsonl"
    status, message = run(capsys, "run-many", "--algorithm", algorithm, "--queries", str(queries),
                          "--input", str(source), "--output", str(output))
    assert status == 0, message
    lines = output_lines(output)
    for position, query in enumerate(workload):
        expected = expected_lines(ids, t, x, query["weights"], query["k"], query["window"], query["slide"],
                                  query.get("kind", "count"))
        got = [{key: line[key] for key in ("slide", "end", "ids", "scores")} for line in lines
               if line["query"] == position]
        assert got == expected


# --------------------------------------------------------------------------- odd numbers

@pytest.mark.parametrize("field,column", [("1_0", "id"), ("٣", "id"), ("４", "t"), ("1_0.5", "x"), ("٠.٥", "x")])
def test_numbers_only_python_reads_are_refused(tmp_path, capsys, field, column):
    """Python's int and float read 1_0 as 10 and Unicode digits as digits; no CSV reader does."""
    row = {"id": "1", "t": "2", "x": "0.5", column: field}
    source = tmp_path / "data.csv"
    source.write_text(f"id,t,x\n3,1,0.25\n{row['id']},{row['t']},{row['x']}\n", encoding="utf-8")
    status, message = run(capsys, "run", "--algorithm", "oracle", "--k", "1", "--window", "2", "--slide", "1",
                          "--input", str(source), "--output", str(tmp_path / "out.jsonl"))
    assert_refused(status, message, [f"{source} line 3", f"column {column}", repr(field), "is not"])


@pytest.mark.parametrize("flag,value,problem", [
    ("--k", "1_0", "argument --k: expected a whole number, got '1_0'"),
    ("--window", "١٠", "argument --window: expected a whole number, got '١٠'"),
    ("--weights", "1_000", "argument --weights: expected numbers separated by commas, got '1_000'"),
    ("--max-slides", "1_000", "argument --max-slides: must be a whole number >= 1, got '1_000'"),
    ("--param", "memory=1_00", "--param: parameter memory of sao must be int, got '1_00'"),
    ("--param", "memory=５", "--param: parameter memory of sao must be int, got '５'"),
])
def test_flags_refuse_numbers_only_python_reads(tmp_path, capsys, flag, value, problem):
    """The command line takes the numbers the input files may hold, not 1_000 or Unicode digits."""
    source = write_rows(tmp_path / "data.csv", "id,t,x", [(1, 1, 0.5), (2, 2, 0.25)])
    args = {"--k": "1", "--window": "10", "--slide": "5", flag: value}
    command = ["run", "--algorithm", "sao", *(part for pair in args.items() for part in pair),
               "--input", str(source), "--output", str(tmp_path / "out.jsonl")]
    try:
        status = cli.main(command)
    except SystemExit as exit:  # argparse refuses a flag's value itself
        status = exit.code
    message = capsys.readouterr().err
    assert status == 2 and problem in message.splitlines()[-1], message
    assert not (tmp_path / "out.jsonl").exists()


def test_parquet_text_numbers_only_python_reads_are_refused(tmp_path, capsys):
    import pyarrow
    import pyarrow.parquet

    source = tmp_path / "data.parquet"
    pyarrow.parquet.write_table(pyarrow.table({"id": [1, 2], "t": [1, 2], "x": ["0.5", "2_5"]}), source)
    status, message = run(capsys, "run", "--algorithm", "oracle", "--k", "1", "--window", "2", "--slide", "1",
                          "--input", str(source), "--output", str(tmp_path / "out.jsonl"))
    assert_refused(status, message, [f"{source} row 2", "column x", "'2_5' is not a number"])


def test_parquet_decimal_columns_read_as_numbers_ids_and_times_exactly(tmp_path, capsys):
    """A database's DECIMAL columns (DuckDB, Spark) were refused as not numbers."""
    import decimal

    import pyarrow
    import pyarrow.parquet

    source = tmp_path / "data.parquet"
    big = 2**63 - 2  # beyond float64's exact integers: an id read through a double would change
    pyarrow.parquet.write_table(pyarrow.table({
        "id": pyarrow.array([decimal.Decimal(big), decimal.Decimal(2), decimal.Decimal(3)], pyarrow.decimal128(20, 0)),
        "t": pyarrow.array([decimal.Decimal(v) for v in (1, 2, 3)], pyarrow.decimal128(5, 0)),
        "x": pyarrow.array([decimal.Decimal(v) for v in ("1.50", "2.25", "-7.50")], pyarrow.decimal128(6, 2))}), source)
    output = tmp_path / "out.jsonl"
    status, message = run(capsys, "run", "--algorithm", "oracle", "--k", "3", "--window", "3", "--slide", "1",
                          "--kind", "time", "--input", str(source), "--output", str(output))
    assert status == 0, message
    assert [(line["end"], line["ids"], line["scores"]) for line in output_lines(output)] == \
        [(2, [big], [1.5]), (3, [2, big], [2.25, 1.5])]


@pytest.mark.parametrize("command", ["run", "run-many"])
def test_parquet_decimal_features_read_as_the_nearest_double_as_in_a_csv(tmp_path, capsys, command):
    """Arrow's decimal-to-double cast is not correctly rounded: ``2.675`` as ``DECIMAL(6, 3)``
    was read as 2.6750000000000003, so a DuckDB or Spark export of the same digits as a CSV file
    scored and ranked differently (13 % of random two-decimal amounts were off by one ulp)."""
    import decimal

    import pyarrow
    import pyarrow.parquet

    digits = ["2.675", "166.330", "1.005", "-8.745", "0.285", "12.340", "166.330", "2.675"]
    source = tmp_path / "amounts.parquet"
    pyarrow.parquet.write_table(pyarrow.table({
        "id": list(range(len(digits))), "t": list(range(len(digits))),
        "x": pyarrow.array([decimal.Decimal(v) for v in digits], pyarrow.decimal128(6, 3))}), source)
    csv = write_rows(tmp_path / "amounts.csv", "id,t,x", [(i, i, float(v)) for i, v in enumerate(digits)])
    from_parquet, from_csv = answers_of_each(tmp_path, capsys, command, (source, csv), k=8, window=8, slide=8,
                                             kind="count")
    (answer,) = from_parquet
    assert sorted(answer["scores"], reverse=True) == sorted((float(v) for v in digits), reverse=True)
    assert from_parquet == from_csv


@pytest.mark.parametrize("command", ["run", "run-many"])
def test_parquet_dictionary_columns_read_as_their_values(tmp_path, capsys, command):
    """A pandas category column is a dictionary-encoded column in Parquet (text or numbers): it
    was refused as not numbers, while the same values in a plain column ran."""
    import pyarrow
    import pyarrow.parquet

    values = {"id": [3, 1, 2, 4], "t": [1, 1, 2, 3], "x": ["0.5", "2.5", "0.5", "1e1"]}
    plain, encoded = tmp_path / "plain.parquet", tmp_path / "encoded.parquet"
    pyarrow.parquet.write_table(pyarrow.table(values), plain)
    pyarrow.parquet.write_table(pyarrow.table({name: pyarrow.array(column).dictionary_encode()
                                               for name, column in values.items()}), encoded)
    from_plain, from_encoded = answers_of_each(tmp_path, capsys, command, (plain, encoded), k=2, window=2, slide=1,
                                               kind="time")
    assert from_encoded == from_plain != []


def answers_of_each(tmp_path, capsys, command, inputs, *, k, window, slide, kind):
    """The output lines of ``command`` on each input: ``run`` of the oracle, or ``run-many`` of one
    query, with weight 1 on column ``x``."""
    workload = tmp_path / "q.json"
    workload.write_text(json.dumps([{"weights": [1.0], "k": k, "window": window, "slide": slide, "kind": kind}]))
    query = (["--algorithm", "oracle", "--k", str(k), "--window", str(window), "--slide", str(slide), "--kind", kind]
             if command == "run" else ["--queries", str(workload)])
    answers = []
    for path in inputs:
        output = tmp_path / f"{path.name}.jsonl"
        status, message = run(capsys, command, *query, "--input", str(path), "--output", str(output))
        assert status == 0, message
        answers.append(output_lines(output))
    return answers


def test_parquet_decimal_ids_beyond_int64_are_refused(tmp_path, capsys):
    import decimal

    import pyarrow
    import pyarrow.parquet

    source = tmp_path / "data.parquet"
    pyarrow.parquet.write_table(pyarrow.table({
        "id": pyarrow.array([decimal.Decimal(2**63), decimal.Decimal(2)], pyarrow.decimal128(20, 0)),
        "t": [1, 2], "x": [1.0, 2.0]}), source)
    status, message = run(capsys, "run", "--algorithm", "oracle", "--k", "1", "--window", "2", "--slide", "1",
                          "--input", str(source), "--output", str(tmp_path / "out.jsonl"))
    assert_refused(status, message, [str(source), "column id: decimal128(20, 0) does not fit in int64"])


@pytest.mark.parametrize("header,fragment", [(",id,t,x", "column 1 has no name (a row index, as pandas' to_csv"),
                                             ("id,t,x,", "column 4 has no name")])
def test_a_column_without_a_name_is_named_by_its_position(tmp_path, capsys, header, fragment):
    source = tmp_path / "data.csv"
    source.write_text(header + "\n" + ("0,1,1,0.5\n" if header.startswith(",") else "1,1,0.5,\n"))
    status, message = run(capsys, "run", "--algorithm", "oracle", "--k", "1", "--window", "1", "--slide", "1",
                          "--input", str(source), "--output", str(tmp_path / "out.jsonl"))
    assert_refused(status, message, [f"{source} line 1", fragment])


# ------------------------------------------------------------------- attribute-stream files

ATTRIBUTES = [(1, 0, 0.5, 1), (2, 1, 0.25, 2), (1, 1, 1.0, 3), (3, 0, 0.75, 3), (2, 0, 0.5, 4)]


@pytest.mark.parametrize("name", ["oracle-incomplete", "sla"])
def test_an_attribute_stream_with_a_seq_column_reads_as_without(tmp_path, capsys, name):
    """The attribute-stream datasets ``pipelines.ingest`` writes have a ``seq`` column."""
    plain = write_rows(tmp_path / "plain.csv", "id,stream,value,t", ATTRIBUTES)
    with_seq = write_rows(tmp_path / "seq.csv", "id,seq,t,stream,value",
                          [(i, seq, t, s, v) for seq, (i, s, v, t) in enumerate(ATTRIBUTES)])
    outputs = []
    for source in (plain, with_seq):
        outputs.append(tmp_path / f"{source.stem}.jsonl")
        status, message = run(capsys, "run", "--algorithm", name, "--k", "2", "--window", "2", "--slide", "1",
                              "--input", str(source), "--output", str(outputs[-1]))
        assert status == 0, message
    without_seq, with_seq = ([{key: value for key, value in line.items() if key != "measured_bytes"}
                              for line in output_lines(output)] for output in outputs)
    assert with_seq == without_seq
    assert [line["ids"] for line in with_seq] == [[1], [1, 2], [1, 2], [1, 3], [3, 2]]


@pytest.mark.parametrize("command", ["run", "run-many"])
def test_a_single_stream_algorithm_refuses_an_attribute_stream(tmp_path, capsys, command):
    """Not stream numbers scored as a feature: the file is an attribute stream."""
    source = write_rows(tmp_path / "tuples.csv", "id,stream,value,t", ATTRIBUTES)
    queries = tmp_path / "q.json"
    queries.write_text('[{"weights": [1, 1], "k": 1, "window": 2, "slide": 1}]')
    arguments = ["--algorithm", "mintopk", "--k", "1", "--window", "2", "--slide", "1"] if command == "run" \
        else ["--queries", str(queries)]
    status, message = run(capsys, command, *arguments, "--input", str(source), "--output", str(tmp_path / "o.jsonl"))
    assert_refused(status, message, [f"{source} line 1", "stream and value", "attribute stream", "sla"])


@pytest.mark.parametrize("rows,weights,fragments", [
    ([(1, 0, 1.0, 1), (1, 20_000_000, 1.0, 2)], [],
     ["line 3", "column stream: 20000000 makes 20,000,001 streams, but stream 1 never occurs", "--weights"]),
    ([(1, 0, 1.0, 1), (2, 2, 0.5, 2)], [], ["line 3", "makes 3 streams, but stream 1 never occurs"]),
    ([(2, 0, 0.5, 1), (1, 0, 1.0, 2), (1, 1, 1.0, 3)], ["--weights=1e308,1e308"],
     ["line 3", "object 1", "add up to inf, beyond the largest float", "scale the weights down"]),
])
@pytest.mark.parametrize("name", ["oracle-incomplete", "sla"])
def test_attribute_streams_that_would_blow_up_are_refused(tmp_path, capsys, rows, weights, fragments, name):
    """A stray stream number made as many streams (13 GB for a two-row file); weights whose
    sums overflow gave scores of Infinity, which is not JSON."""
    source = write_rows(tmp_path / "tuples.csv", "id,stream,value,t", rows)
    status, message = run(capsys, "run", "--algorithm", name, "--k", "2", "--window", "2", "--slide", "1", *weights,
                          "--input", str(source), "--output", str(tmp_path / "out.jsonl"))
    assert_refused(status, message, [str(source), *fragments])


@pytest.mark.parametrize("name", ["oracle-incomplete", "sla"])
def test_attribute_streams_with_unused_numbers_run_with_weights_and_large_scores_stay_finite(tmp_path, capsys, name):
    source = write_rows(tmp_path / "tuples.csv", "id,stream,value,t",
                        [(1, 0, 1.0, 1), (2, 2, 0.5, 2), (1, 2, 1.0, 3), (2, 0, 1.0, 4)])
    output = tmp_path / "out.jsonl"
    status, message = run(capsys, "run", "--algorithm", name, "--k", "2", "--window", "2", "--slide", "2",
                          "--weights=1e307,0,1e307", "--input", str(source), "--output", str(output))
    assert status == 0, message
    assert [(line["ids"], line["scores"]) for line in output_lines(output)] == \
        [([1, 2], [1e307, 5e306]), ([2, 1], [1e307, 1e307])]  # a tie: the newest tuple first


@pytest.mark.parametrize("header", ["id,stream,value,t", "id,t,x", "id,seq,t,stream,value"])
def test_a_header_only_file_gives_an_empty_output(tmp_path, capsys, header):
    source = tmp_path / "data.csv"
    source.write_text(header + "\n")
    name = "mintopk" if header == "id,t,x" else "sla"
    for kind in ("count", "time"):
        output = tmp_path / f"{kind}.jsonl"
        status, message = run(capsys, "run", "--algorithm", name, "--k", "1", "--window", "2", "--slide", "1",
                              "--kind", kind, "--input", str(source), "--output", str(output))
        assert status == 0, message
        assert output.read_text() == ""


@pytest.mark.parametrize("algorithm", ["shared", "mintopk"])
def test_run_many_over_a_header_only_file_gives_an_empty_output(tmp_path, capsys, algorithm):
    source = tmp_path / "data.csv"
    source.write_text("id,t,x\n")
    queries = tmp_path / "q.json"
    queries.write_text('[{"weights": [1], "k": 1, "window": 2, "slide": 1, "kind": "time"},'
                       ' {"weights": [1], "k": 1, "window": 2, "slide": 1}]')
    output = tmp_path / "out.jsonl"
    status, message = run(capsys, "run-many", "--algorithm", algorithm, "--queries", str(queries),
                          "--input", str(source), "--output", str(output))
    assert status == 0, message
    assert output.read_text() == ""


def test_an_algorithm_refusing_its_input_mid_stream_names_the_slide_and_keeps_the_output(tmp_path, capsys):
    """eaa refuses an object seen in one stream more often than ``occurrences`` while valid."""
    source = write_rows(tmp_path / "tuples.csv", "id,stream,value,t",
                        [(1, 0, 0.5, 1), (2, 1, 0.25, 2), (1, 0, 1.0, 3), (3, 0, 0.1, 4)])
    output = tmp_path / "out.jsonl"
    output.write_text(PREVIOUS_OUTPUT)
    status, message = run(capsys, "run", "--algorithm", "eaa", "--k", "2", "--window", "4", "--slide", "2",
                          "--input", str(source), "--output", str(output))
    assert_refused(status, message, [f"{source} lines 4-5 (slide 1, end 4)", "object 1 occurred 2 times",
                                     "occurrences=1"])
    assert output.read_text() == PREVIOUS_OUTPUT
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.jsonl", "tuples.csv"]
    status, message = run(capsys, "run", "--algorithm", "eaa", "--param", "occurrences=2", "--k", "2",
                          "--window", "4", "--slide", "2", "--input", str(source), "--output", str(output))
    assert status == 0, message
    assert [line["ids"] for line in output_lines(output)] == [[1, 2], [1, 2]]


# ------------------------------------------------------------------ the int64 limits

GOOD_CSV = "id,t,x\n1,1,0.5\n2,2,0.25\n3,3,1.5\n4,4,2.0\n"
BEYOND = str(2**63)


@pytest.mark.parametrize("arguments,fragment", [
    (["--k", BEYOND, "--window", "4", "--slide", "2"], f"k must be at most {2**63 - 1} (int64), got {BEYOND}"),
    (["--k", "1", "--window", "1" + "0" * 22, "--slide", "1"], "window must be at most"),
    (["--k", "1", "--window", "1" + "0" * 22, "--slide", "1" + "0" * 22], "window must be at most"),
    (["--k", "1", "--window", str(2**63 - 2), "--slide", str(2**62 - 1), "--kind", "time"],
     "a time window needs window + slide at most"),
])
@pytest.mark.parametrize("name", ["mintopk", "kskyband", "tma", "sao"])
def test_query_fields_beyond_int64_are_an_invalid_query(tmp_path, capsys, arguments, fragment, name):
    source = tmp_path / "data.csv"
    source.write_text(GOOD_CSV)
    status, message = run(capsys, "run", "--algorithm", name, *arguments, "--input", str(source),
                          "--output", str(tmp_path / "out.jsonl"))
    assert_refused(status, message, ["invalid query", fragment])


@pytest.mark.parametrize("fields,message", [
    (dict(k=2**63), "k must be at most 9223372036854775807 \\(int64\\), got 9223372036854775808"),
    (dict(window=10**30, slide=1), "window must be at most"),
    (dict(window=2**62, slide=2**62, kind="time"), "a time window needs window \\+ slide at most"),
])
def test_query_fields_beyond_int64_are_a_value_error_of_the_query(fields, message):
    """Not an OverflowError of SharedTopK or SAO, a numba TypingError of the k-skyband, or a time
    window no t fits (the engine's contract: bad arguments raise ValueError)."""
    with pytest.raises(ValueError, match=message):
        engine.Query(**{"weights": [1.0], "k": 1, "window": 4, "slide": 2, **fields})
    engine.Query(weights=[1.0], k=2**63 - 1, window=2**63 - 1, slide=2**63 - 1)
    engine.Query(weights=[1.0], k=1, window=2**62, slide=2**61, kind="time")


@pytest.mark.parametrize("entry,fragment", [
    ('{"weights": [1], "k": ' + BEYOND + ', "window": 2, "slide": 1}', "query 1: k must be at most"),
    ('{"weights": [1], "k": 1, "window": 1' + "0" * 22 + ', "slide": 1}', "query 1: window must be at most"),
    ('{"weights": [1], "k": 1, "window": 2, "slide": 1, "k": 2}', "field k appears twice"),
    ('{"weights": [1' + "0" * 400 + '], "k": 1, "window": 2, "slide": 1}',
     "query 1: weights must be finite numbers, got an integer beyond the largest float"),
])
def test_bad_workload_entries_are_refused(tmp_path, capsys, entry, fragment):
    source = tmp_path / "data.csv"
    source.write_text(GOOD_CSV)
    queries = tmp_path / "q.json"
    queries.write_text('[{"weights": [1], "k": 1, "window": 2, "slide": 1},\n' + entry + "]")
    status, message = run(capsys, "run-many", "--queries", str(queries), "--input", str(source),
                          "--output", str(tmp_path / "out.jsonl"))
    assert_refused(status, message, [str(queries), fragment])


def test_a_weight_beyond_the_largest_float_is_a_value_error_of_the_query():
    """An integer weight of 400 digits raised OverflowError from float(), a traceback on the
    command line (engine's contract: bad arguments raise ValueError)."""
    with pytest.raises(ValueError, match="weights must be finite numbers, got an integer beyond the largest float"):
        engine.Query(weights=[1.0, 10**400], k=1, window=2, slide=1)


def test_a_workload_nested_too_deeply_is_refused_with_one_line(tmp_path, capsys):
    """json raised RecursionError (a traceback) on 100,000 nested lists."""
    source = tmp_path / "data.csv"
    source.write_text(GOOD_CSV)
    queries = tmp_path / "q.json"
    queries.write_text("[" * 100_000 + "]" * 100_000)
    status, message = run(capsys, "run-many", "--queries", str(queries), "--input", str(source),
                          "--output", str(tmp_path / "out.jsonl"))
    assert_refused(status, message, [f"{queries}: lists or objects nested too deeply to read"])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data.csv", "q.json"]


def test_a_workload_with_a_byte_order_mark_reads_as_a_csv_with_one_does(tmp_path, capsys):
    source = tmp_path / "data.csv"
    source.write_text("\ufeff" + GOOD_CSV, encoding="utf-8")
    queries = tmp_path / "q.json"
    queries.write_text('\ufeff[{"weights": [1], "k": 1, "window": 2, "slide": 2}]', encoding="utf-8")
    output = tmp_path / "out.jsonl"
    status, message = run(capsys, "run-many", "--queries", str(queries), "--input", str(source),
                          "--output", str(output))
    assert status == 0, message
    assert [line["ids"] for line in output_lines(output)] == [[1], [4]]


def test_an_integer_parameter_beyond_int64_is_refused(tmp_path, capsys):
    source = tmp_path / "data.csv"
    source.write_text(GOOD_CSV)
    status, message = run(capsys, "run", "--algorithm", "sao", "--param", "memory=" + BEYOND, "--k", "1",
                          "--window", "2", "--slide", "1", "--input", str(source),
                          "--output", str(tmp_path / "o.jsonl"))
    assert_refused(status, message, ["--param", "memory of sao must fit in int64 (at most 9223372036854775807)", BEYOND])


class OutOfMemory(registry.algorithm_class("oracle")):
    """The oracle, short of memory at its second slide (as mintopk's window marks are for a
    window of 10**12 objects sliding by 1)."""

    name = "test-out-of-memory"
    summary = "test double"

    def process(self, batch):
        if batch.index == 1:
            raise MemoryError("Unable to allocate 14.6 TiB for an array")
        super().process(batch)


def test_running_out_of_memory_is_one_error_line_and_keeps_the_output(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(registry._REGISTRY, OutOfMemory.name, OutOfMemory)
    source = tmp_path / "data.csv"
    source.write_text(GOOD_CSV)
    output = tmp_path / "out.jsonl"
    output.write_text(PREVIOUS_OUTPUT)
    status, message = run(capsys, "run", "--algorithm", OutOfMemory.name, "--k", "1", "--window", "2",
                          "--slide", "1", "--input", str(source), "--output", str(output))
    assert_refused(status, message, ["out of memory: Unable to allocate 14.6 TiB"])
    assert output.read_text() == PREVIOUS_OUTPUT
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data.csv", "out.jsonl"]


# ------------------------------------------------------------------------------ outputs

def test_an_output_that_is_a_named_pipe_is_written_through_not_replaced(tmp_path, capsys):
    """As ``--output /dev/null`` or ``/dev/stdout``: renaming a file over a device (as root) or a
    pipe would replace the device or the pipe itself."""
    source = tmp_path / "data.csv"
    source.write_text(GOOD_CSV)
    pipe = tmp_path / "answers.pipe"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    try:
        status, message = run(capsys, "run", "--algorithm", "oracle", "--k", "1", "--window", "2", "--slide", "2",
                              "--input", str(source), "--output", str(pipe))
        received = os.read(reader, 1 << 16).decode()
    finally:
        os.close(reader)
    assert status == 0, message
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)
    assert [json.loads(line)["ids"] for line in received.splitlines()] == [[1], [4]]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["answers.pipe", "data.csv"]


def test_an_output_that_is_a_symbolic_link_replaces_its_target_and_keeps_the_link(tmp_path, capsys):
    source = tmp_path / "data.csv"
    source.write_text(GOOD_CSV)
    (tmp_path / "runs").mkdir()
    target = tmp_path / "runs" / "answers.jsonl"
    target.write_text(PREVIOUS_OUTPUT)
    link = tmp_path / "latest.jsonl"
    link.symlink_to(target)
    status, message = run(capsys, "run", "--algorithm", "oracle", "--k", "1", "--window", "2", "--slide", "2",
                          "--input", str(source), "--output", str(link))
    assert status == 0, message
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert [line["ids"] for line in output_lines(target)] == [[1], [4]]
    assert sorted(path.name for path in target.parent.iterdir()) == ["answers.jsonl"]


@pytest.mark.parametrize("limit", [("CHUNK_ANSWERS", 1), ("CHUNK_ANSWERS", 200), ("CHUNK_ROWS", 4)])
def test_run_many_in_small_chunks_answers_as_in_one(tmp_path, capsys, monkeypatch, limit):
    """The shared executor takes the rows in chunks of a bounded number of answers (10,000
    queries sliding by 1 held 65,536 rows' answers at once); the lines are the same, in the
    same order, as those of one instance per query.  A count boundary at a chunk's end and a
    time boundary passed by the next chunk's first row have both seen as many arrivals: the
    time query's line comes first when its query does (with 65,536-row chunks it came after)."""
    ids, t, x, *_ = adversarial_file("time, empty slides, negative t")
    source = write_rows(tmp_path / "data.csv", "id,t,a,b", [(i, when, *row) for i, when, row in zip(ids, t, x)])
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps([{"weights": [1.0, 0.5], "k": 2, "window": 6, "slide": 3, "kind": "time"},
                                   {"weights": [-1.0, 1.0], "k": 9, "window": 2, "slide": 2, "kind": "time"},
                                   {"weights": [1.0, 0.5], "k": 3, "window": 4, "slide": 1}]))
    outputs = {}
    for algorithm in ("oracle", "shared"):
        if algorithm == "shared":
            monkeypatch.setattr(cli, *limit)
        outputs[algorithm] = tmp_path / f"{algorithm}.jsonl"
        status, message = run(capsys, "run-many", "--algorithm", algorithm, "--queries", str(queries),
                              "--input", str(source), "--output", str(outputs[algorithm]))
        assert status == 0, message
    assert len(cli.chunk_starts(cli.read_queries(str(queries)), np.array(t))) > len(t) // 4
    assert outputs["shared"].read_text() == outputs["oracle"].read_text()


def test_run_many_refuses_a_gap_passing_more_boundaries_of_the_workload_than_max_slides(tmp_path, capsys):
    """Each time query alone stays within --max-slides, but the shared executor would hold the
    answers of all of them at the gap at once (a gap of 10**7 with a few queries took 24 GB)."""
    source = tmp_path / "data.csv"
    source.write_text("id,t,x\n1,0,1.0\n2,600,2.0\n3,601,0.5\n")
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps([{"weights": [1.0], "k": 1, "window": 2, "slide": 1, "kind": "time"},
                                   {"weights": [1.0], "k": 1, "window": 4, "slide": 2, "kind": "time"},
                                   {"weights": [1.0], "k": 1, "window": 2, "slide": 2}]))
    output = tmp_path / "out.jsonl"
    arguments = ["--queries", str(queries), "--input", str(source), "--output", str(output), "--max-slides", "800"]
    status, message = run(capsys, "run-many", *arguments)
    assert_refused(status, message, [f"{source} line 3", "column t jumps from 0 to 600 here",
                                     "900 slide boundaries of the 2 time queries", "limit of 800 (--max-slides)",
                                     "--algorithm NAME"])
    assert not output.exists()
    status, message = run(capsys, "run-many", *arguments, "--algorithm", "mintopk")
    assert status == 0, message
    assert len(output_lines(output)) == 601 + 300 + 1


@pytest.mark.parametrize("command", ["run", "run-many"])
def test_a_gap_wider_than_int64_is_named_at_its_line(tmp_path, capsys, command):
    """t from -5e18 to 4.9e18: the difference wraps around in int64, and the widest gap was
    looked for among the wrapped differences (the message named line 4, one unit after line 3)."""
    source = tmp_path / "data.csv"
    source.write_text("id,t,x\n1,-5000000000000000000,1.0\n2,4900000000000000000,2.0\n3,4900000000000000001,3.0\n")
    queries = tmp_path / "q.json"
    queries.write_text('[{"weights": [1], "k": 1, "window": 2, "slide": 1, "kind": "time"}]')
    arguments = ["--algorithm", "mintopk", "--k", "1", "--window", "2", "--slide", "1", "--kind", "time"] \
        if command == "run" else ["--queries", str(queries)]
    status, message = run(capsys, command, *arguments, "--input", str(source), "--output", str(tmp_path / "o.jsonl"))
    assert_refused(status, message, [f"{source} line 3:",
                                     "t jumps from -5000000000000000000 to 4900000000000000000 here"])


def test_output_dev_stdout_appended_to_a_log_keeps_the_log(tmp_path):
    """``--output /dev/stdout >> log``: the answers were written to a temporary file renamed
    over the log, which lost its earlier lines."""
    source = tmp_path / "data.csv"
    source.write_text(GOOD_CSV)
    log = tmp_path / "run.log"
    log.write_text("an earlier line\n")
    with open(log, "a") as stdout:
        result = subprocess.run([sys.executable, "-m", "engine", "run", "--algorithm", "oracle", "--k", "1",
                                 "--window", "2", "--slide", "2", "--input", str(source), "--output", "/dev/stdout"],
                                cwd=Path(__file__).resolve().parents[2], stdout=stdout, stderr=subprocess.PIPE,
                                text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    first, *answers = log.read_text().splitlines()
    assert first == "an earlier line"
    assert [json.loads(line)["ids"] for line in answers] == [[1], [4]]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data.csv", "run.log"]


@pytest.mark.parametrize("command", ["run", "run-many"])
def test_an_output_ending_with_a_slash_is_refused_and_no_file_created(tmp_path, capsys, command):
    """``--output missing/`` wrote the answers to a new file ``missing`` (the temporary file
    renamed to the path without its ``/``) and exited 0."""
    source = write_rows(tmp_path / "data.csv", "id,t,x", [(1, 1, 0.5), (2, 2, 0.25)])
    queries = tmp_path / "q.json"
    queries.write_text('[{"weights": [1], "k": 1, "window": 2, "slide": 1}]')
    arguments = ["--algorithm", "mintopk", "--k", "1", "--window", "2", "--slide", "1"] if command == "run" \
        else ["--queries", str(queries)]
    output = f"{tmp_path / 'missing'}/"
    status, message = run(capsys, command, *arguments, "--input", str(source), "--output", output)
    assert_refused(status, message, [f"error: {output}: cannot write: there is no directory {output}",
                                     "cannot end with /"])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data.csv", "q.json"]


def test_a_workload_the_shared_executor_cannot_hold_is_refused_with_one_line(tmp_path, capsys):
    """A count query of window 2**63 - 2 and slide 2: the shared executor, made lazily while
    the answers were written, raised numpy's ValueError through the command line (a traceback)."""
    source = write_rows(tmp_path / "data.csv", "id,t,x", [(1, 5, 0.5), (2, 5, 0.7), (3, 7, 0.1)])
    queries = tmp_path / "q.json"
    queries.write_text('[{"weights": [1], "k": 1, "window": 9223372036854775806, "slide": 2}]')
    status, message = run(capsys, "run-many", "--queries", str(queries), "--input", str(source),
                          "--output", str(tmp_path / "out.jsonl"))
    assert_refused(status, message, [f"{queries}: query 0: the shared executor keeps a row per window"])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data.csv", "q.json"]


@pytest.mark.parametrize("name", ["oracle-incomplete", "sla", "eaa", "approx"])
def test_weighted_sums_past_half_the_largest_float_run_and_stay_finite(tmp_path, capsys, name):
    """The command line refused any object whose weighted values added up to half the largest
    float (0.9e308), where engine.slides ran them: both now refuse only what comes within the
    sums' rounding of the largest float (engine.stream.attribute_overflow)."""
    source = write_rows(tmp_path / "tuples.csv", "id,stream,value,t",
                        [(1, 0, 0.5, 0), (2, 1, 0.25, 1), (1, 1, 0.125, 2), (3, 0, 0.0, 3)])
    output = tmp_path / "out.jsonl"
    status, message = run(capsys, "run", "--algorithm", name, "--k", "1", "--window", "4", "--slide", "1",
                          "--weights=1.7e308,1.7e308", *(["--param", "occurrences=4"] if name == "eaa" else []),
                          "--input", str(source), "--output", str(output))
    assert status == 0, message
    assert output_lines(output)[-1]["scores"] == [0.5 * 1.7e308 + 0.125 * 1.7e308]


def test_a_slide_of_one_row_refused_mid_stream_names_its_line(tmp_path, capsys):
    """A slide of one row (``s = 1``) is named ``line 3``, not ``lines 3-3``."""
    source = write_rows(tmp_path / "tuples.csv", "id,stream,value,t", [(1, 0, 0.5, 0), (1, 0, 0.75, 1), (2, 1, 0.25, 2)])
    status, message = run(capsys, "run", "--algorithm", "eaa", "--k", "2", "--window", "4", "--slide", "1",
                          "--input", str(source), "--output", str(tmp_path / "out.jsonl"))
    assert_refused(status, message, [f"{source} line 3 (slide 1, end 2)", "object 1 occurred 2 times"])
