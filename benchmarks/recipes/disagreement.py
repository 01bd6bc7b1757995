"""Where a trained neural model and the Kneser-Ney 5-gram disagree on held-out users.

Both models predict every held-out next-word event of a run's own split and
vocabulary (the n-gram fitted on the run's training clients, as
`recipe_benchmark.py` fits it). The report splits the events by

* who gets them in the top 3: both, only the neural model, only the n-gram,
  neither (and how many are ``<oov>`` targets, which nobody can get);
* the longest context the n-gram has seen in training (0 = unigram only ...
  4 = a full 4-word context seen before): the n-gram's edge is memorised
  phrases, and this shows how much of its lead comes from them;
* how frequent the target word is (its vocabulary rank);

and gives the recall@3 of linear mixtures (1 - a) p_neural + a p_ngram, a
diagnostic of how complementary the two are (chosen on held-out users, so
not a recipe).

    python benchmarks/recipes/disagreement.py RUN_DIR --data ../shared/data/spamassassin-ham/ham.mbox --format mbox \\
        --name disagreement_spamassassin
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.runs import seeds_line  # noqa: E402

RANKS = ((0, 100, "top 100 words"), (100, 1000, "ranks 100-1,000"), (1000, 10**9, "rank 1,000 and beyond"))
MIXTURES = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)


def _matched_order(kn, context) -> int:
    """How many previous tokens of ``context`` the n-gram has seen as a context in training (0..order-1)."""
    context = tuple(context[-(kn.order - 1):])
    best = 0
    for k in range(1, len(context) + 1):
        if kn.levels[k].totals.get(context[len(context) - k:]):
            best = k
    return best


def event_hits(model, kn, xs: np.ndarray, ys: np.ndarray, mixtures=MIXTURES, orders: bool = True) -> dict:
    """Every next-word event of ``xs``/``ys`` ([N, T] ids): its target, position, the n-gram's matched context
    length (``orders``), and per n-gram weight a whether the mixture (1 - a) p_neural + a p_ngram has the target
    in its top 3 (a = 0: the neural model alone, a = 1: the n-gram alone), counted as `keyboard-lm eval` counts."""
    from keyboard_lm.evaluation import log_softmax
    from keyboard_lm.text.spec import SPECIAL_TOKENS as SP

    special = np.array(sorted(SP.ids))
    out = {"target": [], "position": [], "order": [], "hits": {a: [] for a in mixtures}}
    for start in range(0, len(xs), 128):  # chunks: [events, V] float64 a few times per chunk
        x, y = xs[start:start + 128], ys[start:start + 128]
        event = (y != SP.pad_id) & (y != SP.eos_id)
        target = y[event]
        p_nn = np.exp(log_softmax(np.asarray(model(x, training=False))))[event]
        p_kn = np.exp(kn.predict_log_probs(x).astype(np.float64))[event]
        rows, cols = np.nonzero(event)
        out["target"].append(target)
        out["position"].append(cols)
        if orders:
            out["order"].append(np.array([_matched_order(kn, x[b, :t + 1].tolist()) for b, t in zip(rows, cols)],
                                         np.int64))
        for a in mixtures:
            p = (1 - a) * p_nn + a * p_kn
            p[:, special] = -1.0  # never suggested (evaluation.position_stats)
            top3 = np.argpartition(-p, 3, axis=-1)[:, :3]
            out["hits"][a].append((top3 == target[:, None]).any(axis=-1))
    cat = lambda parts: np.concatenate(parts) if parts else np.zeros(0, np.int64)  # noqa: E731
    return {"target": cat(out["target"]), "position": cat(out["position"]), "order": cat(out["order"]),
            "hits": {a: cat(v) for a, v in out["hits"].items()}}


def analyse(run_dir: str, data: str, fmt: str, order: int = 5, seq_len: int = 20, limit: int | None = None) -> dict:
    from keyboard_lm.baselines.ngram import KneserNey
    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.examples import corpus_examples
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.models.run_dir import build_loaded_model, load_run
    from keyboard_lm.text.spec import SPECIAL_TOKENS as SP

    run = load_run(run_dir)
    corpus = load_corpus(data, fmt)
    train_ids, heldout_ids = split_clients(corpus.client_ids, SplitConfig(**run.info["data"]["split"]))
    vocab = run.vocab
    kn = KneserNey(len(vocab), order).fit(vocab.encode(s) for s in corpus.sentences(train_ids))
    pairs = list(corpus_examples(corpus.sentences(heldout_ids), vocab, seq_len))[:limit]
    xs = np.array([x for x, _ in pairs], np.int32).reshape(-1, seq_len)
    ys = np.array([y for _, y in pairs], np.int32).reshape(-1, seq_len)
    ev = event_hits(build_loaded_model(run), kn, xs, ys)
    arr = {"order": ev["order"], "rank": ev["target"] - len(SP.tokens), "oov": ev["target"] == SP.oov_id,
           "nn": ev["hits"][0.0], "kn": ev["hits"][1.0]}
    mix = {a: float(v.mean()) for a, v in ev["hits"].items()}
    nn, kn_hit = arr["nn"], arr["kn"]
    n = len(nn)

    def share(mask) -> float:
        return float(mask.sum() / n)

    who = {"both": share(nn & kn_hit), "neural only": share(nn & ~kn_hit), "n-gram only": share(~nn & kn_hit),
           "neither, <oov> target": share(~nn & ~kn_hit & arr["oov"]),
           "neither, in-vocabulary target": share(~nn & ~kn_hit & ~arr["oov"])}
    by_order = []
    for k in range(order):
        m = arr["order"] == k
        if m.any():
            by_order.append({"matched_context": k, "events": int(m.sum()), "share": share(m),
                             "neural_recall_at_3": float(nn[m].mean()), "ngram_recall_at_3": float(kn_hit[m].mean()),
                             "ngram_lead_points": float((kn_hit[m].sum() - nn[m].sum()) / n * 100)})
    by_rank = []
    iv = ~arr["oov"]
    for lo, hi, label in RANKS:
        m = iv & (arr["rank"] >= lo) & (arr["rank"] < hi)
        if m.any():
            by_rank.append({"targets": label, "events": int(m.sum()), "share": share(m),
                            "neural_recall_at_3": float(nn[m].mean()), "ngram_recall_at_3": float(kn_hit[m].mean()),
                            "ngram_lead_points": float((kn_hit[m].sum() - nn[m].sum()) / n * 100)})
    return {"run": os.path.basename(os.path.normpath(run_dir)), "run_info": {
                "init_from": run.info.get("init_from"), "rounds_done": run.info.get("rounds_done"),
                "epochs_done": run.info.get("epochs_done"), "best": run.info.get("best")},
            "corpus": f"{fmt}:{os.path.basename(data)}", "events": n, "oov_share": share(arr["oov"]),
            "neural_recall_at_3": float(nn.mean()), "ngram_recall_at_3": float(kn_hit.mean()),
            "who_gets_it": who, "by_matched_context": by_order, "by_target_rank": by_rank, "mixtures": mix}


def markdown(r: dict) -> str:
    lines = [f"Run `{r['run']}` on {r['corpus']}, held-out users: {r['events']:,} next-word events "
             f"({r['oov_share']:.1%} are `<oov>`, a miss for both). Neural recall@3 {r['neural_recall_at_3']:.4f}, "
             f"Kneser-Ney 5-gram {r['ngram_recall_at_3']:.4f}.", "",
             "| who has the target in its top 3 | share of events |", "|---|---|"]
    lines += [f"| {k} | {v:.1%} |" for k, v in r["who_gets_it"].items()]
    lines += ["", "| longest training context the n-gram matches | events | share | neural recall@3 "
              "| n-gram recall@3 | n-gram lead (points of overall recall@3) |", "|---|---|---|---|---|---|"]
    lines += [f"| {o['matched_context']} words | {o['events']:,} | {o['share']:.1%} | {o['neural_recall_at_3']:.4f} "
              f"| {o['ngram_recall_at_3']:.4f} | {o['ngram_lead_points']:+.2f} |" for o in r["by_matched_context"]]
    lines += ["", "| in-vocabulary targets | events | share | neural recall@3 | n-gram recall@3 "
              "| n-gram lead (points) |", "|---|---|---|---|---|---|"]
    lines += [f"| {o['targets']} | {o['events']:,} | {o['share']:.1%} | {o['neural_recall_at_3']:.4f} "
              f"| {o['ngram_recall_at_3']:.4f} | {o['ngram_lead_points']:+.2f} |" for o in r["by_target_rank"]]
    lines += ["", "| mixture weight a of the n-gram | " + " | ".join(f"{a:g}" for a in r["mixtures"]) + " |",
              "|---|" + "---|" * len(r["mixtures"]),
              "| recall@3 | " + " | ".join(f"{v:.4f}" for v in r["mixtures"].values()) + " |",
              "", "The mixture row is chosen on held-out users: a diagnostic of how complementary the two "
              "models are, not a recipe."]
    return "\n".join(lines) + "\n"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("run", help="a run directory (centralized or federated)")
    p.add_argument("--data", required=True)
    p.add_argument("--format", required=True)
    p.add_argument("--order", type=int, default=5)
    p.add_argument("--limit", type=int, default=None, help="only the first N held-out sequences")
    p.add_argument("--name", default="disagreement")
    p.add_argument("--out", default=result_file.results_dir("recipes"))
    args = p.parse_args()
    result = analyse(args.run, args.data, args.format, args.order, limit=args.limit)
    text = markdown(result)
    print(text)
    print("written:", *result_file.write(args.name, result, text, args.out, seeds=seeds_line(
        {"": args.run}, "none drawn here (deterministic: the run's held-out users scored by the run and by a 5-gram "
                        "fitted on its training users)")))


if __name__ == "__main__":
    main()
