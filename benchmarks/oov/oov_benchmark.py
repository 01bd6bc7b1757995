"""Personal OOV expansion on real per-user text (Shenoy & Nguyen's evaluation).

Held-out users (the run's held-out clients with at least --min-sentences
sentences), each user's sentences split 8:1:1 (personalize / early stop /
test). For each vocabulary size V and each user, top-3 exact match on the
user's test words:

* global: the exported int8 model, no personalization (every OOV word a miss);
* zero-shot: + the user's top-n OOV words of the personalize split, char-encoder
  embeddings only (``Session.add_personal_words``);
* OOV adapter: + the residual adapter trained on the personalize split with
  early stopping on the early-stop split (``Session.personalize``);
* OOV-as-UNK fine-tuning (Shenoy's baseline): the whole float model fine-tuned
  per user with Adam, at most 10 epochs, the epoch of the best validation EMR3
  kept; OOV stays one token;
* OOV expansion (``--joint``; Shenoy & Nguyen's method): the same fine-tuning
  with the OOV adapter trained jointly, its weights initialized at each sigma of
  their grid {0, 1e-5, ..., 1}, the best validation EMR3 kept per user;
* OOV-oracle (Shenoy's baseline): the vocabulary grown by the N most frequent
  OOV words of the training users (= a model trained with --vocab-size V + N),
  no personalization.

EMR3 counts every test word (an OOV word is a hit only if its spelling is
suggested), KEMR3 only words of the V-word vocabulary, OOV rate before/after =
share of test words outside the vocabulary / outside the vocabulary and the
user's personal words. Each EMR3 carries a 95% interval over users (bootstrap),
and OOV expansion / fine-tuning a paired one. ``--data MBOX --format mbox``
runs it on the SpamAssassin senders (with runs trained on them).

    python benchmarks/oov/oov_benchmark.py --data ../shared/data/tinyshakespeare/input.txt \\
        --runs 2000=runs/oov/v2000 5000=runs/oov/v5000 10000=runs/oov/v10000 \\
        --oracles 2000=runs/oov/v3000 5000=runs/oov/v6000 10000=runs/oov/v11000

Runs are centralized CIFGs (`keyboard-lm train --centralized --data $SH
--format shakespeare --vocab-size V --epochs 4 --out runs/oov/vV`); the model
and the char encoder are exported next to each run when missing. Results go to
benchmarks/results/oov/oov_benchmark.{md,json}.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402

from benchmarks.common import result_file  # noqa: E402
from benchmarks.oov.oov_finetune import SIGMA_GRID, FineTuner, JointTuner  # noqa: E402

METHODS = ("global", "zero_shot", "adapter", "finetune", "oracle")
LABELS = {"global": "global model (int8 file)", "zero_shot": "+ personal words, zero-shot",
          "adapter": "+ OOV adapter (Shenoy: residual MLP)",
          "adapter_per_word": "+ OOV adapter with per-word offset and bias", "finetune": "OOV-as-UNK fine-tuning (float)",
          "global_float": "global model (float, reference for fine-tuning)", "oracle": "OOV-oracle (V + N, retrained)",
          "oov_expansion": "OOV expansion: fine-tuning + OOV adapter, jointly (float; Shenoy & Nguyen)"}


def pairs(values):
    out = {}
    for v in values:
        k, _, path = v.partition("=")
        out[int(k)] = path
    return out


def ensure_model(run_dir: str, budget: bool = True) -> str:
    """The run's exported file (``budget=False`` for a reference such as the oracle, never shipped)."""
    from keyboard_lm.export.budget import DEFAULT_BUDGET_BYTES
    from keyboard_lm.export.tflite_export import export_run

    path = os.path.join(run_dir, "model.tflite")
    if not os.path.exists(path):
        export_run(run_dir, path, budget_bytes=DEFAULT_BUDGET_BYTES if budget else None)
    return path


#: char encoder variants: name -> context_weight (0: MSE only; 1: MSE + the shared in-context loss)
ENCODERS = {"mse": 0.0, "in_context": 1.0}


