"""Top-k Watch dashboard: the single entry file.

Run ``streamlit run app/streamlit_app.py -- --db var/topk.duckdb`` (or set ``TOPK_DB``).
"""

import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `streamlit run` puts only app/ on the path; the engine lives at the root
    sys.path.insert(0, str(ROOT))

from app import data  # noqa: E402

st.set_page_config(page_title="Top-k Watch", page_icon=":material/leaderboard:", layout="wide")

page = st.navigation([
    st.Page("views/live.py", title="Live", icon=":material/play_circle:", default=True),
    st.Page("views/watchlist.py", title="Watch list", icon=":material/checklist:"),
    st.Page("views/runs.py", title="Runs", icon=":material/history:"),
    st.Page("views/benchmarks.py", title="Benchmarks", icon=":material/speed:"),
])
st.html("<style>[data-testid='stMetricValue'] {font-size: 1.45rem;} "  # tiles fit four metrics per card
        "[data-testid='stMetricLabel'] p {font-size: 0.8rem;}</style>")
st.sidebar.caption(f"Database: `{data.db_path()}`")
try:
    page.run()
except data.MissingData as missing:  # a table, column or file a page reads is not there (yet)
    st.info(str(missing))
