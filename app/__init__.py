"""Top-k Watch dashboard (Streamlit): Live, Runs and Benchmarks pages.

Start it with ``streamlit run app/streamlit_app.py -- --db var/topk.duckdb``.
"""