def ensure_encoder(run_dir: str, model_path: str, corpus, log, name: str) -> tuple[str, dict]:
    import json
    import zipfile

    from keyboard_lm.char_encoder.training import build_char_encoder_file, run_training_clients

    path = os.path.join(run_dir, f"char_encoder_{name}.tflite")
    if not os.path.exists(path):
        t0 = time.time()
        build_char_encoder_file(run_dir, model_path, path, corpus=corpus, context_weight=ENCODERS[name],
                                client_ids=run_training_clients(run_dir, corpus), log=log)
        log(f"char encoder for {run_dir}: {time.time() - t0:.0f} s")
    with zipfile.ZipFile(path) as z:
        return path, json.loads(z.read("char_encoder.json"))


def users_of(run_dir: str, corpus, min_sentences: int, seed: int):
    from keyboard_lm.data.split import SplitConfig, split_clients
    from keyboard_lm.models.run_dir import load_run
    from keyboard_lm.char_encoder.evaluation import split_user

    split = load_run(run_dir).info["data"]["split"]
    _, heldout = split_clients(corpus.client_ids, SplitConfig(split["heldout_fraction"], split["seed"]))
    users, skipped = [], []
    for uid in heldout:
        sentences = [s for s in corpus.sentences([uid]) if s]
        if len(sentences) < min_sentences:
            skipped.append(uid)
            continue
        users.append((uid, *split_user(sentences, seed=seed)))
    return users, skipped


def session_predictions(session, sentences) -> list[list[str]]:
    preds = []
    for sentence in sentences:
        session.reset()
        for word in sentence:
            preds.append([w for w, _ in session.suggestions(3)])
            session.commit_word(word)
    return preds


def metrics(preds, targets, known) -> dict:
    """Shenoy's EMR3/KEMR3 (keyboard_lm.char_encoder.evaluation.exact_match) and the share of OOV words hit."""
    from keyboard_lm.char_encoder.evaluation import exact_match

    result = exact_match(preds, targets, known)
    oov_hits = [t in p for p, t in zip(preds, targets) if t not in known]
    result["oov_hit_rate"] = float(np.mean(oov_hits)) if oov_hits else 0.0
    return result


def joint_words(sentences, vocab, max_bytes: int, max_words: int) -> tuple[list[str], int]:
    """The user's personal words for OOV expansion, as ``Session.personalize`` picks them: the most frequent OOV
    spellings of ``sentences`` that the char encoder can spell (at most ``max_bytes`` UTF-8 bytes), at most
    ``max_words``; and how many longer ones (URLs, addresses) were left out."""
    from keyboard_lm.char_encoder.evaluation import encode_keeping_spelling, personal_vocabulary
    from keyboard_lm.text.spec import SPECIAL_TOKENS

    ranked = personal_vocabulary([encode_keeping_spelling(s, vocab) for s in sentences], SPECIAL_TOKENS.oov_id, None)
    spellable = [w for w in ranked if len(w.encode("utf-8")) <= max_bytes]
    return spellable[:max_words], len(ranked) - len(spellable)


