"""Playback ticks paced by the browser: the next tick is asked for once the page has drawn this one.

A timer on the page (``st.fragment(run_every=...)``) asks for a tick every second whether or not
the last one has reached the browser. When a tick takes longer to compute, send or draw than
that (many algorithms, a short slide, a busy machine, a slow browser), its output piles up in
the server's send queue for the session; Streamlit (1.67, on Starlette) drops a session whose
queue holds 500 messages, without closing the websocket, and the page goes on showing Pause
with nothing moving. Here the browser asks for each tick itself, after it has drawn the
previous one, so at most one tick's output is on its way. A hidden tab draws nothing, so it
asks for no tick until it is shown again.
"""

from __future__ import annotations

import streamlit as st

_NEXT_TICK = st.components.v2.component("topk_watch_next_tick", js="""
export default function({ data, setTriggerValue }) {
  let timer;
  const frame = requestAnimationFrame(() => {
    timer = setTimeout(() => setTriggerValue("drawn", data.tick), data.wait_ms);
  });
  return () => { cancelAnimationFrame(frame); clearTimeout(timer); };
}
""")


def request_next_tick(tick: int, wait: float) -> None:
    """Have the browser rerun the calling fragment ``wait`` seconds after it has drawn the page so far.

    Call it last in the fragment that plays; ``tick`` numbers the ticks (a new number each call,
    so that the browser sees a new request).
    """
    _NEXT_TICK(key="next_tick", data={"tick": tick, "wait_ms": round(max(0.0, wait) * 1000)}, height=0)
