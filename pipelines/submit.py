"""Entry script for ``spark-submit``, which runs a file rather than a module.

``spark-submit --master spark://HOST:7077 pipelines/submit.py replay --config FILE [...]``
(or ``ingest FAMILY [...]``) runs ``python -m pipelines.<command>`` with the master given to
``spark-submit``.  ``engine`` and ``pipelines`` are found next to this file on the driver and
shipped to the executors by the session builder.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pipelines import ingest, replay  # noqa: E402  (after the path is set)

COMMANDS = {"replay": replay.main, "ingest": ingest.main}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        print(f"usage: spark-submit pipelines/submit.py {{{','.join(COMMANDS)}}} ARGS...", file=sys.stderr)
        sys.exit(2)
    sys.exit(COMMANDS[sys.argv[1]](sys.argv[2:]))