def evaluate(v: int, run_dir: str, oracle_dir: str, corpus, args, log) -> dict:
    from keyboard_lm.inference.predictor import Predictor
    from keyboard_lm.char_encoder.evaluation import encode_keeping_spelling, oov_rate
    from keyboard_lm.text.spec import SPECIAL_TOKENS

    model_path = ensure_model(run_dir)
    encoders = {name: ensure_encoder(run_dir, model_path, corpus, log, name) for name in args.encoders}
    predictors = {name: Predictor.load(model_path, char_encoder=path) for name, (path, _) in encoders.items()}
    predictor = Predictor.load(model_path)
    oracle = Predictor.load(ensure_model(oracle_dir, budget=False)) if oracle_dir else None
    vocab = predictor.vocab
    known = set(vocab.tokens[4:])
    users, skipped = users_of(run_dir, corpus, args.min_sentences, args.seed)
    users = users[:args.max_users]
    tuner = FineTuner(run_dir, args.finetune_lr, args.finetune_epochs) if args.finetune_lr > 0 else None
    joint = (JointTuner(run_dir, encoders[args.encoders[0]][0], args.finetune_lr, args.finetune_epochs,
                        args.joint_hidden) if args.joint else None)
    slices, joint_sigma, joint_kept, joint_unencodable = [], [], [], 0
    preds = collections.defaultdict(list)
    targets, personal_sizes, adapt_s, state_bytes, kept, oov_before_n, oov_after_n = [], [], [], [], [], 0.0, 0.0
    oov_targets_personal, finetune_kept = 0, []
    for uid, per, val, test in users:
        words = [w for s in test for w in s]
        slices.append((len(targets), len(targets) + len(words)))
        targets += words
        preds["global"] += session_predictions(predictor.session(), test)
        for name, enc_predictor in predictors.items():
            zs = enc_predictor.session()
            zs.personalize_sentences(per, val, max_words=args.max_personal_words, epochs=0)
            preds[f"zero_shot/{name}"] += session_predictions(zs, test)
            for variant, per_word in (("adapter", False), ("adapter_per_word", True)):
                if per_word and not args.per_word:
                    continue
                s = enc_predictor.session()
                if per_word:  # the research variant: each word's own offset and bias
                    from keyboard_lm.inference.adapter_research import train_variants

                    report = train_variants(s, per, val, per_word=True, max_words=args.max_personal_words,
                                            epochs=args.epochs, learning_rate=args.lr)
                else:
                    report = s.personalize_sentences(per, val, max_words=args.max_personal_words, epochs=args.epochs,
                                                     learning_rate=args.lr)
                preds[f"{variant}/{name}"] += session_predictions(s, test)
                if name == args.encoders[0] and not per_word:
                    adapt_s.append(report["seconds"])
                    kept.append(report.get("kept_epoch", 0))
                    personal = s.personal.words if s.personal is not None else []
                    personal_sizes.append(len(personal))
                    if s.personal is not None:
                        path = os.path.join(args.tmp, f"user_{v}.personal")
                        s.save_personal(path)
                        state_bytes.append(os.path.getsize(path))
        pset = set(personal)
        test_spelled = [encode_keeping_spelling(sentence, vocab) for sentence in test]
        oov_before_n += oov_rate(test_spelled, SPECIAL_TOKENS.oov_id) * len(words)
        oov_after_n += oov_rate(test_spelled, SPECIAL_TOKENS.oov_id, personal) * len(words)
        oov_targets_personal += sum(1 for w in words if w not in known and w in pset)
        if oracle is not None:
            preds["oracle"] += session_predictions(oracle.session(), test)
        if tuner is not None:
            tuner.reset()
            preds["global_float"] += tuner.predictions(test)
            fit = tuner.fit(per, val, seed=args.seed)
            finetune_kept.append(fit["kept_epoch"])
            preds["finetune"] += tuner.predictions(test)
        if joint is not None:
            mine, unencodable = joint_words(per, vocab, joint.encoder.max_bytes, args.max_personal_words)
            joint_unencodable += unencodable
            fit = joint.fit_grid(mine, per, val, seed=args.seed)
            joint_sigma.append(fit["sigma"])
            joint_kept.append(fit["kept_epoch"])
            preds["oov_expansion"] += joint.predictions(test)
        log(f"V={v} user {uid}: {len(per)}/{len(val)}/{len(test)} sentences, {len(personal)} personal words, "
            f"adapter {report['seconds']:.1f} s (epoch {report.get('kept_epoch')}), fine-tuning epoch "
            f"{finetune_kept[-1] if finetune_kept else None}")
    n = len(targets)
    oov_before = oov_before_n / n
    result = {"vocab_size": v, "users": len(users), "users_skipped": len(skipped), "test_words": n,
              "oov_rate_before": oov_before, "oov_rate_after": oov_after_n / n,
              "oov_test_words_covered_by_personal": oov_targets_personal / max(1, sum(1 for w in targets if w not in known)),
              "personal_words_per_user": float(np.mean(personal_sizes)),
              "adapter_seconds_per_user": float(np.mean(adapt_s)), "adapter_kept_epoch_mean": float(np.mean(kept)),
              "finetune_kept_epoch_mean": float(np.mean(finetune_kept)) if finetune_kept else None,
              "oov_expansion_sigma": joint_sigma, "oov_expansion_kept_epoch": joint_kept,
              "oov_expansion_unencodable_words": joint_unencodable,
              "personal_state_bytes_mean": float(np.mean(state_bytes)) if state_bytes else 0.0,
              "model_bytes": os.path.getsize(model_path),
              "char_encoder_bytes": {n: os.path.getsize(p) for n, (p, _) in encoders.items()},
              "char_encoder_meta": {n: m for n, (_, m) in encoders.items()}, "oracle_run": os.path.basename(oracle_dir) if oracle_dir else None,
              "methods": {}}
    hits = {}
    for name, p in preds.items():
        assert len(p) == n, (name, len(p), n)
        result["methods"][name] = metrics(p, targets, known)
        hits[name] = user_hits(p, targets, slices)
        result["methods"][name]["emr3_interval"] = emr3_interval(hits[name], seed=args.seed)
    result["paired"] = {f"{a} / {b}": emr3_interval(hits[a], hits[b], seed=args.seed)
                        for a, b in PAIRED if a in hits and b in hits}
    return result


