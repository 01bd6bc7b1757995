"""``keyboard-lm phrases RUN_DIR``: learn a run's phrase table by federated discovery (``federated.phrases_run``)."""

from __future__ import annotations

from keyboard_lm.cli.args import (add_data_args, check_same_corpus, default_data_to_run, load_corpus_from_args,
                                  non_negative_int, positive_int)


def cmd_phrases(args) -> int:
    from keyboard_lm.federated.phrase_discovery import PhraseDiscoveryConfig
    from keyboard_lm.federated.phrases_run import phrases_on_a_run
    from keyboard_lm.models.run_dir import load_run
    from keyboard_lm.text.phrase_table import TableConfig

    discovery = PhraseDiscoveryConfig(k_anonymity=args.k_anonymity, max_pairs_per_user=args.max_pairs_per_user)
    table = TableConfig(max_bytes=args.table_bytes)
    run = load_run(args.run_dir)
    args.allow_other_data = False
    default_data_to_run(args, run.info)
    corpus = load_corpus_from_args(args)
    check_same_corpus(args, corpus, run.info, args.run_dir)
    fitted = phrases_on_a_run(args.run_dir, corpus, discovery, table, args.budget_bytes or None)
    t = fitted["table"]
    print(f"wrote {args.run_dir}/phrases.bin ({t['bytes']:,} bytes, {t['contexts']:,} contexts) and "
          f"phrase_gate.json; `keyboard-lm export` includes them")
    return 0


def register(sub) -> None:
    """Add ``phrases``."""
    ph = sub.add_parser("phrases", help="learn a run's phrase table by federated discovery (no raw text leaves "
                                        "a client: summed IBLT sketches, a per-user bound, a k-user floor)")
    ph.add_argument("run_dir", metavar="RUN_DIR")
    add_data_args(ph)
    ph.add_argument("--k-anonymity", type=positive_int, default=5, metavar="K",
                    help="release a phrase only when at least K distinct users typed it (5)")
    ph.add_argument("--max-pairs-per-user", type=positive_int, default=256, metavar="N",
                    help="per-user contribution bound: a user's N most frequent (context, next word) pairs, split "
                         "evenly across context lengths 1-4 (256)")
    ph.add_argument("--table-bytes", type=positive_int, default=64 * 1024, metavar="B",
                    help="the table's byte budget inside the model file (65536)")
    ph.add_argument("--budget-bytes", type=non_negative_int, default=1_468_006,
                    help="the exported file's budget, model and table together: the rarest words make room for the "
                         "table (1468006 = 1.4 MiB; 0 = no budget)")
    ph.set_defaults(func=cmd_phrases)
