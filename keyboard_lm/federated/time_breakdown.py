"""Where a federated run's wall time goes, phase by phase: what run.json's ``time_breakdown`` and the progress
line report.

A round's time splits into the clients' datasets (sampling and building the round's ``tf.data`` inputs,
``rounds.RoundData.arguments``), TFF's round (``process.next``: the clients' local training, the aggregation
and the server update, which TFF's runtime runs as one call), the server-side weight average, evaluation
(held-out and validation clients), and checkpoints with the run files. ``setup`` is the time before the first
round of this session (reading and encoding the corpus, building TFF's process, restoring a checkpoint);
``other`` is the wall time no phase claims (metrics rows, the progress line, Python between phases). Totals
carry over a resume: each checkpoint's record holds the totals as of that round.
"""

from __future__ import annotations

import contextlib
import time

#: The phases, in the order a round runs them.
PHASES = ("setup", "client_data", "tff_round", "server_average", "evaluation", "checkpoint")
#: Short names for the progress line.
_SHORT = {"client_data": "data", "tff_round": "tff", "server_average": "avg", "evaluation": "eval",
          "checkpoint": "ckpt", "setup": "setup", "other": "other"}


class TimeBreakdown:
    """Cumulative seconds per phase, continuing those a resumed run recorded (``before``)."""

    def __init__(self, before: dict | None = None, since: float | None = None):
        """``since``: the ``time.perf_counter()`` at which this session's run started (default: now)."""
        seconds = (before or {}).get("seconds") or {}
        self.seconds = {p: float(seconds.get(p, 0.0)) for p in PHASES}
        self._other_before = float(seconds.get("other", 0.0))
        self._session_start = time.perf_counter() if since is None else since
        self._claimed = 0.0  # seconds this session that a phase claimed

    def add(self, name: str, seconds: float) -> None:
        """Claim ``seconds`` already spent for phase ``name``."""
        self.seconds[name] += seconds
        self._claimed += seconds

    @contextlib.contextmanager
    def phase(self, name: str):
        """Time the block as ``name`` (one of ``PHASES``)."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            spent = time.perf_counter() - t0
            self.seconds[name] += spent
            self._claimed += spent

    def record(self) -> dict:
        """run.json's ``time_breakdown``: seconds per phase (and ``other``), their total, and shares of it."""
        other = self._other_before + max(0.0, time.perf_counter() - self._session_start - self._claimed)
        seconds = {**self.seconds, "other": other}
        total = sum(seconds.values())
        return {"seconds": {k: round(v, 2) for k, v in seconds.items()}, "total_seconds": round(total, 2),
                "share": {k: round(v / total, 4) if total > 0 else 0.0 for k, v in seconds.items()}}

    def progress(self) -> str:
        """The progress line's part: the phases' shares of the time so far, largest first (``tff 81% eval 9%``)."""
        share = self.record()["share"]
        top = sorted(((v, k) for k, v in share.items() if v >= 0.005), reverse=True)[:4]
        return " ".join(f"{_SHORT[k]} {v:.0%}" for v, k in top)