#: (method, reference): the comparisons whose EMR3 ratio gets a paired interval over users.
PAIRED = (("oov_expansion", "finetune"), ("finetune", "global_float"), ("oov_expansion", "global_float"))


def user_hits(preds, targets, slices) -> list[tuple[int, int]]:
    """(top-3 exact matches, words) of each user's test words."""
    return [(sum(t in list(p)[:3] for p, t in zip(preds[a:b], targets[a:b])), b - a) for a, b in slices]


def emr3_interval(hits, reference=None, replicates: int = 1000, seed: int = 0) -> list[float]:
    """95% percentile bootstrap over users of pooled EMR3, or, with ``reference``, of the ratio of the two
    pooled over the same draws of users."""
    h = np.asarray(hits, float)
    idx = np.random.default_rng(seed).integers(0, len(h), (replicates, len(h)))
    value = h[idx, 0].sum(1) / np.maximum(h[idx, 1].sum(1), 1)
    if reference is not None:  # a draw whose reference has no hit has no ratio: left out
        r = np.asarray(reference, float)
        ref = r[idx, 0].sum(1) / np.maximum(r[idx, 1].sum(1), 1)
        value = np.where(ref > 0, value / np.where(ref > 0, ref, 1.0), np.nan)
    return [float(x) for x in np.nanpercentile(value, [2.5, 97.5])]


def corpus_label(args) -> str:
    """What the users are: the corpus (by ``--format``) and its partition."""
    name = {"shakespeare": "Tiny Shakespeare", "mbox": "SpamAssassin mail"}.get(args.format, f"{args.format} text")
    unit = {"shakespeare": "by role", "mbox": "by sender"}.get(args.format, "by client")
    return f"{name} {unit}" if args.partition == "natural" else f"{name} re-partitioned IID into {args.num_clients} users"


