"""``keyboard-lm eval`` (a run directory or an exported file) and ``baseline ngram``, on held-out clients."""

from __future__ import annotations

import json
import os

from keyboard_lm.cli.args import (VOCAB_SIZE, add_data_args, add_split_args, check_same_corpus, default_data_to_run,
                                  load_corpus_from_args, positive_int, split_from_args)


def cmd_eval(args) -> int:
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.evaluation import evaluate_predict_fn, per_client_table, summarize

    if args.intervals is not None and args.intervals < 100:
        from keyboard_lm.errors import ConfigError

        raise ConfigError(f"--intervals {args.intervals}: at least 100 bootstrap draws make a 95% interval")
    if os.path.isfile(args.run_dir):  # an exported .tflite file
        from keyboard_lm.inference.model_file import ModelFile

        model = ModelFile.load(args.run_dir)
        vocab, split_info, seq_len = model.vocab, model.meta.get("split") or {}, model.meta.get("seq_len", 20)
        predict, kind = model.predict_log_probs, f"{model.meta['model']['model_type']} (TFLite)"
        info = {"data": model.meta.get("data") or {}}
    else:
        from keyboard_lm.evaluation import evaluate_model
        from keyboard_lm.models.run_dir import build_loaded_model, load_run

        run = load_run(args.run_dir)
        vocab, split_info, seq_len = run.vocab, run.record.split or {}, run.record.seq_len
        keras_model = build_loaded_model(run)
        predict, kind, info = None, run.model_config.model_type, run.info
    default_data_to_run(args, info)
    corpus = load_corpus_from_args(args)
    check_same_corpus(args, corpus, info, args.run_dir)
    split = SplitConfig(**split_info) if args.clients == "heldout" else None
    client_ids = corpus.client_ids if split is None else split_clients(corpus.client_ids, split)[1]
    if args.stack:
        return _eval_stack(args, corpus, split_info, client_ids)
    if predict is None:
        result = evaluate_model(keras_model, corpus, client_ids, vocab, seq_len)
    else:
        result = evaluate_predict_fn(predict, corpus, client_ids, vocab, seq_len, batch_size=32)
    result["model"] = args.run_dir
    result["clients_evaluated"] = args.clients
    if args.intervals:
        from keyboard_lm.evaluation import intervals

        result["intervals"] = {"level": 0.95, "replicates": args.intervals, "unit": "held-out user",
                               **intervals(result, replicates=args.intervals)}
    overlap_lines = []
    init = info.get("init_from") or (info.get("training") or {}).get("init_from")
    if init:
        result["base_overlap"], overlap_lines = _base_overlap(init, corpus, client_ids)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{kind} from {args.run_dir} on {len(client_ids)} {args.clients} clients of {corpus.name}")
        print(summarize(result))
        if args.intervals:
            print(interval_line(result["intervals"]))
        for line in overlap_lines:
            print(line)
        if args.per_client:
            print(per_client_table(result))
    return 0


def _eval_stack(args, corpus, split_info: dict, heldout_ids) -> int:
    """``eval --stack``: the deployed file's strips, streamed per user in order (``suggestion_evaluation``)."""
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.evaluation import paired_intervals
    from keyboard_lm.inference.predictor import Predictor
    from keyboard_lm.suggestion_evaluation import stack_rows

    if not os.path.isfile(args.run_dir):
        raise ConfigError(f"{args.run_dir}: --stack evaluates an exported file (keyboard-lm export RUN_DIR --out "
                          "MODEL.tflite ships the run's phrase table with it), not a run directory")
    if args.clients != "heldout" or not split_info:
        raise ConfigError("--stack compares with an n-gram trained on the run's training clients: it needs the "
                          "held-out clients of the file's split")
    train_ids = split_clients(corpus.client_ids, SplitConfig(**split_info))[0]
    rows = stack_rows(Predictor.load(args.run_dir), corpus, heldout_ids, train_ids)
    ngram, ngram_history = list(rows)[:2]
    report = {}
    for name, result in rows.items():
        ref = ngram_history if "history" in name else ngram
        report[name] = {**result["pooled"], "vs": ref, "ratio_recall_at_3":
                        result["pooled"]["recall_at_3"] / rows[ref]["pooled"]["recall_at_3"],
                        "paired_interval_recall_at_3": paired_intervals(
                            result, rows[ref], ("recall_at_3",), replicates=args.intervals or 1000)["recall_at_3"]}
    if args.json:
        print(json.dumps({"model": args.run_dir, "rows": report}, indent=2))
        return 0
    print(f"the suggestion stack of {args.run_dir} on {len(heldout_ids)} held-out users of {corpus.name}, each "
          "user's text in order (history: learnt as the user types)")
    for name, r in report.items():
        low, high = r["paired_interval_recall_at_3"]
        versus = "" if name == r["vs"] else f"  {r['ratio_recall_at_3']:.3f}x the {r['vs']} [{low:.3f}, {high:.3f}]"
        print(f"  {name:32s} recall@1 {r['recall_at_1']:.4f}  recall@3 {r['recall_at_3']:.4f}{versus}")
    return 0


