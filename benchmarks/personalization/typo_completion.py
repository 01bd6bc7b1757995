"""Typo-tolerant completion on held-out users: is the intended word in the strip when it was typed with a typo?

For each corpus (the embedded corpus, Tiny Shakespeare, the SpamAssassin mail) and a model file trained on that
corpus's training users (the file records its split and its corpus's fingerprint), each held-out user's text is
typed in order (its first ``--max-words`` words), word by word and letter by letter, and one typo is
injected into a share of the words (the injection model below, seeded by ``--seed`` and the user). At every
keystroke the 3-word strip is ranked twice from the same session, as the keyboard ranks it, by the file's
ranker without typo correction ("before": the words that start with the letters typed) and with the default
``TypoModel`` ("after"). The session then commits the intended word: the user fixed the typo one way or
another, and the context stays the text they meant.

Injection (each word of 3+ letters a-z, with probability ``--rate``; one typo, its kind uniform among the four,
its position uniform among those where the kind changes the word):

* substitution: a letter replaced by one of its QWERTY neighbours (uniform);
* transposition: two adjacent, different letters swapped;
* omission: a letter left out;
* insertion: after a letter, an extra key, uniform among that letter itself and its neighbours.

Reported per corpus, pooled over users, with 95% percentile bootstrap intervals over users (1,000 draws of
users with replacement, paired for the differences):

* words typed with a typo whose intended word is in the strip after the last letter typed (before, after);
* the same at any keystroke of the word (a tap would have fixed it);
* words typed without a typo whose word is in the strip after the last letter (what corrections cost them);
  in both, the letters as typed kept beside a correction do not count: they are no prediction;
* keystrokes saved: 1 - keys pressed / keys without suggestions, where a word costs the letters typed up to
  the first strip that holds it plus the tap (a word in the next-word strip costs one tap), and a word never
  in the strip its letters and a space; keys without suggestions are the letters typed (slips included) and a
  space. Two ways of counting a typo no strip offered a fix for: left misspelt ("typos left"), or fixed by
  hand after the word ("typos fixed": backspaces back to the slip and the rest of the intended word typed
  again, in both the keys pressed and the keys without suggestions).

    python benchmarks/personalization/typo_completion.py [--corpora default,shakespeare,mail] [--model NAME=FILE ...]
        [--rate 0.1] [--seed 0] [--max-words 1000] [--name typo_completion]

Writes benchmarks/results/personalization/NAME.{json,md} (machine, date, command, seeds).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.typos import KINDS, inject, neighbour_keys  # noqa: E402

SHARED = os.path.join(os.path.dirname(REPO), "shared", "data")
#: corpus name -> (path or None, format, default model file)
CORPORA = {"default": (None, "default", "runs/stack/default_s0/stack.tflite"),
           "shakespeare": (os.path.join(SHARED, "tinyshakespeare", "input.txt"), "shakespeare",
                           "runs/typo/shakespeare_s0.tflite"),
           "mail": (os.path.join(SHARED, "spamassassin-ham", "ham.mbox"), "mbox",
                    "android_demo/app/src/main/assets/model.tflite")}
#: Where the default model files come from.
MODEL_NOTES = {"default": "the embedded corpus's stack run (`train --init-from base`, federated, seed 0) with its "
                          "phrase table, as stack_targets.py exported it",
               "shakespeare": "runs/stack/shakespeare_s0 (`train --init-from base`, federated, 350 rounds, seed 0) "
                              "exported by `keyboard-lm export runs/stack/shakespeare_s0 --out "
                              "runs/typo/shakespeare_s0.tflite`",
               "mail": "the demo keyboard's model (runs/stack/mail_s0 exported; android_demo's assets README)"}
K = 3
_TYPED = re.compile(r"[a-z']+")  # words typed on the letter layer: the ones measured
_INJECTED = re.compile(r"[a-z]{3,}")  # words a typo is injected into
#: Per-user sums: name -> (numerator, denominator) of each pooled share.
SHARES = {"typo_in_strip_at_end_before": ("typo_end_before", "typo_words"),
          "typo_in_strip_at_end_after": ("typo_end_after", "typo_words"),
          "typo_in_strip_any_key_before": ("typo_any_before", "typo_words"),
          "typo_in_strip_any_key_after": ("typo_any_after", "typo_words"),
          "clean_in_strip_at_end_before": ("clean_end_before", "clean_words"),
          "clean_in_strip_at_end_after": ("clean_end_after", "clean_words"),
          "keystrokes_saved_before": ("saved_before", "keys_plain"),
          "keystrokes_saved_after": ("saved_after", "keys_plain"),
          "keystrokes_saved_fixing_before": ("saved_fixing_before", "keys_fixing"),
          "keystrokes_saved_fixing_after": ("saved_fixing_after", "keys_fixing"),
          "typo_keystrokes_saved_before": ("typo_saved_before", "typo_keys_plain"),
          "typo_keystrokes_saved_after": ("typo_saved_after", "typo_keys_plain"),
          "clean_keystrokes_saved_before": ("clean_saved_before", "clean_keys_plain"),
          "clean_keystrokes_saved_after": ("clean_saved_after", "clean_keys_plain")}
PAIRS = ["typo_in_strip_at_end", "typo_in_strip_any_key", "clean_in_strip_at_end", "keystrokes_saved",
         "keystrokes_saved_fixing", "typo_keystrokes_saved", "clean_keystrokes_saved"]


def _first_hit(strips: dict, word: str, last: int) -> int | None:
    """The first keystroke (0: before a letter) whose strip holds ``word``, among those computed up to ``last``."""
    for i in range(last + 1):
        if i in strips and word in strips[i]:
            return i
    return None


def _suggested(session, ranker, typed: str) -> list[str]:
    """The words of the strip the keyboard shows for ``typed`` that a source suggested: the letters as typed, kept
    beside a correction (``Ranker.keep_typed``), are no prediction (a space commits them as well)."""
    strip = session.complete(typed, K)
    return [w for w, _ in (strip[:-1] if getattr(ranker, "kept_typed", False) else strip)]


class _Kept:
    """Wraps a ranker's ``keep_typed`` to note whether the last strip got the letters as typed."""

    def __init__(self, ranker):
        self.keep_typed, ranker.kept_typed = ranker.keep_typed, False
        self.ranker = ranker

    def __call__(self, strip, completion, k, model_probability):
        shown = self.keep_typed(strip, completion, k, model_probability)
        self.ranker.kept_typed = shown is not strip
        return shown


