"""The ``keyboard-lm`` command line.  Flags and argument parsing live only here."""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
warnings.filterwarnings("ignore", message=".*pkg_resources.*")

from keyboard_lm.errors import KeyboardLMError  # noqa: E402

FORMATS = ("default", "jsonl", "textdir", "shakespeare", "stackoverflow")


def add_data_args(p: argparse.ArgumentParser) -> None:
    """--data/--format/--skip-bad, shared by every command that reads a corpus."""
    p.add_argument("--data", metavar="PATH",
                   help="corpus file or directory (not needed for --format default; "
                        "for stackoverflow, the download cache directory)")
    p.add_argument("--format", default="default", choices=FORMATS,
                   help="corpus format (default: the embedded chatterbot-corpus English conversations)")
    p.add_argument("--skip-bad", action="store_true",
                   help="skip malformed records and count them, instead of stopping at the first")


def load_corpus_from_args(args):
    """The corpus named by --data/--format."""
    if args.format == "stackoverflow":
        from keyboard_lm.federated.client_data import stackoverflow_corpus

        return stackoverflow_corpus(args.data)
    from keyboard_lm.data.corpora import load_corpus

    return load_corpus(args.data, args.format, skip_bad=args.skip_bad)


def cmd_data_stats(args) -> int:
    from keyboard_lm.data.split import SplitConfig
    from keyboard_lm.data.stats import corpus_stats, format_stats

    corpus = load_corpus_from_args(args)
    stats = corpus_stats(corpus, vocab_size=args.vocab_size,
                         split=SplitConfig(heldout_fraction=args.heldout_fraction, seed=args.seed))
    print(json.dumps(stats, indent=2) if args.json else format_stats(stats))
    return 0


def add_split_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--heldout-fraction", type=float, default=0.1, help="share of clients held out (0.1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the client split and of training (0)")


def _split_from_args(args):
    from keyboard_lm.data.split import SplitConfig

    return SplitConfig(heldout_fraction=args.heldout_fraction, seed=args.seed)


def cmd_train(args) -> int:
    if not args.centralized:
        from keyboard_lm.errors import ConfigError

        raise ConfigError("federated training is not available in this version; use --centralized")
    from keyboard_lm.training.centralized import CentralizedConfig, train_centralized

    corpus = load_corpus_from_args(args)
    config = CentralizedConfig(optimizer=args.optimizer, learning_rate=args.lr, epochs=args.epochs,
                               batch_size=args.batch_size, seq_len=args.seq_len,
                               clipnorm=args.clipnorm if args.clipnorm > 0 else None, seed=args.seed)
    train_centralized(corpus, args.out, args.model, args.vocab_size, args.embedding_dim, args.units,
                      config, _split_from_args(args))
    print(f"run saved to {args.out}")
    return 0


def cmd_eval(args) -> int:
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.evaluation import evaluate_model, per_client_table, summarize
    from keyboard_lm.models.checkpoint import build_loaded_model, load_run

    run = load_run(args.run_dir)
    corpus = load_corpus_from_args(args)
    split = SplitConfig(**run.info.get("data", {}).get("split", {})) if args.clients == "heldout" else None
    client_ids = corpus.client_ids if split is None else split_clients(corpus.client_ids, split)[1]
    seq_len = run.info.get("hyperparameters", {}).get("seq_len", 20)
    result = evaluate_model(build_loaded_model(run), corpus, client_ids, run.vocab, seq_len)
    result["model"] = run.path
    result["clients_evaluated"] = args.clients
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{run.model_config.model_type} from {run.path} on {len(client_ids)} {args.clients} clients of {corpus.name}")
        print(summarize(result))
        if args.per_client:
            print(per_client_table(result))
    return 0


def cmd_baseline_ngram(args) -> int:
    from keyboard_lm.baselines.ngram import KneserNey
    from keyboard_lm.data.split import split_clients
    from keyboard_lm.evaluation import evaluate_predict_fn, summarize
    from keyboard_lm.text.vocabulary import Vocabulary

    corpus = load_corpus_from_args(args)
    train_ids, heldout_ids = split_clients(corpus.client_ids, _split_from_args(args))
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="keyboard-lm", description="Federated next-word prediction for mobile keyboards.")
    sub = parser.add_subparsers(dest="command", required=True)

    data = sub.add_parser("data", help="inspect corpora").add_subparsers(dest="data_command", required=True)
    stats = data.add_parser("stats", help="clients, examples, words, vocabulary coverage, OOV rate")
    add_data_args(stats)
    stats.add_argument("--vocab-size", type=int, default=10_000, help="vocabulary size incl. special tokens")
    add_split_args(stats)
    stats.add_argument("--json", action="store_true", help="print JSON instead of a table")
    stats.set_defaults(func=cmd_data_stats)

    train = sub.add_parser("train", help="train a next-word model into a run directory")
    add_data_args(train)
    add_split_args(train)
    train.add_argument("--centralized", action="store_true",
                       help="server-trained baseline: SGD on the pooled training clients")
    train.add_argument("--model", default="cifg", help="cifg | si-cifg | lstm | gru (cifg)")
    train.add_argument("--vocab-size", type=int, default=10_000, help="incl. 4 special tokens (10000)")
    train.add_argument("--embedding-dim", type=int, default=96, help="D, tied embedding and projection (96)")
    train.add_argument("--units", type=int, default=670, help="H, cell size (670)")
    train.add_argument("--epochs", type=int, default=5, help="passes over the pooled data (5)")
    train.add_argument("--batch-size", type=int, default=32, help="(32)")
    train.add_argument("--seq-len", type=int, default=20, help="tokens per example (20)")
    train.add_argument("--optimizer", default="sgd", help="sgd | adam (sgd)")
    train.add_argument("--lr", type=float, default=1.0, help="learning rate (1.0)")
    train.add_argument("--clipnorm", type=float, default=5.0, help="gradient norm clip, 0 = off (5)")
    train.add_argument("--out", required=True, metavar="RUN_DIR", help="run directory to write")
    train.set_defaults(func=cmd_train)

    ev = sub.add_parser("eval", help="recall@1/@3, in-vocabulary accuracy, perplexity on held-out clients")
    ev.add_argument("run_dir", metavar="RUN_DIR")
    add_data_args(ev)
    ev.add_argument("--clients", choices=("heldout", "all"), default="heldout",
                    help="held-out clients of the run's split (default) or every client of --data")
    ev.add_argument("--per-client", action="store_true", help="also print per-client metrics")
    ev.add_argument("--json", action="store_true", help="print JSON (pooled and per client)")
    ev.set_defaults(func=cmd_eval)

    base = sub.add_parser("baseline", help="non-neural baselines").add_subparsers(dest="baseline", required=True)
    ng = base.add_parser("ngram", help="interpolated Kneser-Ney n-gram, same vocabulary, split and metrics")
    add_data_args(ng)
    add_split_args(ng)
    ng.add_argument("--order", type=int, default=5, help="n (5, as Hard et al.'s baseline)")
    ng.add_argument("--vocab-size", type=int, default=10_000, help="(10000)")
    ng.add_argument("--seq-len", type=int, default=20, help="context window as the neural models see it (20)")
    ng.add_argument("--per-client", action="store_true", help="include per-client metrics in --json")
    ng.add_argument("--json", action="store_true")
    ng.set_defaults(func=cmd_baseline_ngram)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except KeyboardLMError as e:
        print(f"keyboard-lm: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("keyboard-lm: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