def interval_line(found: dict) -> str:
    """One line of 95% intervals: ``recall@3 [0.2301, 0.2489]  ...``."""
    names = {"recall_at_1": "recall@1", "recall_at_3": "recall@3", "perplexity": "perplexity",
             "perplexity_no_eos": "no EOS", "perplexity_no_eos_oov": "no EOS/OOV"}
    parts = []
    for key in (k for k in names if k in found):
        digits = ".1f" if key.startswith("perplexity") else ".4f"
        parts.append(f"{names[key]} [{found[key][0]:{digits}}, {found[key][1]:{digits}}]")
    return (f"{found['level']:.0%} intervals over {found['unit']}s ({found['replicates']} bootstrap draws): "
            + "  ".join(parts))


def _base_overlap(init: dict, corpus, client_ids) -> tuple[dict, list[str]]:
    """The share of the evaluated clients' sentences the run's base saw, and lines to print.

    Checked against the fingerprint of the base the run started from: the shipped base when the
    run's ``init_from`` names it and its weights are the ones recorded, else the run directory it
    names, if it still exists and ships a fingerprint.
    """
    from keyboard_lm.data.overlap import count_parts, describe_overlap, load_fingerprint
    from keyboard_lm.models.run_dir import WEIGHTS_FILE, sha256_file
    from keyboard_lm.models.warm_start import BASE_NAME, base_model_dir

    path = base_model_dir() if init.get("name") == BASE_NAME else init.get("path")
    name = f"base {init.get('name')!r}"
    if not path or not os.path.isdir(path):
        return {"checked": False, "reason": f"{path}: not found"}, [f"{name} overlap not checked: {path} not found"]
    weights = os.path.join(path, WEIGHTS_FILE)
    if not os.path.isfile(weights) or sha256_file(weights) != init.get("weights_sha256"):
        why = f"{weights} is not the base this run started from (weights sha256 differs)"
        return {"checked": False, "reason": why}, [f"{name} overlap not checked: {why}"]
    fingerprint = load_fingerprint(path)
    if fingerprint is None:
        why = f"{path} ships no sentence fingerprint"
        return {"checked": False, "reason": why}, [f"{name} overlap not checked: {why}"]
    report = {"checked": True, **count_parts(fingerprint, corpus, {"evaluated": client_ids})}
    return report, describe_overlap(report, name)


def cmd_baseline_ngram(args) -> int:
    from keyboard_lm.baselines.ngram import KneserNey
    from keyboard_lm.data.split import split_clients
    from keyboard_lm.evaluation import evaluate_predict_fn, summarize
    from keyboard_lm.text.vocabulary import Vocabulary

    corpus = load_corpus_from_args(args)
    train_ids, heldout_ids = split_clients(corpus.client_ids, split_from_args(args))
    vocab = Vocabulary.from_sentences(corpus.sentences(train_ids), args.vocab_size)
    model = KneserNey(len(vocab), args.order).fit(vocab.encode(s) for s in corpus.sentences(train_ids))
    result = evaluate_predict_fn(model.predict_log_probs, corpus, heldout_ids, vocab, args.seq_len, batch_size=32)
    result["model"] = f"kneser-ney order {args.order}, V={len(vocab)}"
    if args.json:
        print(json.dumps({k: v for k, v in result.items() if k != "clients" or args.per_client}, indent=2))
    else:
        print(f"{result['model']}, trained on {len(train_ids)} clients, evaluated on {len(heldout_ids)} held-out clients")
        print(summarize(result))
    return 0


def register(sub) -> None:
    """Add ``eval`` and ``baseline ngram``."""
    ev = sub.add_parser("eval", help="recall@1/@3, in-vocabulary accuracy, perplexity on held-out clients")
    ev.add_argument("run_dir", metavar="RUN_DIR|MODEL.tflite", help="a run directory or an exported .tflite file")
    add_data_args(ev)
    ev.add_argument("--clients", choices=("heldout", "all"), default="heldout",
                    help="held-out clients of the run's split (default) or every client of --data")
    ev.add_argument("--per-client", action="store_true", help="also print per-client metrics")
    ev.add_argument("--allow-other-data", action="store_true",
                    help="evaluate on a corpus other than the one the model was trained on (default: refuse; "
                         "without --data/--format the run's own corpus is used)")
    ev.add_argument("--json", action="store_true", help="print JSON (pooled and per client)")
    ev.add_argument("--stack", action="store_true",
                    help="evaluate an exported file as a keyboard runs it: each held-out user's text in order, the "
                         "model alone, with the file's phrase table, and with a history learnt as the user types, "
                         "against the Kneser-Ney 5-gram alone and with the same history (paired 95%% intervals)")
    ev.add_argument("--intervals", type=positive_int, nargs="?", const=1000, default=None, metavar="DRAWS",
                    help="also give 95%% bootstrap intervals over the held-out users of recall@1, recall@3 and the "
                         "three perplexities (DRAWS resamplings, 1000 if not given; seeded)")
    ev.set_defaults(func=cmd_eval)

    base = sub.add_parser("baseline", help="non-neural baselines").add_subparsers(dest="baseline", required=True)
    ng = base.add_parser("ngram", help="interpolated Kneser-Ney n-gram, same vocabulary, split and metrics")
    add_data_args(ng)
    add_split_args(ng)
    ng.add_argument("--order", type=positive_int, default=5, help="n (5, as Hard et al.'s baseline)")
    ng.add_argument("--vocab-size", type=positive_int, default=VOCAB_SIZE, help="(%(default)s)")
    ng.add_argument("--seq-len", type=positive_int, default=20, help="context window as the neural models see it (20)")
    ng.add_argument("--per-client", action="store_true", help="include per-client metrics in --json")
    ng.add_argument("--json", action="store_true")
    ng.set_defaults(func=cmd_baseline_ngram)
