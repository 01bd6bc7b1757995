"""The whole suggestion stack against the Kneser-Ney 5-gram, on a trained run's held-out users.

Rows (each user's text streamed in order through the exported model's session, ``keyboard_lm.suggestion_evaluation``):
the model alone; the model with the federated phrase table (discovered on the run's fitting clients,
its gate fitted on the run's validation clients, never on held-out users); the same with a per-user
history learnt as the user types; the 5-gram (trained on all training clients, the run's vocabulary),
alone and with the same history. Ratios carry paired 95% intervals over held-out users.

    python benchmarks/stack/phrase_stack.py --run runs/stack/mail_s0 --name phrase_stack_mail_s0 \\
        --budgets 16384,65536,262144
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402


def _clients(run, corpus):
    from keyboard_lm.data.split import SplitConfig, split_clients

    return split_clients(corpus.client_ids, SplitConfig(**run.record.split))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--run", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--budgets", default="16384,65536,131072",
                   help="phrase table byte budgets, comma-separated; the rarest words make room in the 1.4 MiB file")
    p.add_argument("--k", type=int, default=2, help="k-anonymity floor of discovery (2)")
    p.add_argument("--out", default=result_file.results_dir("stack"))
    args = p.parse_args()
    started = time.time()

    from keyboard_lm.baselines.ngram import KneserNey
    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.evaluation import paired_intervals
    from keyboard_lm.export.tflite_export import export_run
    from keyboard_lm.inference.predictor import Predictor
    from keyboard_lm.inference.ranker import Ranker
    from keyboard_lm.export.budget import DEFAULT_BUDGET_BYTES
    from keyboard_lm.federated.phrase_discovery import PhraseDiscoveryConfig
    from keyboard_lm.federated.phrases_run import room_for_table, run_clients, run_counts
    from keyboard_lm.models.run_dir import load_run
    from keyboard_lm.suggestion_evaluation import evaluate_ngram_stack, evaluate_stack, fit_gate
    from keyboard_lm.text.phrase_table import TableConfig

    run = load_run(args.run)
    src = run.record.data_source
    corpus = load_corpus(src.get("path"), src.get("format"))
    train_ids, heldout_ids = _clients(run, corpus)
    fit_ids, val_ids, _ = run_clients(run, corpus)
    model_path = os.path.join(args.run, "model.tflite")
    if not os.path.exists(model_path):
        export_run(args.run, model_path, budget_bytes=None)
    predictor = Predictor.load(model_path)
    vocab = predictor.vocab
    rows, timings = {}, {}

    def timed(name, fn):
        t0 = time.time()
        rows[name] = fn()
        timings[name] = round(time.time() - t0, 1)
        print(f"{name}: recall@3 {rows[name]['pooled']['recall_at_3']:.4f} ({timings[name]} s)", flush=True)

    t0 = time.time()
    counts = run_counts(args.run, corpus, fit_ids, vocab, PhraseDiscoveryConfig(k_anonymity=args.k))
    discovery_seconds = round(time.time() - t0, 1)
    kn = KneserNey(len(vocab), 5).fit(vocab.encode(s) for s in corpus.sentences(train_ids))
    timed("5-gram", lambda: evaluate_ngram_stack(kn, vocab, corpus, heldout_ids))
    timed("5-gram + history", lambda: evaluate_ngram_stack(kn, vocab, corpus, heldout_ids, history=True))
    timed("model", lambda: evaluate_stack(predictor, corpus, heldout_ids))
    tables = {}
    for budget in [int(b) for b in args.budgets.split(",")]:
        v, table, model = room_for_table(args.run, counts, TableConfig(max_bytes=budget), DEFAULT_BUDGET_BYTES,
                                         log=print)
        gate, report = fit_gate(model, table, corpus, val_ids)
        stack = Predictor(model)
        stack.ranker = Ranker(model.vocab, phrases=table, gate=gate)
        pruned = Predictor(model)
        tag = f"table {table.size_bytes // 1024} KB, V={v}"
        tables[tag] = {"bytes": table.size_bytes, "contexts": len(table), "entries": int(len(table.ids)),
                       "vocab_size": v, "gate": gate.to_dict(), "fit": report}
        # The default is chosen on validation users: the stack there, against the pruned model alone.
        tables[tag]["validation"] = {"stack": evaluate_stack(stack, corpus, val_ids)["pooled"],
                                     "model": evaluate_stack(pruned, corpus, val_ids)["pooled"]}
        timed(f"model V={v}", lambda: evaluate_stack(pruned, corpus, heldout_ids))
        timed(f"model + {tag}", lambda: evaluate_stack(stack, corpus, heldout_ids))
        timed(f"model + {tag} + history", lambda: evaluate_stack(stack, corpus, heldout_ids, history=True))
    timed("model + history", lambda: evaluate_stack(predictor, corpus, heldout_ids, history=True))

    lines = [f"# The suggestion stack against the 5-gram: {args.name}", "",
             f"Run `{os.path.basename(os.path.normpath(args.run))}` ({run.record.trainer}), "
             f"{len(heldout_ids)} held-out users, {rows['model']['pooled']['num_events']:,} events; "
             f"phrase discovery on {len(fit_ids)} fitting clients (k = {args.k}, {discovery_seconds} s), "
             f"gate on {len(val_ids)} validation clients.", "",
             "| row | recall@1 | recall@3 | vs 5-gram (recall@3, paired 95%) | vs 5-gram + history | vs model |",
             "|---|---:|---:|---|---|---|"]
    for name, r in rows.items():
        cells = []
        for ref in ("5-gram", "5-gram + history", "model"):
            iv = paired_intervals(r, rows[ref], ("recall_at_3",))["recall_at_3"]
            ratio = r["pooled"]["recall_at_3"] / rows[ref]["pooled"]["recall_at_3"]
            cells.append(f"{ratio:.3f}x [{iv[0]:.3f}, {iv[1]:.3f}]")
        lines.append(f"| {name} | {r['pooled']['recall_at_1']:.4f} | {r['pooled']['recall_at_3']:.4f} | "
                     f"{cells[0]} | {cells[1]} | {cells[2]} |")
    lines += ["", "| table | bytes | contexts | entries | model words | validation recall@3: stack (model alone) |",
              "|---|---:|---:|---:|---:|---|"]
    lines += [f"| {t} | {v['bytes']:,} | {v['contexts']:,} | {v['entries']:,} | {v['vocab_size']:,} | "
              f"{v['validation']['stack']['recall_at_3']:.4f} ({v['validation']['model']['recall_at_3']:.4f}) |"
              for t, v in tables.items()]
    data = {"run": os.path.basename(os.path.normpath(args.run)), "k": args.k, "discovery": counts.info,
            "tables": tables, "rows": {n: r["pooled"] for n, r in rows.items()}, "seconds": timings,
            "per_user": {n: r["clients"] for n, r in rows.items()}}
    result_file.publish(args.name, data, "\n".join(lines) + "\n", args.out, started,
                        seeds="0 (`paired_intervals`' default bootstrap seed, for the 95% intervals; the held-out "
                              "users are the run's own split)")


if __name__ == "__main__":
    main()