def measure_user(session, rankers: dict, sentences, vocab, rng: np.random.Generator, rate: float,
                 max_words: int) -> dict:
    """Per-user sums (module docstring) over the user's first ``max_words`` words, typed in order."""
    from keyboard_lm.text.spec import SPECIAL_TOKENS

    sums = dict.fromkeys({x for pair in SHARES.values() for x in pair}, 0)
    sums.update({f"kind_{k}": 0 for k in KINDS}, words=0, in_vocab=0)
    done, near = 0, neighbour_keys()
    for sentence in sentences:
        if done >= max_words:
            break
        session.reset()
        for word in sentence:
            if done >= max_words:
                break
            if _TYPED.fullmatch(word) is None:
                session.commit_word(word)
                continue
            done += 1
            typo = bool(_INJECTED.fullmatch(word)) and rng.random() < rate
            typed, kind = inject(word, rng, near) if typo else (word, None)
            next_words = [w for w, _ in session.suggestions(K)]  # the same for both rankers
            first, end = {}, {}
            for name, ranker in rankers.items():
                session.ranker = ranker
                strips = {0: next_words}
                for i in range(1, len(typed) + 1):
                    if i < len(typed) and _first_hit(strips, word, i - 1) is not None:
                        continue  # found: only the strip after the last letter is still needed
                    strips[i] = _suggested(session, ranker, typed[:i])
                first[name], end[name] = _first_hit(strips, word, len(typed)), word in strips[len(typed)]
            session.ranker = rankers["before"]
            plain = len(typed) + 1
            # fixed by hand: back to the slip and the rest of the word again (p: the first letter that differs)
            p = next((i for i, (a, b) in enumerate(zip(typed, word)) if a != b), min(len(typed), len(word)))
            fixing = plain + (len(typed) - p) + (len(word) - p) if typo else plain
            group = "typo" if typo else "clean"
            sums["words"] += 1
            sums["in_vocab"] += word in vocab and word not in SPECIAL_TOKENS.tokens
            sums[f"{group}_words"] += 1
            sums["keys_plain"] += plain
            sums["keys_fixing"] += fixing
            sums[f"{group}_keys_plain"] += plain
            if typo:
                sums[f"kind_{kind}"] += 1
            for name in rankers:
                keys = plain if first[name] is None else first[name] + 1
                sums[f"saved_fixing_{name}"] += fixing - (fixing if first[name] is None else first[name] + 1)
                sums[f"saved_{name}"] += plain - keys
                sums[f"{group}_saved_{name}"] += plain - keys
                sums[f"{group}_end_{name}"] += end[name]
                if typo:
                    sums[f"typo_any_{name}"] += first[name] is not None
            session.commit_word(word)
    return sums


