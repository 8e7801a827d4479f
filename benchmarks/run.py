"""``make bench``: run every benchmark module, print its table, save ``results/latest.json``."""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import pathlib
import platform
import sys

from benchmarks.common import table

MODULES = ["bench_mintopk", "bench_competitors"]
RESULTS = pathlib.Path(__file__).parent / "results"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small cases only (a smoke run)")
    parser.add_argument("--only", nargs="*", default=MODULES, choices=MODULES, help="benchmark modules to run")
    args = parser.parse_args(argv)
    rows = []
    for name in args.only:
        module = importlib.import_module(f"benchmarks.{name}")
        print(f"== {name}", flush=True)
        found = module.run(quick=args.quick)
        print(table(found, module.COLUMNS), flush=True)
        rows += found
    RESULTS.mkdir(exist_ok=True)
    meta = {"when": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "python": platform.python_version(), "machine": platform.machine(), "quick": args.quick}
    for row in rows:
        row.update(meta)
    path = RESULTS / "latest.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(rows, indent=1))
    tmp.replace(path)
    print(f"saved {len(rows)} rows to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
