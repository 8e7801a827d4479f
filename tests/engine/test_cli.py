"""The headless CLI, ``python -m engine`` (``docs/CONTRACTS.md``): answers, registry listing, bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import engine
from engine import cli, registry

ROOT = Path(__file__).resolve().parents[2]
SINGLE = [info.name for info in engine.available() if info.stream == "single"]
EXACT_SINGLE = [info.name for info in engine.available() if info.stream == "single" and info.exact]
PREVIOUS_OUTPUT = "answers of an earlier run\n"


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "engine", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def run_args(name: str, query: engine.Query, source: Path, output: Path, *extra: str) -> list[str]:
    return ["run", "--algorithm", name, "--k", str(query.k), "--window", str(query.window),
            "--slide", str(query.slide), "--kind", query.kind,
            "--weights=" + ",".join(repr(w) for w in query.weights),
            "--input", str(source), "--output", str(output), *extra]


def write_csv(path: Path, header: list[str], columns: list[np.ndarray]) -> Path:
    rows = zip(*(column.tolist() for column in columns))
    path.write_text(",".join(header) + "\n" + "".join(",".join(map(repr, row)) + "\n" for row in rows))
    return path


def object_stream(m: int, seed: int, times: str = "steady"):
    """Ids, non-decreasing times and two features with ties, as an engine stream."""
    rng = np.random.default_rng(seed)
    t = np.arange(m) if times == "steady" else np.cumsum(rng.choice([0, 0, 1, 9], m)) + 5
    x = np.column_stack([rng.integers(0, 5, m) * 0.5, rng.normal(size=m)])
    return np.arange(m) + 100, t.astype(np.int64), x


def direct_lines(name: str, data, query: engine.Query, params: dict[str, Any] | None = None) -> list[dict]:
    """What the CLI must print, computed through the engine API; exact single-stream
    algorithms are checked against the oracle on the way."""
    algorithm = engine.create(name, query, **(params or {}))
    oracle = engine.create("oracle", query) if name in EXACT_SINGLE else None
    lines = []
    for batch in engine.slides(data, query):
        algorithm.process(batch)
        answer, stats = algorithm.topk(), algorithm.stats()
        if oracle is not None:
            oracle.process(batch)
            np.testing.assert_allclose(answer.scores, oracle.topk().scores, rtol=1e-12, atol=0)
        lines.append({"slide": batch.index, "end": batch.end, "ids": answer.ids.tolist(),
                      "scores": answer.scores.tolist(), "candidates": stats["candidates"],
                      "retained": stats["retained"], "bytes": stats["bytes"]})
    return lines


def read_lines(path: Path) -> list[dict]:
    """The output lines without ``measured_bytes`` (checked to be a positive integer): the real
    size depends on how the input arrays were laid out, so it is not compared exactly."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        measured = line.pop("measured_bytes")
        assert isinstance(measured, int) and measured > 0
    return lines


# ------------------------------------------------------------------------------- good input

@pytest.mark.parametrize("name", SINGLE)
def test_count_window_output_equals_the_engine(tmp_path, name):
    data = object_stream(203, seed=1)
    source = write_csv(tmp_path / "data.csv", ["id", "t", "x_0", "x_1"], list(data[:2]) + list(data[2].T))
    query = engine.Query(weights=[1.0, -0.5], k=4, window=30, slide=5, kind="count")
    result = run_cli(*run_args(name, query, source, tmp_path / "out.jsonl"))
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = read_lines(tmp_path / "out.jsonl")
    assert len(lines) == 203 // 5
    assert lines == direct_lines(name, data, query)


