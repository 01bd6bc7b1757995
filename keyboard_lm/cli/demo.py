"""``keyboard-lm demo``: the main job. Federated training on the embedded corpus, export, suggestions."""

from __future__ import annotations

import os

from keyboard_lm.cli.args import non_negative_int, positive_int
from keyboard_lm.federated.demo import DEMO_BASE_ROUNDS


def cmd_demo(args) -> int:
    """The main job: federated training on the embedded corpus, then suggestions."""
    from keyboard_lm.data.split import split_clients
    from keyboard_lm.federated.demo import train_demo

    from keyboard_lm.export.tflite_export import export_run
    from keyboard_lm.federated.phrases_run import phrases_after_training
    from keyboard_lm.inference import Predictor
    from keyboard_lm.federated import local_worker
    from keyboard_lm.text.tokenizer import tokenize

    if args.allow_all_interfaces:
        local_worker.allow_all_interfaces()
    local_worker.check_isolation()  # one line now, not after the corpus is read
    run = train_demo(args.out, rounds=args.rounds, seed=args.seed, scratch=args.scratch, overwrite=args.overwrite)
    corpus, split = run["corpus"], run["split"]
    phrases_after_training(args.out, corpus, skip="--no-phrases" if args.no_phrases else None)

    model_path = os.path.join(args.out, "model.tflite")
    card = export_run(args.out, model_path)
    exact = ", computing exactly what was evaluated" if card["quantization"]["exact"] else ""
    table = f" and a phrase table of {card['phrases']['bytes']:,} bytes" if card["phrases"] else ""
    print(f"\nexported {model_path}: {card['size_bytes']:,} bytes, int8 ({card['quantization']['mode']}){exact}, "
          f"vocabulary{table} inside")
    predictor = Predictor.load(model_path)
    heldout = split_clients(corpus.client_ids, split)[1]
    if predictor.ranker.phrases is not None:
        _what_the_table_added(predictor, corpus, heldout)
    print("top-3 suggestions from the TFLite predictor for held-out contexts "
          "(client: context -> strip | actual next word)")
    shown = 0
    for cid in heldout:  # one context per held-out conversation
        words = next((tokenize(t) for t in corpus.clients[cid] if len(tokenize(t)) >= 4), None)
        if words is None or shown >= args.contexts:
            continue
        context, actual = " ".join(words[:3]), words[3]
        strip = "  ".join(f"{w} ({p:.2f})" for w, p in predictor.suggest(context))
        print(f"  {cid}: \"{context}\" -> {strip} | {actual}")
        shown += 1
    example = "what is your"
    completions = ", ".join(w for w, _ in predictor.complete(example, "f"))
    print(f"completing \"{example} f\" -> {completions}")
    print(f"\nrun directory: {args.out} (metrics.csv, metrics.png, weights.npz, vocab.txt, checkpoints/, "
          f"model.tflite)")
    return 0


def _what_the_table_added(predictor, corpus, heldout) -> None:
    """Held-out recall of the exported file's strips, with its phrase table and without (the same model)."""
    from keyboard_lm.evaluation import paired_intervals
    from keyboard_lm.suggestion_evaluation import evaluate_stack, table_set_aside

    stack = evaluate_stack(predictor, corpus, heldout)
    with table_set_aside(predictor):
        alone = evaluate_stack(predictor, corpus, heldout)
    low, high = paired_intervals(stack, alone, ("recall_at_3",))["recall_at_3"]
    s, a = stack["pooled"]["recall_at_3"], alone["pooled"]["recall_at_3"]
    print(f"held-out recall@3 of the strips ({len(heldout)} users, {stack['pooled']['num_events']:,} words): "
          f"{s:.4f} with the phrase table, {a:.4f} from the model alone ({s / a:.3f}x, paired 95% interval "
          f"[{low:.3f}, {high:.3f}])")


def register(sub) -> None:
    """Add ``demo``."""
    demo = sub.add_parser("demo", help="federated training on the embedded corpus, then suggestions")
    demo.add_argument("--rounds", type=positive_int, default=None,
                      help=f"({DEMO_BASE_ROUNDS} from the base, 100 with --scratch)")
    demo.add_argument("--scratch", action="store_true",
                      help="start from random weights with the small CIFG the demo trained before the base model "
                           "existed, instead of fine-tuning the base")
    demo.add_argument("--out", default=os.path.join("runs", "demo"), help="run directory (runs/demo)")
    demo.add_argument("--contexts", type=non_negative_int, default=8, help="held-out contexts to show (8)")
    demo.add_argument("--seed", type=non_negative_int, default=0, help="seed of training (0)")
    demo.add_argument("--no-phrases", action="store_true",
                      help="learn no phrase table (default: learn one by federated discovery and ship it in the file)")
    demo.add_argument("--overwrite", action="store_true",
                      help="write into --out even if it holds something other than an earlier demo run")
    demo.add_argument("--allow-all-interfaces", action="store_true",
                      help="where the system permits no network namespace (the demo is refused there without "
                           "this flag), let TFF's local worker listen on every interface (docs/distributed.md)")
    demo.set_defaults(func=cmd_demo)
