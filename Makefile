# Top-k Watch: `make run` and `make test` each set everything up from a fresh clone.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat requirements.txt | cksum | cut -d' ' -f1)
PORT ?= 8501
DB ?= var/topk.duckdb
BENCH_DB ?= var/bench.duckdb
export PYSPARK_PYTHON := $(abspath $(PY))
export PYSPARK_DRIVER_PYTHON := $(abspath $(PY))

.PHONY: run test bench bench-quick setup java chromium clean

setup: $(STAMP)

$(STAMP): requirements.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is required"' || \
	  { echo "error: Top-k Watch needs Python 3.11 or newer as '$(PYTHON)'" >&2; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	rm -f $(VENV)/.installed-* && touch $@

java:
	@v=$$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1); \
	if [ -z "$$v" ] || [ "$$v" -lt 17 ]; then \
	  echo "error: Spark needs Java 17 or newer on PATH (found: $${v:-none}). Install e.g. 'apt-get install -y openjdk-17-jre-headless'." >&2; exit 1; \
	fi

chromium:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	  else echo "error: the browser tests need Debian's chromium: run 'sudo apt-get install -y chromium'" >&2; exit 1; fi; }

test: setup java chromium
	$(PY) -m pytest -q

# Benchmarks: results appended to $(BENCH_DB) (table bench_results), latest run as CSV in
# benchmarks/results/, docs/REPORT.md regenerated. bench-quick: a couple of minutes.
bench: setup
	$(PY) -m benchmarks.run --db $(BENCH_DB)

bench-quick: setup
	$(PY) -m benchmarks.run --quick --db $(BENCH_DB)

run: setup java
	$(PY) -m pipelines.ingest samples --db $(DB)
	$(PY) -m pipelines.replay --config pipelines/configs/demo.json --db $(DB)
	$(PY) -m pipelines.replay --config pipelines/configs/families.json --db $(DB)
	$(PY) -m streamlit run app/streamlit_app.py --server.port $(PORT) --server.headless true -- --db $(DB)

clean:
	rm -rf $(VENV) var
