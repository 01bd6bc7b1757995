"""``keyboard-lm personal encoder|add|train``: personal words outside the vocabulary, learnt on the device."""

from __future__ import annotations

import os

from keyboard_lm.cli.args import (add_data_args, check_same_corpus, default_data_to_run, load_corpus_from_args,
                                  non_negative_float, non_negative_int, positive_int)


def cmd_personal_encoder(args) -> int:
    import collections

    from keyboard_lm.models.run_dir import load_run
    from keyboard_lm.char_encoder.training import build_char_encoder_file, run_training_clients

    run = load_run(args.run_dir)
    default_data_to_run(args, run.info)
    corpus = load_corpus_from_args(args)
    check_same_corpus(args, corpus, run.info, args.run_dir)
    report = build_char_encoder_file(args.run_dir, args.model, args.out, corpus=corpus,
                                     client_ids=run_training_clients(run, corpus), epochs=args.epochs,
                                     max_positions=args.max_positions, seed=args.seed,
                                     context_weight=args.context_weight,
                                     budget_bytes=args.budget_bytes or None)
    m = collections.defaultdict(lambda: float("nan"), report["metrics"])  # a tiny corpus may lack some
    print(f"char encoder for {args.model}: {report['encoder_bytes']:,} bytes (model + encoder "
          f"{report['total_bytes']:,} bytes)")
    print(f"held-out words (never trained on): MSE {m['heldout_mse']:.4g} (the mean row: "
          f"{m['heldout_mse_mean_row']:.4g}); zero-shot recall@3 in context {m['heldout_recall_at_3']:.4f} "
          f"(their true rows: {m['heldout_recall_at_3_true_row']:.4f}); joint recall@3 "
          f"{m['heldout_joint_recall_at_3']:.4f} (true rows {m['heldout_joint_recall_at_3_true_row']:.4f}, "
          f"words removed {m['heldout_joint_recall_at_3_removed']:.4f})")
    print(f"wrote {args.out}")
    return 0


def _personal_session(args):
    from keyboard_lm.inference import Predictor

    predictor = Predictor.load(args.model, char_encoder=args.char_encoder)
    state = args.state if args.state and os.path.exists(args.state) else None
    return predictor.session(personal=state)


def cmd_personal_add(args) -> int:
    session = _personal_session(args)
    result = session.add_personal_words(args.words)
    if result["added"]:
        session.save_personal(args.state)
    for key, words in result.items():
        if words:
            print(f"{key.replace('_', ' ')}: {' '.join(words)}")
    n = len(session.personal.words) if session.personal is not None else 0
    print(f"{args.state}: {n} personal words" if result["added"] else "nothing added; the state file is unchanged")
    return 0


def cmd_personal_train(args) -> int:
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.inference.user_history import UserHistory

    def read(path):
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{path}: cannot read the text: {e}") from None

    adapter = args.char_encoder is not None
    if adapter != (args.state is not None):
        raise ConfigError("--char-encoder and --state go together (the adapter's encoder and the file it is kept in)")
    if not adapter and args.history is None:
        raise ConfigError("give --history FILE (the user history, the default personalization) and/or "
                          "--char-encoder with --state (personal words and their adapter)")
    session = _personal_session(args)
    if args.history is not None and os.path.exists(args.history):
        session.history = UserHistory.load(args.history)
    options = {"max_words": args.max_words, "epochs": args.epochs} if adapter else {}
    report = session.personalize(read(args.text), validation_texts=read(args.validation_text)
                                 if args.validation_text else None, history=args.history is not None,
                                 adapter=adapter, **options)
    if args.history is not None:
        session.history.save(args.history)
        weight = report.get("history_weight")
        chosen = (f"; weight {weight:g}, chosen on {report['history_weight_words']:,} held-out words "
                  f"(EMR3 {report['history_weight_emr3'][weight]:.3f}, the model alone "
                  f"{report['history_weight_emr3'][0.0]:.3f})" if weight is not None and 0.0 in
                  report["history_weight_emr3"] else "")
        print(f"user history: {report['history_words_learnt']:,} words learnt{chosen}; wrote {args.history} "
              f"({report['history_words']:,} distinct words)")
    if not adapter:
        return 0
    if session.personal is not None and session.personal.words:
        session.save_personal(args.state)
    added = report["words_added"]
    print(f"{report['sentences']} sentences; {len(added)} new personal words"
          + (f" ({' '.join(added[:10])}{' ...' if len(added) > 10 else ''})" if added else "")
          + (f"; {report['not_added']} more above the cap" if report["not_added"] else "")
          + (f"; {report['unencodable']} longer than the encoder's limit" if report["unencodable"] else ""))
    if report["trained"]:
        v = report["validation_loss"]
        print(f"adapter: {report['training_positions']:,} positions, epoch {report['kept_epoch']} of "
              f"{report['epochs_run']} kept" + (f", held-out loss {min(v):.3f}" if v else "")
              + f", {report['seconds']:.1f} s")
    else:
        print(f"adapter not trained: {report.get('reason')}")
    print(f"wrote {args.state}" if session.personal is not None and session.personal.words else "nothing written")
    return 0


