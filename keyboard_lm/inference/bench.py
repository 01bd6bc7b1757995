"""Latency and memory of a Predictor, for ``keyboard-lm bench`` and benchmarks/ (no TensorFlow).

Each timed call is what a keyboard does per keystroke event: a suggestion is
commit one word (tokenize + one step) then top-k + detokenize; a completion
is top-k among the words with the typed prefix.  Single thread.
"""

from __future__ import annotations

import platform
import resource
import time

import numpy as np

from keyboard_lm.errors import ConfigError
from keyboard_lm.inference.predictor import Predictor

BUDGET_MS = 20.0  # Hard et al. 2018: suggestions within 20 ms on the phone


def _pcts(samples_s: list[float]) -> dict:
    a = np.array(samples_s) * 1000.0
    return {"p50_ms": float(np.percentile(a, 50)), "p99_ms": float(np.percentile(a, 99)),
            "mean_ms": float(a.mean()), "n": len(a)}


def run(predictor: Predictor, text: str, repeats: int = 3, personal: str | None = None) -> dict:
    """Time suggestions and completions while streaming ``text`` word by word.

    ``personal``: a personal-state file every session loads (its words join every suggestion).
    """
    words = text.split()
    if len(words) < 50:
        raise ConfigError(f"bench text needs at least 50 words, got {len(words)}")
    suggest_s, complete_s, raw_step_s = [], [], []
    for _ in range(repeats):
        session = predictor.session(personal=personal)
        for word in words:
            t0 = time.perf_counter()
            session.commit(word + " ")
            session.suggestions(3)
            t1 = time.perf_counter()
            session.complete(word[:2], 3)
            t2 = time.perf_counter()
            suggest_s.append(t1 - t0)
            complete_s.append(t2 - t1)
    model = predictor.model
    state = model.initial_state()
    for _ in range(300):
        t0 = time.perf_counter()
        _, _, state = model.step(5, state)
        raw_step_s.append(time.perf_counter() - t0)
    # Context length: cost of one suggestion after 1 word vs after 50 words of streaming.
    by_len = {}
    for n in (1, 50):
        samples = []
        for _ in range(50):
            s = predictor.session(personal=personal)
            for w in words[:n - 1]:
                s.commit(w + " ")
            t0 = time.perf_counter()
            s.commit(words[n - 1] + " ")
            s.suggestions(3)
            samples.append(time.perf_counter() - t0)
        by_len[f"context_{n}_words"] = _pcts(samples)
    out = {"suggestion": _pcts(suggest_s), "completion": _pcts(complete_s), "raw_step": _pcts(raw_step_s),
           **by_len, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
           "machine": platform.machine(), "model_bytes": model.size_bytes, "budget_ms": BUDGET_MS,
           "personal_words": len(session.personal.words) if session.personal is not None else 0}
    out["suggestion_p99_over_budget"] = out["suggestion"]["p99_ms"] / BUDGET_MS
    out["completion_p99_over_budget"] = out["completion"]["p99_ms"] / BUDGET_MS
    out["flatness_50_over_1"] = out["context_50_words"]["p50_ms"] / out["context_1_words"]["p50_ms"]
    return out


def format_report(r: dict) -> str:
    lines = [f"{'':22s} {'p50 ms':>8s} {'p99 ms':>8s} {'p99/20ms':>9s}"]
    for key in ("suggestion", "completion", "raw_step", "context_1_words", "context_50_words"):
        lines.append(f"{key:22s} {r[key]['p50_ms']:8.3f} {r[key]['p99_ms']:8.3f} {r[key]['p99_ms'] / BUDGET_MS:9.3f}")
    lines.append(f"50-word / 1-word context cost: {r['flatness_50_over_1']:.2f}x (streaming keeps it flat)")
    lines.append(f"peak RSS {r['peak_rss_mb']:.0f} MB, model {r['model_bytes']:,} bytes, {r['machine']}")
    return "\n".join(lines)
