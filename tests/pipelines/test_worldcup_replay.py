"""The real World Cup sample ingested and replayed through the incomplete-stream algorithms.

Twelve minutes of the sample (``sample_data/worldcup``, 12:00-12:12 on 1 May 1998) are
ingested by the ``worldcup`` family and replayed with the queries and algorithms of
``pipelines/configs/worldcup.json``, unsharded and with 3 shards (by client): ``sla`` and
``eaa`` answer exactly as ``oracle-incomplete`` at every slide, in both runs, although
clients occur many times in one stream and window.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import duckdb

from pipelines import ingest, replay

SAMPLES = Path(__file__).resolve().parents[2] / "sample_data" / "worldcup"
CONFIG = Path(__file__).resolve().parents[2] / "pipelines" / "configs" / "worldcup.json"
MINUTES = tuple(f"01/May/1998,12:{minute:02d}" for minute in range(12))
ANSWER_COLUMNS = 'query_id, algorithm, slide, rank, object_id, score'
quiet = dict(log=lambda _: None)


def worldcup_slice(directory: Path) -> Path:
    """The sample's requests of :data:`MINUTES`, archived with the notice like the real sample."""
    with tarfile.open(SAMPLES / "wc_day6_1_sample.tar.bz2") as archive:
        member = next(m for m in archive.getmembers() if m.isfile() and m.name.endswith(".csv"))
        lines = archive.extractfile(member).read().decode("latin-1").splitlines()
    kept = [line for line in lines if line.split(",")[1] + "," + line.split(",")[2][:5] in MINUTES]
    path = directory / "wc_slice.tar.bz2"
    with tarfile.open(path, "w:bz2") as archive:
        for name, data in (("wc_slice.csv", ("\n".join(kept) + "\n").encode("latin-1")),
                           ("HP_COPYRIGHT_NOTICE.txt", (SAMPLES / "HP_COPYRIGHT_NOTICE.txt").read_bytes())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def answers(db: Path, run_id: str) -> dict[str, list[tuple]]:
    """Per algorithm: its ranked answers, ordered by query, slide and rank."""
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(f"SELECT {ANSWER_COLUMNS} FROM answers WHERE run_id = ? "
                           "ORDER BY query_id, algorithm, slide, rank", [run_id]).fetchall()
    out: dict[str, list[tuple]] = {}
    for query_id, algorithm, slide, rank, object_id, score in rows:
        out.setdefault(algorithm, []).append((query_id, slide, rank, object_id, score))
    return out


def test_sharded_worldcup_replay_is_exact_for_sla_and_eaa(spark, tmp_path):
    db = tmp_path / "topk.duckdb"
    summary = ingest.ingest(spark, "worldcup", [worldcup_slice(tmp_path)], db=db, out=tmp_path / "datasets", **quiet)
    assert summary.rows_written > 1_000 and summary.rows_rejected == 0
    shipped = json.loads(CONFIG.read_text())
    assert shipped["dataset"] == "worldcup"
    runs = {}
    for shards in (1, 3):
        config = tmp_path / f"worldcup{shards}.json"
        algorithms = [a for a in shipped["algorithms"] if shards == 1 or a["name"] != "approx"]  # refused sharded
        config.write_text(json.dumps({**shipped, "name": f"worldcup{shards}", "shards": shards,
                                      "algorithms": algorithms}))
        runs[shards] = answers(db, replay.replay(spark, config, db=db, **quiet).run_id)
    for shards, by_algorithm in runs.items():
        assert set(by_algorithm) == {"oracle-incomplete", "sla", "eaa"} | ({"approx"} if shards == 1 else set())
        exact = by_algorithm["oracle-incomplete"]
        assert len({(query_id, slide) for query_id, slide, *_ in exact}) > 20
        assert {query_id for query_id, *_ in exact} == {0, 1}
        assert by_algorithm["sla"] == exact, f"sla, {shards} shard(s)"
        assert by_algorithm["eaa"] == exact, f"eaa, {shards} shard(s)"
    assert runs[3]["oracle-incomplete"] == runs[1]["oracle-incomplete"]