def test_time_window_with_param_and_default_weights(tmp_path):
    data = object_stream(300, seed=2, times="gaps")
    source = write_csv(tmp_path / "data.csv", ["id", "t", "a", "b"], list(data[:2]) + list(data[2].T))
    result = run_cli("run", "--algorithm", "mintopk", "--param", "prefilter=false", "--k", "3",
                     "--window", "24", "--slide", "8", "--kind", "time",
                     "--input", str(source), "--output", str(tmp_path / "out.jsonl"))
    assert result.returncode == 0, result.stderr
    query = engine.Query(weights=[1.0, 1.0], k=3, window=24, slide=8, kind="time")
    expected = direct_lines("mintopk", data, query, {"prefilter": False})
    assert len(expected) == (data[1][-1] // 8 - data[1][0] // 8)
    assert read_lines(tmp_path / "out.jsonl") == expected


def test_columns_are_matched_by_name_and_features_keep_their_order(tmp_path):
    ids, t, x = object_stream(60, seed=3)
    source = write_csv(tmp_path / "data.csv", ["x_0", "t", "x_1", "id"], [x[:, 0], t, x[:, 1], ids])
    query = engine.Query(weights=[2.0, -1.0], k=2, window=10, slide=10)
    result = run_cli(*run_args("oracle", query, source, tmp_path / "out.jsonl"))
    assert result.returncode == 0, result.stderr
    assert read_lines(tmp_path / "out.jsonl") == direct_lines("oracle", (ids, t, x), query)


def test_parquet_input_ignores_a_seq_column(tmp_path):
    import pyarrow
    import pyarrow.parquet

    ids, t, x = object_stream(150, seed=4, times="gaps")
    table = pyarrow.table({"id": ids, "seq": np.arange(150), "t": t, "x_0": x[:, 0], "x_1": x[:, 1]})
    pyarrow.parquet.write_table(table, tmp_path / "data.parquet")
    query = engine.Query(weights=[-1.0, 0.5], k=5, window=40, slide=10, kind="time")
    result = run_cli(*run_args("mintopk", query, tmp_path / "data.parquet", tmp_path / "out.jsonl"))
    assert result.returncode == 0, result.stderr
    assert read_lines(tmp_path / "out.jsonl") == direct_lines("mintopk", (ids, t, x), query)


def test_parquet_columns_of_every_number_type_and_several_chunks_read_as_written(tmp_path):
    import pyarrow
    import pyarrow.parquet

    from engine.cli import read_parquet

    columns = {"i8": ([-3, 0, 7, 5, -1], pyarrow.int8()), "u32": ([0, 4_000_000_000, 1, 2, 3], pyarrow.uint32()),
               "f32": ([0.5, -0.25, 1.5, 2.0, -0.0], pyarrow.float32()),
               "f64": ([0.1, 2.5, -3.75, 1e300, 0.0], pyarrow.float64()), "s": (["a", "1", "2.5", "b", ""], pyarrow.string())}
    schema = pyarrow.schema([(name, kind) for name, (_, kind) in columns.items()])
    path = tmp_path / "chunks.parquet"
    with pyarrow.parquet.ParquetWriter(path, schema) as writer:
        for lo, hi in ((0, 2), (2, 3), (3, 5)):  # three row groups: three chunks per column
            writer.write_table(pyarrow.table({name: pyarrow.array(values[lo:hi], kind)
                                              for name, (values, kind) in columns.items()}, schema=schema))
    table = read_parquet(str(path))
    assert table.header == list(columns)
    for name, (values, kind) in columns.items():
        read = table.columns[name]
        assert read.tolist() == values, name
        assert read.dtype == (object if name == "s" else kind.to_pandas_dtype()), name
    assert list(table.numbers) == [1, 2, 3, 4, 5]


def test_header_only_file_gives_an_empty_output(tmp_path):
    source = tmp_path / "data.csv"
    source.write_text("id,t,x_0\n")
    result = run_cli("run", "--algorithm", "mintopk", "--k", "1", "--window", "4", "--slide", "2",
                     "--input", str(source), "--output", str(tmp_path / "out.jsonl"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "out.jsonl").read_text() == ""


def test_huge_but_finite_scores_are_answered(tmp_path):
    """Near the overflow bound the check scores every row instead of refusing on the bound."""
    source = tmp_path / "data.csv"
    source.write_text("id,t,x_0,x_1\n1,1,1e307,-1e307\n2,2,9e307,-9e307\n")
    result = run_cli("run", "--algorithm", "mintopk", "--k", "1", "--window", "2", "--slide", "2",
                     "--weights=1,1", "--input", str(source), "--output", str(tmp_path / "out.jsonl"))
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "out.jsonl").read_text())["scores"] == [0.0]


