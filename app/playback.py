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

from dataclasses import dataclass
from time import perf_counter

import streamlit as st

from app import live_state

_NEXT_TICK = st.components.v2.component("topk_watch_next_tick", js="""
export default function({ data, setTriggerValue }) {
  let timer;
  const frame = requestAnimationFrame(() => {
    timer = setTimeout(() => setTriggerValue("drawn", data.tick), data.wait_ms);
  });
  return () => { cancelAnimationFrame(frame); clearTimeout(timer); };
}
""")


@dataclass(frozen=True)
class Tick:
    """The work of one playback tick: what the speed asks for over the time since the last tick."""

    start: float  # perf_counter() when the tick began
    since_last: float  # seconds since the last tick began (TICK for the first after Play)
    due: int  # slides (or rows) the speed asks for over that time
    budget: float  # most seconds of engine work

    @property
    def length(self) -> float:
        """The tick's real length for the pace caption (at least TICK)."""
        return max(live_state.TICK, self.since_last)


def forget_last_tick(prefix: str) -> None:
    """The first tick after Play has no tick before it (the page's keys start with ``prefix``)."""
    st.session_state.pop(f"{prefix}tick_start", None)


def start_tick(prefix: str, speed: float) -> Tick:
    """Begin a tick of a page playing ``speed`` per second: its work since the page's last tick."""
    ss = st.session_state
    start = perf_counter()
    since_last = start - ss.get(f"{prefix}tick_start", start - live_state.TICK)
    ss[f"{prefix}tick_start"] = start
    due, budget = live_state.tick_work(speed, since_last)
    return Tick(start, since_last, due, budget)


def request_next(prefix: str, started: float) -> None:
    """Count the page's tick and have the browser rerun the calling fragment once it has drawn the page
    so far, at least :data:`~app.live_state.TICK` s after ``started``.

    Call it last in the fragment that plays; each tick has a new number, so that the browser sees a new
    request.
    """
    ss = st.session_state
    ss[f"{prefix}tick"] = ss.get(f"{prefix}tick", 0) + 1
    wait = max(0.0, live_state.TICK - (perf_counter() - started))
    _NEXT_TICK(key="next_tick", data={"tick": ss[f"{prefix}tick"], "wait_ms": round(wait * 1000)}, height=0)
