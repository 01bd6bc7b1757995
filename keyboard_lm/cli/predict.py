"""``keyboard-lm predict`` and ``bench``: suggestions, completions and latency from an exported file."""

from __future__ import annotations

import json

from keyboard_lm.cli.args import positive_int


def cmd_predict(args) -> int:
    from keyboard_lm.inference import Predictor

    predictor = Predictor.load(args.model, blocklist=args.blocklist or (), char_encoder=args.char_encoder)
    if args.personal is not None or args.history is not None:
        if args.interactive or args.context is None:
            from keyboard_lm.errors import ConfigError

            raise ConfigError("--personal and --history need a CONTEXT (not --interactive)")
        history = None
        if args.history is not None:
            from keyboard_lm.inference.user_history import UserHistory

            history = UserHistory.load(args.history)
        # learn=False: asking for suggestions is not typing; the history file is read, never changed.
        session = predictor.session(personal=args.personal, history=history, learn=False)
        session.commit(args.context, replay_tail=True)
        pairs = session.complete(args.complete, args.k) if args.complete is not None else session.suggestions(args.k)
        return _print_pairs(pairs, args.json)
    if args.interactive:
        from keyboard_lm.errors import ConfigError
        from keyboard_lm.inference.interactive import run_interactive

        if args.complete is not None:  # both were silently ignored
            raise ConfigError("--complete does not go with --interactive (the strip completes the word as you type it)")
        if args.json:
            raise ConfigError("--json does not go with --interactive (the strip is for a terminal)")
        # CONTEXT is the text already in the field when typing starts (each field starts with it)
        return run_interactive(predictor, args.k, context=args.context or "")
    if args.context is None:
        from keyboard_lm.errors import ConfigError

        raise ConfigError("give a CONTEXT to predict after, or --interactive")
    if args.complete is not None:
        pairs = predictor.complete(args.context, args.complete, args.k)
    else:
        pairs = predictor.suggest(args.context, args.k)
    return _print_pairs(pairs, args.json)


def _print_pairs(pairs, as_json: bool) -> int:
    if as_json:
        print(json.dumps([{"word": w, "probability": p} for w, p in pairs]))
    else:
        for w, p in pairs:
            print(f"{w}\t{p:.4f}")
    return 0


def cmd_bench(args) -> int:
    from keyboard_lm.inference import Predictor
    from keyboard_lm.inference.bench import format_report, run

    predictor = Predictor.load(args.model)
    if args.text_file:
        text = _read_text(args.text_file)
    else:
        from keyboard_lm.data.corpora import load_default

        corpus = load_default()
        text = " ".join(t for c in corpus.client_ids[:200] for t in corpus.clients[c])
    result = run(predictor, " ".join(text.split()[:400]), repeats=args.repeats)
    print(json.dumps(result, indent=2) if args.json else format_report(result))
    return 0


def _read_text(path: str) -> str:
    """The UTF-8 text of ``path``; a file that is not UTF-8 is refused in one line naming the byte offset."""
    from keyboard_lm.errors import DataError

    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise DataError(f"{path}: cannot read the text ({e.strerror or e})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not UTF-8 text: byte {e.start:,} (0x{raw[e.start]:02x}) {e.reason}") from None


def register(sub) -> None:
    """Add ``predict`` and ``bench``."""
    pr = sub.add_parser("predict", help="top-k next words (or completions) from an exported .tflite")
    pr.add_argument("model", metavar="MODEL.tflite")
    pr.add_argument("context", nargs="?", help="text typed so far")
    pr.add_argument("-k", type=positive_int, default=3, help="suggestions (3)")
    pr.add_argument("--complete", metavar="PREFIX", help="complete the word being typed")
    pr.add_argument("--blocklist", nargs="*", metavar="WORD", help="words never to suggest")
    pr.add_argument("--interactive", action="store_true", help="suggestions update as you type")
    pr.add_argument("--json", action="store_true")
    pr.add_argument("--char-encoder", metavar="ENCODER.tflite", help="the model's char encoder (with --personal)")
    pr.add_argument("--personal", metavar="STATE", help="a user's personal-state file: suggest their words too")
    pr.add_argument("--history", metavar="FILE", help="a user-history file (`personal train --history`): mix "
                                                      "what the user typed into the suggestions (read only)")
    pr.set_defaults(func=cmd_predict)

    be = sub.add_parser("bench", help="p50/p99 latency per suggestion and completion, peak memory")
    be.add_argument("model", metavar="MODEL.tflite")
    be.add_argument("--text-file", help="UTF-8 text to stream (default: the embedded corpus)")
    be.add_argument("--repeats", type=positive_int, default=3)
    be.add_argument("--json", action="store_true")
    be.set_defaults(func=cmd_bench)
