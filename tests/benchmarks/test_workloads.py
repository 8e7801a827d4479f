"""The benchmarks' traces: the data directory's, else the copies shipped in ``sample_data/``."""

from pathlib import Path

from benchmarks import workloads

SAMPLE_DATA = Path(__file__).resolve().parents[2] / "sample_data"


def test_taxi_and_worldcup_fall_back_to_sample_data_when_the_data_directory_lacks_them(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPK_DATA", str(tmp_path))
    assert workloads.trace_files("taxi/yellow_tripdata_sample_2019-*.csv.gz") == \
        sorted(SAMPLE_DATA.glob("taxi/*.csv.gz"))
    assert workloads.trace_files("worldcup/wc_day6_1_sample.tar.bz2") == \
        [SAMPLE_DATA / "worldcup" / "wc_day6_1_sample.tar.bz2"]
    workloads.taxi.cache_clear()
    try:
        ids, t, x = workloads.taxi()
    finally:
        workloads.taxi.cache_clear()
    assert 100_000 < len(ids) <= 120_000 and x.shape == (len(ids), 1)  # of the 120,000 sampled trips
    assert (t[1:] >= t[:-1]).all()


def test_a_trace_in_the_data_directory_is_preferred(tmp_path, monkeypatch):
    (tmp_path / "worldcup").mkdir()
    (tmp_path / "worldcup" / "wc_day6_1_sample.tar.bz2").write_bytes(b"")
    monkeypatch.setenv("TOPK_DATA", str(tmp_path))
    assert workloads.trace_files("worldcup/wc_day6_1_sample.tar.bz2") == [tmp_path / "worldcup" / "wc_day6_1_sample.tar.bz2"]