def markdown(results: list[dict], args) -> str:
    lines = [corpus_label(args) + ", held-out users, each user's sentences split 8:1:1 "
             "(personalize / early stop / test). Micro-averaged over all test words.", "",
             "| V | OOV before → after | method | EMR3 [95% over users] | KEMR3 | OOV words hit |",
             "|---|---|---|---|---|---|"]
    for r in results:
        first = True
        names = ["global"] + [f"{kind}/{enc}" for enc in args.encoders
                              for kind in ("zero_shot", "adapter", "adapter_per_word")] + [
            "global_float", "finetune", "oov_expansion", "oracle"]
        for name in names:
            if name not in r["methods"]:
                continue
            m = r["methods"][name]
            oov = f"{100 * r['oov_rate_before']:.1f}% → {100 * r['oov_rate_after']:.1f}%" if first else ""
            kind, _, enc = name.partition("/")
            label = LABELS[kind] + (f" [{enc} encoder]" if enc else "")
            iv = m.get("emr3_interval")
            iv = f" [{100 * iv[0]:.2f}, {100 * iv[1]:.2f}]" if iv else ""
            lines.append(f"| {r['vocab_size']:,} | {oov} | {label} | {100 * m['emr3']:.2f}{iv} | "
                         f"{100 * m['kemr3']:.2f} | {100 * m['oov_hit_rate']:.2f} |")
            first = False
    for r in results:
        for what, (lo, hi) in r.get("paired", {}).items():
            lines.append(f"- V={r['vocab_size']:,}: EMR3 {what} = [{lo:.3f}, {hi:.3f}] (paired, 95% over users)")
        if r.get("oov_expansion_sigma"):
            lines.append(f"- V={r['vocab_size']:,}: OOV expansion's sigma chosen per user: "
                         f"{dict(collections.Counter(r['oov_expansion_sigma']))}; OOV words longer than the "
                         f"char encoder spells, left out: {r.get('oov_expansion_unencodable_words', 0):,}")
    lines += ["", "| V | users (skipped) | test words | personal words / user | adapter s / user | "
              "state bytes / user | model + encoder bytes | oracle |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['vocab_size']:,} | {r['users']} ({r['users_skipped']}) | {r['test_words']:,} | "
                     f"{r['personal_words_per_user']:.0f} | {r['adapter_seconds_per_user']:.2f} | "
                     f"{r['personal_state_bytes_mean']:,.0f} | {r['model_bytes']:,} + "
                     f"{max(r['char_encoder_bytes'].values()):,} | "
                     f"{r['oracle_run']} |")
    lines += ["", f"Adapter: Adam lr {args.lr}, at most {args.epochs} full-batch epochs, patience 5 on the "
              f"early-stop split. Fine-tuning: Adam lr {args.finetune_lr}, batch 16, clip 5, at most "
              f"{args.finetune_epochs} epochs, the epoch of the best validation EMR3 kept (patience 2). OOV "
              f"expansion: the same, with the adapter (hidden {args.joint_hidden}) trained jointly, at each sigma of "
              f"{list(SIGMA_GRID)}, the best validation EMR3 kept per user. Users need >= {args.min_sentences} "
              "sentences."]
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", required=True, help="Tiny Shakespeare input.txt")
    p.add_argument("--format", default="shakespeare")
    p.add_argument("--partition", default="natural", choices=("natural", "iid"),
                   help="iid: the runs were trained with --partition iid --num-clients N (seed 0)")
    p.add_argument("--num-clients", type=int, default=None)
    p.add_argument("--runs", nargs="+", required=True, metavar="V=RUN_DIR")
    p.add_argument("--oracles", nargs="*", default=[], metavar="V=RUN_DIR")
    p.add_argument("--min-sentences", type=int, default=10)
    p.add_argument("--max-personal-words", type=int, default=1000)
    p.add_argument("--epochs", type=int, default=100, help="adapter epochs at most (100)")
    p.add_argument("--lr", type=float, default=0.003, help="adapter Adam learning rate (0.003)")
    p.add_argument("--finetune-lr", type=float, default=1e-3,
                   help="fine-tuning Adam lr, 0 = skip the baseline (0.001)")
    p.add_argument("--finetune-epochs", type=int, default=10)
    p.add_argument("--joint", action="store_true",
                   help="also Shenoy & Nguyen's OOV expansion: fine-tuning with the OOV adapter trained jointly")
    p.add_argument("--joint-hidden", type=int, default=960, help="the joint adapter's hidden units (960)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--encoders", nargs="+", default=list(ENCODERS), choices=list(ENCODERS),
                   help="char encoder variants to compare (all)")
    p.add_argument("--per-word", action="store_true", help="also the adapter with per-word offsets and biases")
    p.add_argument("--resume", action="store_true",
                   help="keep the vocabulary sizes already in --out/--name.json and run only the others")
    p.add_argument("--max-users", type=int, default=None, help="first N eligible users only (for a quick check)")
    p.add_argument("--tmp", default=os.path.join(REPO, "runs", "oov", "tmp"))
    p.add_argument("--out", default=result_file.results_dir("oov"))
    p.add_argument("--name", default="oov_benchmark")
    args = p.parse_args()
    os.makedirs(args.tmp, exist_ok=True)
    from keyboard_lm.data.corpora import load_corpus

    from keyboard_lm.data.partition import apply_partition

    corpus = apply_partition(load_corpus(args.data, args.format), args.partition, args.num_clients, 0)
    runs, oracles = pairs(args.runs), pairs(args.oracles)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    results = []
    if args.resume and os.path.exists(os.path.join(args.out, f"{args.name}.json")):
        import json

        with open(os.path.join(args.out, f"{args.name}.json"), encoding="utf-8") as f:
            results = [r for r in json.load(f)["results"] if r["vocab_size"] in runs]
    done = {r["vocab_size"] for r in results}
    for v in sorted(set(runs) - done):
        t0 = time.time()
        results.append(evaluate(v, runs[v], oracles.get(v), corpus, args, log))
        results[-1]["seconds"] = time.time() - t0
        result_file.write(args.name, {"results": results}, markdown(results, args), args.out,
                          seeds=f"{args.seed} (--seed: it splits each held-out user's sentences, fits the tuners and "
                                "draws the bootstrap intervals; the held-out users are the runs' own split)")
    print(markdown(results, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