def register(sub) -> None:
    """Add ``personal encoder``, ``personal add`` and ``personal train``."""
    per = sub.add_parser("personal", help="personal words outside the vocabulary, learnt on the device "
                                          "(docs/personalization.md)").add_subparsers(dest="personal_command",
                                                                                      required=True)
    pe = per.add_parser("encoder", help="train the char word encoder of an exported model (a second .tflite)")
    pe.add_argument("run_dir", metavar="RUN_DIR")
    pe.add_argument("--model", required=True, metavar="MODEL.tflite", help="the run exported by keyboard-lm export")
    pe.add_argument("--out", required=True, metavar="ENCODER.tflite")
    add_data_args(pe)
    pe.add_argument("--allow-other-data", action="store_true",
                    help="train on a corpus other than the run's (default: refuse; without --data the run's own)")
    pe.add_argument("--epochs", type=positive_int, default=8, help="(8)")
    pe.add_argument("--max-positions", type=positive_int, default=100_000,
                    help="contexts sampled from the training clients for the in-context loss (100000)")
    pe.add_argument("--seed", type=non_negative_int, default=0)
    pe.add_argument("--context-weight", type=non_negative_float, default=0.0,
                    help="weight of the in-context loss next to the embedding regression; 0 = regression only, "
                         "the best measured on Tiny Shakespeare (docs/personalization.md) (0)")
    pe.add_argument("--budget-bytes", type=non_negative_int, default=1_677_721,
                    help="fail if model + encoder would be larger (1677721 = 1.6 MiB; 0 = no budget)")
    pe.set_defaults(func=cmd_personal_encoder)
    for name, help_text in (("add", "add words to a user's personal-state file, zero-shot (no training)"),
                            ("train", "learn a user from their text on this machine (user history and/or "
                                      "adapter); nothing is uploaded")):
        q = per.add_parser(name, help=help_text)
        q.add_argument("--model", required=True, metavar="MODEL.tflite")
        q.add_argument("--char-encoder", required=name == "add", metavar="ENCODER.tflite",
                       help=None if name == "add" else "with --state: add the user's words outside the vocabulary "
                                                       "and train their adapter")
        q.add_argument("--state", required=name == "add", metavar="STATE", help="the user's personal-state file "
                                                                                "(created if missing)")
        if name == "train":
            q.add_argument("--history", metavar="FILE",
                           help="learn the text into this user-history file (created if missing): the "
                                "personalization that measured best (docs/personalization.md)")
        if name == "add":
            q.add_argument("words", nargs="+", metavar="WORD")
            q.set_defaults(func=cmd_personal_add)
        else:
            q.add_argument("--text", required=True, metavar="FILE", help="UTF-8 text the user typed")
            q.add_argument("--validation-text", metavar="FILE",
                           help="held-out text for early stopping (default: 10%% of --text's sentences)")
            q.add_argument("--max-words", type=positive_int, default=1000, help="new personal words at most (1000)")
            q.add_argument("--epochs", type=non_negative_int, default=100,
                           help="adapter epochs at most, 0 = words only (100)")
            q.set_defaults(func=cmd_personal_train)
