"""Top-k Watch pipelines: PySpark jobs that ingest traces and replay them through the engine.

- :mod:`pipelines.ingest` — ``python -m pipelines.ingest FAMILY``: raw trace -> Parquet dataset.
- :mod:`pipelines.replay` — ``python -m pipelines.replay --config FILE``: dataset -> DuckDB results.
"""