def test_list_prints_every_registered_algorithm():
    result = run_cli("list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(engine.available())
    for info, line in zip(engine.available(), lines):
        assert line.split()[0] == info.name
        assert info.family in line and info.summary in line
        for key, value in info.defaults.items():
            assert f"{key}={value}" in line


def test_help_describes_both_commands():
    result = run_cli("--help")
    assert result.returncode == 0
    assert "run" in result.stdout and "list" in result.stdout
    result = run_cli("run", "--help")
    assert result.returncode == 0
    assert "id,t,<features...>" in result.stdout and "id,stream,value,t" in result.stdout


# -------------------------------------------------------------------------------- bad input

GOOD_CSV = "id,t,x_0\n1,1,0.5\n2,2,0.25\n3,3,1.5\n4,4,2.0\n"
QUERY_ARGS = ["--k", "2", "--window", "4", "--slide", "2"]

BAD_FILES = {
    # case: (file name, content, extra arguments, fragments the message must contain)
    "missing column": ("data.csv", "id,x_0\n1,0.5\n", [], ["line 1", "missing column(s) t"]),
    "text in a number": ("data.csv", "id,t,x_0\n1,1,0.5\n2,2,0.25\n3,3,abc\n", [],
                         ["line 4", "column x_0", "'abc' is not a number"]),
    "empty value": ("data.csv", "id,t,x_0\n1,1,\n", [], ["line 2", "column x_0", "'' is not a number"]),
    "NaN": ("data.csv", "id,t,x_0\n1,1,0.5\n2,2,nan\n", [], ["line 3", "column x_0", "'nan' is not a finite"]),
    "inf": ("data.csv", "id,t,x_0\n1,1,0.5\n\n2,2,0.5\n3,3,-inf\n", [],
            ["line 5", "column x_0", "'-inf' is not a finite"]),
    "line numbers count every physical line": ("data.csv", 'id,t,x_0,note\n1,1,0.5,"two\nlines"\n2,2,abc,x\n', [],
                                               ["line 4", "column x_0", "'abc' is not a number"]),
    "fractional id": ("data.csv", "id,t,x_0\n1,1,0.5\n2.5,2,0.5\n", [], ["line 3", "column id", "not an integer"]),
    "short row": ("data.csv", "id,t,x_0\n1,1,0.5\n2,2\n", [], ["line 3", "2 field(s)", "header has 3"]),
    "decreasing t in a time window": ("data.csv", "id,t,x_0\n1,1,0.5\n2,5,0.5\n3,4,0.5\n", ["--kind", "time"],
                                      ["line 4", "column t", "4 comes after 5", "non-decreasing"]),
    "time at the int64 limit": ("data.csv", "id,t,x_0\n1,1,0.5\n2,9223372036854775802,0.5\n", ["--kind", "time"],
                                ["line 3", "column t = 9223372036854775802 is outside",
                                 "window + slide (6) inside the int64 range"]),
    "time at the int64 floor": ("data.csv", "id,t,x_0\n1,-9223372036854775803,0.5\n2,1,0.5\n", ["--kind", "time"],
                                ["line 2", "column t = -9223372036854775803 is outside [-9223372036854775802,"]),
    "score overflows": ("data.csv", "id,t,x_0,x_1\n1,1,0.5,0.5\n2,2,1e308,1e308\n", [],
                        ["line 3", "the score x · w overflows (inf)", "scale the features or the weights down"]),
    "too many weights": ("data.csv", GOOD_CSV, ["--weights=1,2"], ["line 1", "2 weight(s)", "1 feature column"]),
    "empty file": ("data.csv", "", [], ["line 1", "empty", "header"]),
    "unsupported format": ("data.txt", GOOD_CSV, [], ["unsupported input format", ".txt"]),
}


def assert_failed_cleanly(result: subprocess.CompletedProcess, output: Path, fragments: list[str]) -> None:
    """Exit 2, one ``error:`` line with every fragment, no traceback, the old output untouched."""
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    assert output.read_text() == PREVIOUS_OUTPUT
    assert [path.name for path in output.parent.iterdir() if path.name.startswith(".")] == []


@pytest.mark.parametrize("case", BAD_FILES)
def test_bad_input_file(tmp_path, case):
    file_name, content, extra, fragments = BAD_FILES[case]
    source = tmp_path / file_name
    source.write_text(content)
    output = tmp_path / "out.jsonl"
    output.write_text(PREVIOUS_OUTPUT)
    result = run_cli("run", "--algorithm", "mintopk", *QUERY_ARGS, *extra,
                     "--input", str(source), "--output", str(output))
    assert_failed_cleanly(result, output, [str(source), *fragments])


def test_unreadable_file(tmp_path):
    output = tmp_path / "out.jsonl"
    output.write_text(PREVIOUS_OUTPUT)
    source = tmp_path / "absent.csv"
    result = run_cli("run", "--algorithm", "mintopk", *QUERY_ARGS, "--input", str(source), "--output", str(output))
    assert_failed_cleanly(result, output, [str(source), "cannot read", "No such file"])


@pytest.mark.parametrize("values,fragments", [
    ([0.5, float("nan"), 0.5], ["row 2", "column x_0", "nan is not a finite number"]),
    ([0.5, 0.5, None], ["row 3", "column x_0", "missing value"]),
])
def test_bad_parquet(tmp_path, values, fragments):
    import pyarrow
    import pyarrow.parquet

    source = tmp_path / "data.parquet"
    pyarrow.parquet.write_table(pyarrow.table({"id": [1, 2, 3], "t": [1, 2, 3],
                                               "x_0": pyarrow.array(values, pyarrow.float64())}), source)
    output = tmp_path / "out.jsonl"
    output.write_text(PREVIOUS_OUTPUT)
    result = run_cli("run", "--algorithm", "mintopk", *QUERY_ARGS, "--input", str(source), "--output", str(output))
    assert_failed_cleanly(result, output, [str(source), *fragments])


BAD_ARGUMENTS = {
    # case: (arguments replacing the good ones, fragments the message must contain)
    "window not a multiple of slide": (["--algorithm", "mintopk", "--k", "2", "--window", "10", "--slide", "4"],
                                       ["invalid query", "window must be a multiple of slide (4), got 10"]),
    "k = 0": (["--algorithm", "mintopk", "--k", "0", "--window", "4", "--slide", "2"],
              ["invalid query", "k must be an integer >= 1, got 0"]),
    "non-finite weight": (["--algorithm", "mintopk", *QUERY_ARGS, "--weights=inf"], ["invalid query", "weights"]),
    "unknown algorithm": (["--algorithm", "nope", *QUERY_ARGS], ["unknown algorithm 'nope'", "mintopk", "oracle"]),
    "unknown param": (["--algorithm", "mintopk", "--param", "speed=3", *QUERY_ARGS],
                      ["unknown parameter 'speed' for mintopk", "prefilter"]),
    "bad param value": (["--algorithm", "mintopk", "--param", "prefilter=maybe", *QUERY_ARGS],
                        ["prefilter", "'maybe'"]),
}


@pytest.mark.parametrize("case", BAD_ARGUMENTS)
def test_bad_arguments_are_reported_before_reading_the_input(tmp_path, case):
    arguments, fragments = BAD_ARGUMENTS[case]
    output = tmp_path / "out.jsonl"
    output.write_text(PREVIOUS_OUTPUT)
    source = tmp_path / "absent.csv"
    result = run_cli("run", *arguments, "--input", str(source), "--output", str(output))
    assert_failed_cleanly(result, output, fragments)
    assert str(source) not in result.stderr


def test_usage_errors_exit_2(tmp_path):
    result = run_cli("run", "--algorithm", "mintopk", "--k", "two", "--window", "4", "--slide", "2",
                     "--input", "x.csv", "--output", str(tmp_path / "out.jsonl"))
    assert result.returncode == 2
    assert "--k" in result.stderr and "Traceback" not in result.stderr
    assert run_cli().returncode == 2


# ----------------------------------------------- incomplete streams and interruption

INCOMPLETE = [info.name for info in engine.available() if info.stream == "incomplete"]


def incomplete_lines(name: str, data, query: engine.Query) -> list[dict]:
    """What the CLI must print for an incomplete-stream algorithm; exact ones are checked
    against ``oracle-incomplete`` on the way."""
    algorithm = engine.create(name, query)
    oracle = engine.create("oracle-incomplete", query) if algorithm.exact else None
    lines = []
    for batch in engine.slides(data, query):
        algorithm.process(batch)
        answer, stats = algorithm.topk(), algorithm.stats()
        if oracle is not None:
            oracle.process(batch)
            assert answer.ids.tolist() == oracle.topk().ids.tolist()
        lines.append({"slide": batch.index, "end": batch.end, "ids": answer.ids.tolist(),
                      "scores": answer.scores.tolist(), "candidates": stats["candidates"],
                      "retained": stats["retained"], "bytes": stats["bytes"]})
    return lines


@pytest.mark.parametrize("name", INCOMPLETE)
@pytest.mark.parametrize("kind", ["count", "time"])
def test_incomplete_stream_output_equals_the_engine(tmp_path, name, kind):
    from engine.generators import correlated_streams

    ids, stream, value, t = correlated_streams(400, streams=3, seed=2, reuse=0.6, memory=20)
    if kind == "time":
        t = np.cumsum(np.random.default_rng(3).choice([0, 0, 1, 7], len(ids)))
    source = write_csv(tmp_path / "tuples.csv", ["t", "value", "stream", "id"], [t, value, stream, ids])
    query = engine.Query(weights=[1.0, 0.5, 2.0], k=5, window=60, slide=10, kind=kind)
    result = run_cli(*run_args(name, query, source, tmp_path / "out.jsonl"))
    assert result.returncode == 0, result.stderr
    assert read_lines(tmp_path / "out.jsonl") == incomplete_lines(name, (ids, stream, value, t), query)


ATTRIBUTE_CSV = "t,value,stream,id\n0,0.5,0,1\n1,0.25,2,2\n2,1.0,1,1\n3,0.75,0,3\n"


@pytest.mark.parametrize("name", INCOMPLETE)
def test_incomplete_stream_has_one_default_weight_per_stream(tmp_path, capsys, name):
    source = tmp_path / "tuples.csv"
    source.write_text(ATTRIBUTE_CSV)
    output = tmp_path / "out.jsonl"
    status = cli.main(["run", "--algorithm", name, "--k", "2", "--window", "2", "--slide", "2",
                       "--input", str(source), "--output", str(output)])
    assert status == 0, capsys.readouterr().err
    query = engine.Query(weights=[1.0, 1.0, 1.0], k=2, window=2, slide=2)
    data = (np.array([1, 2, 1, 3]), np.array([0, 2, 1, 0]), np.array([0.5, 0.25, 1.0, 0.75]), np.arange(4))
    lines = read_lines(output)
    assert lines == incomplete_lines(name, data, query)
    assert [line["ids"] for line in lines] == [[1, 2], [1, 3]]


@pytest.mark.parametrize("content,extra,fragments", [
    (ATTRIBUTE_CSV.replace("t,value", "t,extra,value").replace("\n0,", "\n0,9,").replace("\n1,", "\n1,9,")
     .replace("\n2,", "\n2,9,").replace("\n3,", "\n3,9,"), [], ["line 1", "unexpected column(s) extra"]),
    (ATTRIBUTE_CSV, ["--weights=1,1"], ["line 3", "column stream", "2 is not a stream number in 0..1"]),
    (ATTRIBUTE_CSV.replace("0.75", "1.5"), [], ["line 5", "column value", "1.5 is not in [0, 1]"]),
    (ATTRIBUTE_CSV.replace("0.75", "-0.5"), [], ["line 5", "column value", "-0.5 is not in [0, 1]"]),
    (ATTRIBUTE_CSV.replace("2,1.0,1", "2,1.0,-1"), [], ["line 4", "column stream", "-1 is not a stream"]),
    (ATTRIBUTE_CSV.replace("3,0.75", "1,0.75"), ["--kind", "time"], ["line 5", "column t", "1 comes after 2"]),
    (ATTRIBUTE_CSV.replace("\n3,0.75,0,3", "\n3,0.75,0,x"), [], ["line 5", "column id", "'x' is not an integer"]),
    (ATTRIBUTE_CSV.replace("\n3,0.75,0,3", "\n9223372036854775804,0.75,0,3"), ["--kind", "time"],
     ["line 5", "column t = 9223372036854775804 is outside"]),
])
def test_bad_incomplete_stream(tmp_path, capsys, content, extra, fragments):
    source = tmp_path / "tuples.csv"
    source.write_text(content)
    output = tmp_path / "out.jsonl"
    status = cli.main(["run", "--algorithm", "sla", "--k", "1", "--window", "2", "--slide", "2", *extra,
                       "--input", str(source), "--output", str(output)])
    message = capsys.readouterr().err
    assert status == 2
    assert message.startswith(f"error: {source} ")
    for fragment in fragments:
        assert fragment in message
    assert not output.exists()


@pytest.mark.parametrize("name", INCOMPLETE)
def test_negative_weights_for_an_incomplete_algorithm_are_an_invalid_query(tmp_path, name):
    output = tmp_path / "out.jsonl"
    output.write_text(PREVIOUS_OUTPUT)
    source = tmp_path / "absent.csv"
    result = run_cli("run", "--algorithm", name, *QUERY_ARGS, "--weights=1,-0.5",
                     "--input", str(source), "--output", str(output))
    assert_failed_cleanly(result, output, ["invalid query", f"{name} needs non-negative weights", "stream 1"])
    assert str(source) not in result.stderr


class InterruptedRun(registry.algorithm_class("oracle-incomplete")):
    """The brute force, interrupted by Ctrl-C during the second slide."""

    name = "test-interrupted"
    summary = "test double"

    def process(self, batch) -> None:
        if batch.index == 1:
            raise KeyboardInterrupt
        super().process(batch)


def test_interrupted_run_leaves_the_old_output_and_no_temporary_file(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(registry._REGISTRY, InterruptedRun.name, InterruptedRun)
    source = tmp_path / "tuples.csv"
    source.write_text(ATTRIBUTE_CSV)
    output = tmp_path / "out.jsonl"
    output.write_text(PREVIOUS_OUTPUT)
    status = cli.main(["run", "--algorithm", InterruptedRun.name, "--k", "1", "--window", "2", "--slide", "1",
                       "--input", str(source), "--output", str(output)])
    assert status == cli.EXIT_INTERRUPTED
    assert capsys.readouterr().err == "error: interrupted\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.jsonl", "tuples.csv"]
    assert output.read_text() == PREVIOUS_OUTPUT


def test_an_output_that_is_the_input_is_refused_and_the_input_kept(tmp_path):
    source = tmp_path / "data.csv"
    source.write_text(GOOD_CSV)
    result = run_cli("run", "--algorithm", "mintopk", *QUERY_ARGS, "--input", str(source),
                     "--output", str(tmp_path / "." / "data.csv"))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.splitlines() == [f"error: --output {tmp_path / '.' / 'data.csv'} is the --input file; "
                                          "the answers would replace it. Give another output file"]
    assert source.read_text() == GOOD_CSV


def test_a_time_gap_past_max_slides_is_refused_naming_its_line_and_a_higher_limit_runs(tmp_path):
    source = tmp_path / "gap.csv"
    source.write_text("id,t,a\n1,0,0.5\n2,1,0.7\n3,1000000000000,0.9\n")
    output = tmp_path / "out.jsonl"
    output.write_text(PREVIOUS_OUTPUT)
    query = ["--k", "2", "--window", "10", "--slide", "1", "--kind", "time"]
    result = run_cli("run", "--algorithm", "mintopk", *query, "--input", str(source), "--output", str(output))
    assert_failed_cleanly(result, output, [
        f"{source} line 4: column t jumps from 1 to 1000000000000 here: a time window with slide 1 passes "
        "1,000,000,000,000 slide boundaries", "the limit of 10,000,000 (--max-slides)"])
    wide = ["--k", "2", "--window", "500000000000", "--slide", "250000000000", "--kind", "time"]
    result = run_cli("run", "--algorithm", "mintopk", *wide, "--input", str(source), "--output", str(output),
                     "--max-slides", "3")
    assert_failed_cleanly(result, output, ["passes 4 slide boundaries", "more than the 3 rows and the limit of 3"])
    result = run_cli("run", "--algorithm", "mintopk", *wide, "--input", str(source), "--output", str(output),
                     "--max-slides", "4")
    assert result.returncode == 0, result.stderr
    assert [line["ids"] for line in read_lines(output)] == [[2, 1], [2, 1], [], []]


def start_writing_forever(source: Path, output: Path) -> subprocess.Popen:
    """A real ``engine run`` writing empty slides across ``source``'s gap of 10**12 time units
    (as good as endless), once its temporary output beside ``output`` holds some."""
    child = subprocess.Popen([sys.executable, "-m", "engine", "run", "--algorithm", "oracle", "--k", "2", "--window",
                              "10", "--slide", "1", "--kind", "time", "--input", str(source), "--output", str(output),
                              "--max-slides", str(10**13)], cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(path.name.endswith(".tmp") and path.stat().st_size for path in output.parent.iterdir()):
        assert child.poll() is None and time.monotonic() < deadline, child.stderr.read() if child.poll() else "slow"
        time.sleep(0.05)
    return child


def test_sigterm_removes_the_temporary_output_and_keeps_the_old_one(tmp_path):
    """A run killed by SIGTERM (a scheduler, ``timeout``) unwinds like Ctrl-C: no temporary file."""
    source = tmp_path / "gap.csv"
    source.write_text("id,t,a\n1,0,0.5\n2,1,0.7\n3,1000000000000,0.9\n")
    output = tmp_path / "out.jsonl"
    output.write_text(PREVIOUS_OUTPUT)
    child = start_writing_forever(source, output)
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=60) == 128 + signal.SIGTERM
    assert "Traceback" not in child.stderr.read()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["gap.csv", "out.jsonl"]
    assert output.read_text() == PREVIOUS_OUTPUT


def test_an_output_name_of_up_to_255_bytes_is_written(tmp_path):
    """The temporary file's name adds a pid and a random part to the output's: an output name
    the file system takes must not become one it refuses.  Two long names alike in their first
    200 bytes keep their temporary files apart, and a killed writer's is still found."""
    source = tmp_path / "gap.csv"
    source.write_text("id,t,a\n1,0,0.5\n2,1,0.7\n3,2,0.9\n")
    names = ["é" * 100 + "a" * 49 + ".jsonl", "é" * 100 + "b" * 49 + ".jsonl"]
    assert [len(os.fsencode(name)) for name in names] == [255, 255]
    assert cli.temporary_prefix(names[0]) != cli.temporary_prefix(names[1])
    orphan = tmp_path / f"{cli.temporary_prefix(names[0])}999999999.abcdefgh.tmp"
    orphan.write_text("partial")
    for name in names:
        result = run_cli("run", "--algorithm", "oracle", "--k", "2", "--window", "2", "--slide", "1", "--input",
                         str(source), "--output", str(tmp_path / name))
        assert result.returncode == 0, result.stderr
        assert [json.loads(line)["ids"] for line in (tmp_path / name).read_text().splitlines()] == [[1], [2, 1], [3, 2]]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(["gap.csv", *names])


def test_the_next_write_removes_the_temporary_output_of_a_killed_run(tmp_path):
    """SIGKILL cannot be unwound: the killed run's temporary file stays until the next run
    writing the same output removes it. Files of running writers and of other outputs stay."""
    source = tmp_path / "gap.csv"
    source.write_text("id,t,a\n1,0,0.5\n2,1,0.7\n3,1000000000000,0.9\n")
    output = tmp_path / "out.jsonl"
    child = start_writing_forever(source, output)
    child.kill()
    child.wait(timeout=60)
    orphans = [path.name for path in tmp_path.iterdir() if path.name.endswith(".tmp")]
    assert orphans == [f".out.jsonl.{child.pid}.{orphans[0].split('.')[-2]}.tmp"]
    kept = [f".out.jsonl.{os.getpid()}.abc.tmp",    # a running writer's (this test's process)
            ".out.jsonl.7.x.abc.tmp",              # another output's: out.jsonl.7
            ".out.jsonl.abcdefgh.tmp"]             # without a writer pid
    for name in kept:
        (tmp_path / name).write_text("partial")

    result = run_cli("run", "--algorithm", "oracle", "--k", "2", "--window", "2", "--slide", "1", "--input",
                     str(source), "--output", str(output))
    assert result.returncode == 0, result.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(["gap.csv", "out.jsonl", *kept])


# ----------------------------------------------------------- standard streams, closed and full

STANDARD_OUTPUTS = {
    # case: arguments after "python -m engine", "{source}", "{queries}" and "{output}" filled in
    "run to /dev/stdout": ["run", "--algorithm", "mintopk", *QUERY_ARGS, "--input", "{source}", "--output",
                           "/dev/stdout"],
    "run to -": ["run", "--algorithm", "mintopk", *QUERY_ARGS, "--input", "{source}", "--output", "-"],
    "run-many shared to -": ["run-many", "--queries", "{queries}", "--input", "{source}", "--output", "-"],
    "run-many one per query to /dev/stdout": ["run-many", "--queries", "{queries}", "--algorithm", "pretopk",
                                              "--input", "{source}", "--output", "/dev/stdout"],
    "list": ["list"],
    "help": ["--help"],
    "run help": ["run", "--help"],
}


def standard_output_arguments(case: str, tmp_path: Path) -> list[str]:
    source = write_csv(tmp_path / "data.csv", ["id", "t", "x_0"], [np.arange(50), np.arange(50), np.cos(np.arange(50.0))])
    queries = tmp_path / "q.json"
    queries.write_text('[{"weights": [1], "k": 2, "window": 4, "slide": 2}, {"weights": [-1], "k": 1, "window": 2, '
                       '"slide": 1}]')
    return [part.format(source=source, queries=queries) for part in STANDARD_OUTPUTS[case]]


def engine_process(arguments: list[str], cwd: Path, **streams) -> subprocess.Popen:
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", "engine", *arguments], cwd=cwd, env=environment,
                            stderr=subprocess.PIPE, text=True, **streams)