def _bootstrap(users: dict, replicates: int = 1000, seed: int = 0) -> dict:
    """Pooled shares with 95% intervals over users, and paired intervals of each after - before."""
    names = list(users)
    weights = np.random.default_rng(seed).multinomial(len(names), np.full(len(names), 1 / len(names)),
                                                      size=replicates).astype(np.float64)

    def pooled(num: str, den: str):
        a = np.array([users[u][num] for u in names], np.float64)
        b = np.array([users[u][den] for u in names], np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            return a.sum() / b.sum() if b.sum() else float("nan"), (weights @ a) / (weights @ b)

    out, draws = {}, {}
    for share, (num, den) in SHARES.items():
        value, draws[share] = pooled(num, den)
        out[share] = {"value": value, "interval": [float(x) for x in np.nanpercentile(draws[share], [2.5, 97.5])]}
    for pair in PAIRS:
        diff = draws[f"{pair}_after"] - draws[f"{pair}_before"]
        out[f"{pair}_gain"] = {"value": out[f"{pair}_after"]["value"] - out[f"{pair}_before"]["value"],
                               "interval": [float(x) for x in np.nanpercentile(diff, [2.5, 97.5])]}
    return out


def measure_corpus(name: str, model_path: str, rate: float, seed: int, max_words: int, heldout: bool = True,
                   typos=None) -> dict:
    """One corpus: its held-out users (or validation users, ``heldout=False``) typed with both rankers."""
    from keyboard_lm.data.corpora import load_corpus
    from keyboard_lm.data.split import SplitConfig, split_clients, validation_clients
    from keyboard_lm.inference import Predictor
    from keyboard_lm.inference.ranker import Ranker
    from keyboard_lm.text.typos import TypoModel

    path, fmt, _ = CORPORA[name]
    if path is not None and not os.path.isfile(path):
        raise SystemExit(f"typo_completion: {name}: no corpus at {path}")
    corpus = load_corpus(path, fmt)
    predictor = Predictor.load(model_path, typos=None)
    model = predictor.model
    if (model.meta.get("data") or {}).get("fingerprint") != corpus.fingerprint():
        raise SystemExit(f"typo_completion: {model_path} was not trained on this {name} corpus (fingerprints differ)")
    split = SplitConfig(**model.meta["split"])
    train, heldout_ids = split_clients(corpus.client_ids, split)
    users = heldout_ids if heldout else validation_clients(train, 0.1, split.seed)[1]
    rankers = {"before": predictor.ranker,
               "after": Ranker(predictor.vocab, phrases=model.phrases, gate=model.phrase_gate,
                               typos=typos or TypoModel())}
    rankers["after"].keep_typed = _Kept(rankers["after"])
    per_user, t0 = {}, time.perf_counter()
    for index, cid in enumerate(users):
        session = predictor.session()
        rng = np.random.default_rng([seed, index])
        per_user[cid] = measure_user(session, rankers, corpus.sentences([cid]), predictor.vocab, rng, rate,
                                     max_words)
        if (index + 1) % 10 == 0 or index + 1 == len(users):
            print(f"{name}: {index + 1}/{len(users)} users, {time.perf_counter() - t0:.0f} s", flush=True)
    users_with_words = {u: s for u, s in per_user.items() if s["words"]}
    totals = {k: int(sum(s[k] for s in per_user.values())) for k in next(iter(per_user.values()))}
    with open(model_path, "rb") as f:
        sha256 = hashlib.sha256(f.read()).hexdigest()
    return {"corpus": name, "corpus_name": corpus.name, "model": model_path, "model_bytes": model.size_bytes,
            "model_sha256": sha256,
            "vocab_size": len(predictor.vocab), "users": len(users), "users_with_words": len(users_with_words),
            "split": {"heldout_fraction": split.heldout_fraction, "seed": split.seed},
            "evaluated": "held-out users" if heldout else "validation users (of the training users)",
            "seconds": round(time.perf_counter() - t0, 1), "totals": totals,
            "shares": _bootstrap(users_with_words, seed=seed)}


def _fmt(s: dict, percent: bool = True) -> str:
    scale = 100.0 if percent else 1.0
    return f"{s['value'] * scale:.1f}% [{s['interval'][0] * scale:.1f}, {s['interval'][1] * scale:.1f}]"


def _markdown(results: dict, args) -> str:
    lines = [f"Injection: one typo into each word of 3+ letters a-z with probability {args.rate} (substitution by a "
             "QWERTY neighbour, transposition, omission, insertion of the letter or a neighbour: uniform), seed "
             f"{args.seed} and the user's index; at most {args.max_words} words per user; strips of {K} words "
             "ranked at every keystroke from the same session by the file's ranker without typo correction "
             "(before) and with the default TypoModel (after); the context is the intended text. 95% intervals: "
             "1,000 bootstrap draws of users (paired for the gains).", "",
             "| corpus (model) | users | words | typo words | typo word in strip after its last letter: before | "
             "after | gain | at any key: before | after | clean word in strip after its last letter: before | "
             "after | keystrokes saved, typos fixed: before | after | gain |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results.values():
        s, t = r["shares"], r["totals"]
        lines.append(f"| {r['corpus']} (`{r['model']}`) | {r['users_with_words']} | {t['words']:,} | "
                     f"{t['typo_words']:,} | {_fmt(s['typo_in_strip_at_end_before'])} | "
                     f"{_fmt(s['typo_in_strip_at_end_after'])} | {_fmt(s['typo_in_strip_at_end_gain'])} | "
                     f"{_fmt(s['typo_in_strip_any_key_before'])} | {_fmt(s['typo_in_strip_any_key_after'])} | "
                     f"{_fmt(s['clean_in_strip_at_end_before'])} | {_fmt(s['clean_in_strip_at_end_after'])} | "
                     f"{_fmt(s['keystrokes_saved_fixing_before'])} | {_fmt(s['keystrokes_saved_fixing_after'])} | "
                     f"{_fmt(s['keystrokes_saved_fixing_gain'])} |")
    lines += ["", "Keystrokes saved with typos left as typed, over all words and by words typed with and without a "
              "typo:", "",
              "| corpus | all words: before | after | gain | typo words: before | after | gain | clean words: before | "
              "after | gain | intended word in the vocabulary | typos by kind (sub / swap / omit / insert) | seconds |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in results.values():
        s, t = r["shares"], r["totals"]
        lines.append(f"| {r['corpus']} | {_fmt(s['keystrokes_saved_before'])} | {_fmt(s['keystrokes_saved_after'])} | "
                     f"{_fmt(s['keystrokes_saved_gain'])} | {_fmt(s['typo_keystrokes_saved_before'])} | "
                     f"{_fmt(s['typo_keystrokes_saved_after'])} | {_fmt(s['typo_keystrokes_saved_gain'])} | "
                     f"{_fmt(s['clean_keystrokes_saved_before'])} | {_fmt(s['clean_keystrokes_saved_after'])} | "
                     f"{_fmt(s['clean_keystrokes_saved_gain'])} | {t['in_vocab'] / t['words']:.1%} | "
                     f"{t['kind_substitution']} / {t['kind_transposition']} / {t['kind_omission']} / "
                     f"{t['kind_insertion']} | {r['seconds']} |")
    lines += ["", "Models: " + "; ".join(f"{r['corpus']}: `{r['model']}` ({r['model_bytes']:,} bytes, {r['vocab_size']:,} "
                                         f"words, sha256 {r['model_sha256'][:12]}), "
                                         + (MODEL_NOTES[r["corpus"]] if r["model"] == CORPORA[r["corpus"]][2]
                                            else "given by --model") for r in results.values()) + "."]
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpora", default="default,shakespeare,mail")
    p.add_argument("--model", action="append", default=[], metavar="CORPUS=FILE",
                   help="the model file of a corpus (default: " + ", ".join(f"{k}={v[2]}" for k, v in CORPORA.items())
                   + ")")
    p.add_argument("--rate", type=float, default=0.1, help="probability of a typo in a word of 3+ letters a-z")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-words", type=int, default=1000, help="words typed per user, from the user's first")
    p.add_argument("--validation", action="store_true",
                   help="type the validation users of the training users instead of the held-out users")
    p.add_argument("--typo-model", default="", metavar="FIELD=VALUE,...",
                   help="the channel's factors where they differ from TypoModel's defaults (a study, not the default)")
    p.add_argument("--name", default="typo_completion")
    p.add_argument("--out", default=result_file.results_dir("personalization"))
    args = p.parse_args()
    if not 0.0 < args.rate <= 1.0 or args.max_words < 1:
        p.error(f"--rate must be in (0, 1] and --max-words >= 1, got {args.rate} and {args.max_words}")
    models = {k: v[2] for k, v in CORPORA.items()}
    for item in args.model:
        name, _, path = item.partition("=")
        if name not in CORPORA or not path:
            p.error(f"--model {item}: expected CORPUS=FILE with CORPUS one of {', '.join(CORPORA)}")
        models[name] = path
    corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    for c in corpora:
        if c not in CORPORA:
            p.error(f"--corpora: unknown corpus {c!r} (choose from {', '.join(CORPORA)})")
        if not os.path.isfile(os.path.join(REPO, models[c])) and not os.path.isfile(models[c]):
            p.error(f"no model file for {c} at {models[c]} (--model {c}=FILE)")
    typos = _typo_model(p, args.typo_model)
    results = {}
    for c in corpora:
        path = models[c] if os.path.isfile(models[c]) else os.path.join(REPO, models[c])
        results[c] = measure_corpus(c, path, args.rate, args.seed, args.max_words, heldout=not args.validation,
                                    typos=typos)
        results[c]["model"] = os.path.relpath(path, REPO) if path.startswith(REPO) else path
    md = _markdown(results, args)
    import dataclasses

    result_file.write(args.name, {"rate": args.rate, "seed": args.seed, "max_words": args.max_words, "k": K,
                              "evaluated": "validation users" if args.validation else "held-out users",
                              "typo_model": dataclasses.asdict(typos), "results": results}, md, args.out,
                      seeds=f"{args.seed} (--seed: with the user, it places the injected typos)")
    print(md)
    return 0


def _typo_model(parser, spec: str):
    """The TypoModel of ``--typo-model`` (FIELD=VALUE pairs over the defaults); the parser's error on a bad one."""
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.text.typos import TypoModel

    fields = {}
    for item in filter(None, (x.strip() for x in spec.split(","))):
        key, _, value = item.partition("=")
        try:
            fields[key] = int(value) if key == "min_letters" else float(value)
        except ValueError:
            parser.error(f"--typo-model {item}: expected FIELD=NUMBER")
    try:
        return TypoModel(**fields)
    except (TypeError, ConfigError) as e:
        parser.error(f"--typo-model {spec}: {e}")


if __name__ == "__main__":
    sys.exit(main())