@pytest.mark.parametrize("case", STANDARD_OUTPUTS)
def test_a_reader_that_closed_the_pipe_ends_the_command_quietly_with_status_141(tmp_path, case):
    """``python -m engine run ... | head -1`` ended with "error: /dev/stdout: cannot write: Broken
    pipe" and status 2; the reader's end is closed here before the command writes anything."""
    arguments = standard_output_arguments(case, tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)
    with open(write_end, "w") as pipe:
        child = engine_process(arguments, tmp_path, stdout=pipe)
    _, errors = child.communicate(timeout=120)
    assert (child.returncode, errors) == (cli.EXIT_READER_GONE, "")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data.csv", "q.json"]


@pytest.mark.parametrize("case", STANDARD_OUTPUTS)
def test_a_full_disk_on_standard_output_is_one_error_line_and_status_2(tmp_path, case):
    """``list``, ``--output -`` and ``--help`` to /dev/full: a traceback (status 1), or nothing at
    all and status 0 (argparse drops a failed write of its help)."""
    arguments = standard_output_arguments(case, tmp_path)
    with open("/dev/full", "w") as full:
        child = engine_process(arguments, tmp_path, stdout=full)
    _, errors = child.communicate(timeout=120)
    shown = "/dev/stdout" if "/dev/stdout" in arguments else "standard output"
    assert (child.returncode, errors) == (2, f"error: {shown}: cannot write: No space left on device\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data.csv", "q.json"]


def test_dash_reads_csv_from_standard_input_and_writes_to_standard_output(tmp_path):
    """``--output -`` wrote a file named ``-``; ``--input -`` was refused for having no extension."""
    source = tmp_path / "data.csv"
    source.write_text(GOOD_CSV)
    through_file = run_cli("run", "--algorithm", "mintopk", *QUERY_ARGS, "--input", str(source),
                           "--output", "/dev/stdout")
    child = engine_process(["run", "--algorithm", "mintopk", *QUERY_ARGS, "--input", "-", "--output", "-"], tmp_path,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    answers, errors = child.communicate(GOOD_CSV, timeout=120)
    assert (child.returncode, errors) == (0, "")
    assert answers == through_file.stdout and len(answers.splitlines()) == 2
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data.csv"]
    child = engine_process(["run", "--algorithm", "mintopk", *QUERY_ARGS, "--input", "-", "--output", "-"], tmp_path,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    answers, errors = child.communicate("id,t,x_0\n1,1,0.5\n2,2,oops\n", timeout=120)
    assert (child.returncode, answers) == (2, "")
    assert errors == "error: stdin line 3: column x_0: 'oops' is not a number\n"


@pytest.mark.parametrize("case, redirection, message", [
    ("list", ">&-", "error: standard output: cannot write: it is closed"),
    ("help", ">&-", "error: standard output: cannot write: it is closed"),
    ("run to -", ">&-", "error: standard output: cannot write: it is closed"),
    ("run from -", "<&-", "error: stdin: cannot read: standard input is closed"),
])
def test_a_closed_standard_stream_is_one_error_line_and_status_2(tmp_path, case, redirection, message):
    """A shell's ``>&-`` leaves Python without ``sys.stdout``: an AttributeError traceback, status 1."""
    arguments = standard_output_arguments("run to /dev/stdout" if case == "run from -" else case, tmp_path)
    if case == "run from -":
        arguments = ["run", "--algorithm", "mintopk", *QUERY_ARGS, "--input", "-", "--output", str(tmp_path / "o.jsonl")]
    command = " ".join([sys.executable, "-m", "engine", *arguments, redirection])
    result = subprocess.run(command, shell=True, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stderr) == (2, message + "\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["data.csv", "q.json"]


def test_the_benchmarks_long_listing_ends_quietly_when_its_reader_is_gone(tmp_path):
    """``python -m benchmarks.run --estimate | head -1`` ended with a BrokenPipeError traceback, status 1."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    with open(write_end, "w") as pipe:
        child = subprocess.Popen([sys.executable, "-m", "benchmarks.run", "--estimate", "--results", str(tmp_path)],
                                 cwd=ROOT, stdout=pipe, stderr=subprocess.PIPE, text=True)
    _, errors = child.communicate(timeout=300)
    assert (child.returncode, errors) == (cli.EXIT_READER_GONE, "")


def test_a_broken_pipe_other_than_standard_output_still_goes_up():
    def command() -> int:
        raise BrokenPipeError(32, "Broken pipe")

    with pytest.raises(BrokenPipeError):
        cli.command_status(command)
