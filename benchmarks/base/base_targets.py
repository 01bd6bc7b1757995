"""The base-model targets, measured as a user runs them: `train --init-from base` defaults, several seeds.

Runs each row's command once per seed, one run at a time (so wall-clock
figures are the machine's own), and reports held-out recall@3 at the
evaluation validation keeps, as mean, standard deviation and range over the
seeds, against the Kneser-Ney 5-gram on the same split and vocabulary, and
federated against centralized from the same base, paired by seed. Each seed's
ratio also carries a 95% interval over the held-out users: the run's kept model
and its reference (the 5-gram, or the other row's run of the same seed) pooled
over the same bootstrap draws of users (``evaluation.paired_intervals``).

    python benchmarks/base/base_targets.py                  # every row, seeds 0,1,2
    python benchmarks/base/base_targets.py --seeds 0 --rows "mail federated"
    python benchmarks/base/base_targets.py --collect        # only read the runs and write the report
    python benchmarks/base/base_targets.py --init-from benchmarks/records/base/base_v2 --work runs/base_targets_v2 \
        --name base_targets_v2                              # a candidate base, before it is the package's
    python benchmarks/base/base_targets.py --init-from benchmarks/records/base/base_v2_si --work runs/base_targets_si \
        --name base_targets_si --against runs/base_targets_v2 --collect   # and against another base, row by row
    python benchmarks/base/base_targets.py --init-from benchmarks/records/base/base_v2_si --rounds 275 \
        --rows "mail federated" --work runs/base_targets_si_r275 --against runs/base_targets_v2 \
        --name base_targets_si_r275                         # a candidate default: the federated rows' rounds
    python benchmarks/base/base_targets.py --rows "embedded federated" --seeds 0,1,2   # the demo's corpus, 3 seeds
    python benchmarks/base/base_targets.py --rows "shakespeare federated" --seeds 1 --train-args "--server-lr 0.005" \
        --work runs/bt_slr --name base_targets_slr0005 \
        --against benchmarks/results/base/base_targets_si_r275_embedded_shakespeare.json  # a candidate recipe
    python benchmarks/base/base_targets.py ... --collect \
        --against benchmarks/results/base/base_targets_v2_embedded_shakespeare.json  # a page's runs, once gone

The result file keeps each evaluated run's held-out users (recall and events per user), so a later
candidate can be paired against these runs after their directories are gone.

Runs are ordered seed by seed (every row's seed 0 first), and a finished run
directory is read, not retrained; a federated one with a checkpoint is
resumed: the benchmark survives being stopped and is continued by running
the same command again.
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402
from benchmarks.common.corpora import CORPORA  # noqa: E402
from benchmarks.common.heldout import cached, heldout_by_user  # noqa: E402
from benchmarks.common.ngram import ngram_by_user  # noqa: E402
from benchmarks.common.runs import collect_run, finished, slug, train_from_base  # noqa: E402

#: Bootstrap draws of held-out users for each seed's paired interval.
DRAWS = 1000

#: row -> (corpus of warm_start_sweep.CORPORA, extra train arguments); every row runs `train --init-from BASE`
#: (``--init-from``, the package's base by default).
ROWS = {
    "mail federated": ("mail", []),
    "mail centralized": ("mail", ["--centralized"]),
    "shakespeare federated": ("shakespeare", []),
    # the corpus `keyboard-lm demo` trains on: a candidate default has to hold on it too
    "embedded federated": ("embedded", []),
}

#: (what, row, reference, target): reference is "5-gram" or another row, paired by seed.
TARGETS = [
    ("SpamAssassin senders: federated vs KN 5-gram", "mail federated", "5-gram", 1.05),
    ("SpamAssassin senders: centralized vs KN 5-gram", "mail centralized", "5-gram", 1.10),
    ("SpamAssassin senders: federated vs centralized, same base and seed", "mail federated", "mail centralized",
     0.97),
    ("Tiny Shakespeare roles: federated vs KN 5-gram", "shakespeare federated", "5-gram", 1.10),
    # no target of the base's names the demo's corpus: the aim is the floor, the 5-gram's own recall
    ("Embedded conversations: federated vs KN 5-gram", "embedded federated", "5-gram", 1.00),
]


def summarize(values: list[float]) -> dict:
    """Mean, sample standard deviation (0 for one value) and range."""
    return {"n": len(values), "mean": statistics.fmean(values),
            "sd": statistics.stdev(values) if len(values) > 1 else 0.0, "min": min(values), "max": max(values)}


def ratios_by_seed(results: dict, row: str, reference: str, ngrams: dict) -> dict[int, float]:
    """{seed: held-out recall@3 of ``row`` over its reference}, for each seed that both have."""
    mine = results.get(row, {})
    if reference == "5-gram":
        ng = ngrams.get(ROWS[row][0])
        return {s: mine[s]["kept"]["recall_at_3"] / ng["recall_at_3"] for s in sorted(mine)} if ng else {}
    theirs = results.get(reference, {})
    return {s: mine[s]["kept"]["recall_at_3"] / theirs[s]["kept"]["recall_at_3"] for s in sorted(mine) if s in theirs}


def ratios(results: dict, row: str, reference: str, ngrams: dict) -> list[float]:
    """``ratios_by_seed``'s values in seed order."""
    return list(ratios_by_seed(results, row, reference, ngrams).values())


def targets_summary(results: dict, ngrams: dict) -> dict:
    """{target: summarize(its ratios)} for every target with at least one paired run."""
    return {what: summarize(r) for what, row, ref, _ in TARGETS if (r := ratios(results, row, ref, ngrams))}


def paired(by_user: dict, ngram_by_user: dict) -> dict:
    """{target: {seed: (lo, hi)}}: each seed's ratio's 95% interval over held-out users (paired bootstrap).

    ``by_user``: {row: {seed: evaluation with clients}}; ``ngram_by_user``: {corpus: the 5-gram's}.
    """
    from keyboard_lm.evaluation import paired_intervals

    out = {}
    for what, row, reference, _ in TARGETS:
        corpus = ROWS[row][0]
        for seed, mine in sorted(by_user.get(row, {}).items()):
            theirs = ngram_by_user.get(corpus) if reference == "5-gram" else by_user.get(reference, {}).get(seed)
            if theirs is not None:
                out.setdefault(what, {})[seed] = paired_intervals(mine, theirs, ("recall_at_3",),
                                                                  replicates=DRAWS, seed=seed)["recall_at_3"]
    return out


def against(by_user: dict, other_by_user: dict) -> dict:
    """{row: {seed: (ratio, lo, hi)}}: each run's held-out recall@3 over the same row and seed from another base
    (``other_by_user``, as ``by_user``), with the paired 95% interval over the held-out users."""
    from keyboard_lm.evaluation import paired_intervals

    out = {}
    for row, per_seed in by_user.items():
        for seed, mine in sorted(per_seed.items()):
            theirs = other_by_user.get(row, {}).get(seed)
            if theirs is not None:
                lo, hi = paired_intervals(mine, theirs, ("recall_at_3",), replicates=DRAWS, seed=seed)["recall_at_3"]
                out.setdefault(row, {})[seed] = (mine["pooled"]["recall_at_3"] / theirs["pooled"]["recall_at_3"],
                                                 lo, hi)
    return out


#: What a run's per-user record keeps of its held-out evaluation: enough to pool and pair recall again.
USER_FIELDS = ("recall_at_1", "recall_at_3", "num_events")


def users(evaluation: dict) -> dict:
    """A held-out evaluation cut to what pairing needs (``USER_FIELDS``, pooled and per user): kept in the
    result file, so a run can be paired against after its run directory is gone."""
    def cut(m):
        return {k: m[k] for k in USER_FIELDS if k in m}
    return {"pooled": cut(evaluation["pooled"]), "clients": {c: cut(m) for c, m in evaluation["clients"].items()}}


def page_users(path: str) -> dict:
    """The per-user records of a result file this benchmark wrote ({row: {seed: evaluation}}, seeds as
    strings); ValueError saying why the file has none."""
    import json

    if not os.path.isfile(path):
        raise ValueError("no such work directory or result file")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"not a result file of this benchmark ({type(e).__name__})") from None
    if not isinstance(data, dict) or not isinstance(data.get("users"), dict):
        raise ValueError("a result file without per-user records (kept since 2026-12-02 by runs with intervals "
                         "or --against)")
    return data["users"]


def other_by_user(source: str | dict, wanted: dict) -> dict:
    """{row: {seed: evaluation}} of another base for the rows and seeds of ``wanted`` ({row: seeds}):
    from a work directory of this benchmark (each finished run evaluated per user), or from a result file's
    per-user records (``page_users``)."""
    if isinstance(source, dict):
        return {row: {s: source[row][str(s)] for s in seeds if str(s) in source.get(row, {})}
                for row, seeds in wanted.items()}
    return {row: {s: heldout_by_user(d, CORPORA[ROWS[row][0]]) for s in seeds
                  if finished(d := os.path.join(source, slug(row), f"seed{s}"))}
            for row, seeds in wanted.items()}


def against_report(found: dict, seeds: list[int], other: str) -> list[str]:
    """The section of ``against``'s ratios: one row per row of ROWS, one column per seed, and their mean."""
    lines = ["", f"Against the same row and seed of another base or recipe (`--against {other}`): held-out "
             "recall@3, these runs' over those, with the 95% interval over the held-out users (both runs "
             f"pooled over the same {DRAWS:,} bootstrap draws):", "",
             "| row | " + " | ".join(f"seed {s}" for s in seeds) + " | mean over seeds |",
             "|---|" + "---|" * (len(seeds) + 1)]
    for row in ROWS:
        per = found.get(row, {})
        cells = [f"{per[s][0]:.3f}x [{per[s][1]:.3f}, {per[s][2]:.3f}]" if s in per else "" for s in seeds]
        mean = _fmt(summarize([v[0] for v in per.values()]), 3, "x") if per else ""
        lines.append(f"| {row} | " + " | ".join(cells) + f" | {mean} |")
    return lines


def _fmt(s: dict, digits: int = 4, suffix: str = "") -> str:
    if s["n"] == 1:
        return f"{s['mean']:.{digits}f}{suffix} (1 seed)"
    return (f"{s['mean']:.{digits}f}{suffix} ± {s['sd']:.{digits}f} (range {s['min']:.{digits}f}-"
            f"{s['max']:.{digits}f}, {s['n']} seeds)")


def _wall(run: dict) -> str:
    return f"{run['seconds']:.0f}" + ("" if run["finished"] else " (unfinished)")


def row_args(row: str, rounds: int | None = None, candidate: list[str] | None = None) -> list[str]:
    """A row's own train arguments, with a candidate's ``--rounds`` and other arguments on a federated row."""
    extra = list(ROWS[row][1])
    if "--centralized" in extra:
        return extra
    return [*extra, *(["--rounds", str(rounds)] if rounds is not None else []), *(candidate or [])]


def report(results: dict, ngrams: dict, seeds: list[int], intervals: dict | None = None,
           init_from: str = "base", rounds: int | None = None, candidate: list[str] | None = None) -> str:
    changes = ([f"{rounds} federated rounds"] if rounds is not None else []) + (
        [f"`{shlex.join(candidate)}` on the federated rows"] if candidate else [])
    defaults = "its defaults" + (f" but {' and '.join(changes)}" if changes else "")
    lines = [f"The base-model targets: `keyboard-lm train --init-from {init_from}` with {defaults}, one run at a time. "
             "Held-out recall@3 at the evaluation the validation clients keep; mean ± sample standard deviation "
             "over seeds (`--seed`; the split is the default one in every run).", "",
             "| target | measured | aim | met |", "|---|---|---:|---|"]
    summary = targets_summary(results, ngrams)
    for what, _, _, aim in TARGETS:
        s = summary.get(what)
        if s is None:
            lines.append(f"| {what} | not run | {aim:.2f}x | |")
            continue
        met = "yes" if s["min"] >= aim else ("on the mean" if s["mean"] >= aim else "no")
        lines.append(f"| {what} | {_fmt(s, 3, 'x')} | {aim:.2f}x | {met} |")
    if intervals:
        lines += ["", f"Each seed's ratio with its 95% interval over the held-out users (the run and its reference "
                  f"pooled over the same {DRAWS:,} bootstrap draws of users):", "",
                  "| target | " + " | ".join(f"seed {s}" for s in seeds) + " |",
                  "|---|" + "---|" * len(seeds)]
        for what, row, reference, _ in TARGETS:
            if what in intervals:
                cells = []
                for seed in seeds:
                    r = ratios_by_seed(results, row, reference, ngrams).get(seed)
                    lo_hi = intervals[what].get(seed)
                    cells.append("" if r is None or lo_hi is None else f"{r:.3f}x [{lo_hi[0]:.3f}, {lo_hi[1]:.3f}]")
                lines.append(f"| {what} | " + " | ".join(cells) + " |")
    lines += ["", "| row | command | seeds | held-out recall@3 | recall@1 | perplexity | kept | wall s |",
              "|---|---|---|---|---|---|---|---:|"]
    for row, (corpus, _) in ROWS.items():
        runs = results.get(row, {})
        cmd = shlex.join(["keyboard-lm", "train", "--init-from", init_from, *CORPORA[corpus],
                          *row_args(row, rounds, candidate)])
        if not runs:
            lines.append(f"| {row} | `{cmd}` | not run | | | | | |")
            continue
        kept = [r["kept"] for r in runs.values()]
        lines.append(
            f"| {row} | `{cmd}` | {', '.join(str(s) for s in sorted(runs))} "
            f"| {_fmt(summarize([k['recall_at_3'] for k in kept]))} "
            f"| {statistics.fmean(k.get('recall_at_1', float('nan')) for k in kept):.4f} "
            f"| {statistics.fmean(k['perplexity'] for k in kept):.1f} "
            f"| {', '.join(str(k['step']) for k in kept)} "
            f"| {', '.join(_wall(r) for r in runs.values())} |")
    lines += ["", "Kneser-Ney 5-gram on the same split and vocabulary (deterministic: one run):", ""]
    lines += [f"- {c}: recall@3 {ng['recall_at_3']:.4f}, recall@1 {ng['recall_at_1']:.4f}, perplexity "
              f"{ng['perplexity']:.1f}" for c, ng in ngrams.items()]
    lines += ["", f"Seeds asked for: {', '.join(map(str, seeds))}; runs per seed: "
              + ", ".join(f"{row}: {sorted(results.get(row, {}))}" for row in ROWS)]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", default=",".join(ROWS),
                   help=f"comma-separated rows to run and report, of {', '.join(ROWS)}")
    p.add_argument("--seeds", default="0,1,2", help="comma-separated seeds (0,1,2)")
    p.add_argument("--work", default=os.path.join("runs", "base_targets"))
    p.add_argument("--collect", action="store_true", help="only read the runs and write the report")
    p.add_argument("--no-intervals", action="store_true",
                   help="skip each seed's interval over held-out users (it evaluates every run per user once)")
    p.add_argument("--init-from", default="base", metavar="BASE",
                   help="the base every row starts from: the package's (base) or a packaged or run directory, "
                        "to measure a candidate base before it is the package's")
    p.add_argument("--against", metavar="WORK|JSON",
                   help="another base's work directory of this benchmark (e.g. runs/base_targets_v2), or a result "
                        "file it wrote with per-user records (e.g. "
                        "benchmarks/results/base/base_targets_v2_embedded_shakespeare.json): each row's run over "
                        "its same-seed run there, with the paired interval over held-out users")
    p.add_argument("--rounds", type=int, metavar="N",
                   help="the federated rows' rounds instead of train's default (a candidate default; "
                        "the centralized row keeps its own)")
    p.add_argument("--train-args", metavar="ARGS", default="",
                   help="more train arguments for the federated rows, a candidate recipe (e.g. \"--server-lr 0.005\"; "
                        "the centralized row keeps its own)")
    p.add_argument("--name", default="base_targets")
    p.add_argument("--out", default=result_file.results_dir("base"))
    args = p.parse_args(argv)
    if args.rounds is not None and args.rounds < 1:
        p.error(f"--rounds {args.rounds}: expected a positive number of rounds")
    other = args.against  # a work directory, or a result file's per-user records, read once
    if args.against and not os.path.isdir(args.against):
        try:
            other = page_users(args.against)
        except ValueError as e:
            p.error(f"--against {args.against}: {e}")
    try:
        candidate = shlex.split(args.train_args)
    except ValueError as e:
        p.error(f"--train-args {args.train_args!r}: {e}")
    if any(a.split("=", 1)[0] in ("--seed", "--out", "--init-from") for a in candidate):
        p.error(f"--train-args {args.train_args!r}: --seed, --out and --init-from are the benchmark's own")
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        p.error(f"--rows: unknown {unknown}; choose from {list(ROWS)}")
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    except ValueError:
        p.error(f"--seeds {args.seeds!r}: expected comma-separated integers")
    results: dict = {row: {} for row in ROWS}
    for seed in seeds:
        for row in rows:
            run_dir = os.path.join(args.work, slug(row), f"seed{seed}")
            if not args.collect and not finished(run_dir):
                train_from_base(CORPORA[ROWS[row][0]], [*row_args(row, args.rounds, candidate), "--seed", str(seed)],
                                run_dir, init_from=args.init_from)
    for row in rows:  # a page of the rows asked for: another row's run may be training beside it
        for seed in seeds:
            run_dir = os.path.join(args.work, slug(row), f"seed{seed}")
            r = collect_run(run_dir) if os.path.isdir(run_dir) else None
            if r:
                results[row][seed] = r
    corpora = sorted({ROWS[r][0] for r in ROWS if results[r]})
    os.makedirs(args.work, exist_ok=True)
    ngram_users = {c: cached(os.path.join(args.work, f"ngram_{c}_by_user.json"),
                              lambda c=c: ngram_by_user(CORPORA[c])) for c in corpora}
    ngrams = {c: ngram_users[c]["pooled"] for c in corpora}
    intervals, compared, by_user = None, None, None
    if not args.no_intervals or args.against:
        by_user = {row: {seed: heldout_by_user(r["run_dir"], CORPORA[ROWS[row][0]]) for seed, r in runs.items()}
                   for row, runs in results.items()}
        intervals = None if args.no_intervals else paired(by_user, ngram_users)
    if args.against:
        compared = against(by_user, other_by_user(other, {row: list(runs) for row, runs in results.items()}))
    text = report(results, ngrams, seeds, intervals, args.init_from, args.rounds, candidate)
    if args.against:
        text += "\n".join(against_report(compared, seeds, args.against)) + "\n"
    summary = targets_summary(results, ngrams)
    paths = result_file.write(args.name, {"init_from": args.init_from, "rounds": args.rounds,
                                          "train_args": candidate,
                                          "rows": {r: {"corpus": ROWS[r][0],
                                                       "args": row_args(r, args.rounds, candidate)} for r in ROWS},
                                      "seeds": seeds, "ngram": ngrams, "runs": results, "targets": summary,
                                      "intervals": {"draws": DRAWS, "level": 0.95, "unit": "held-out user",
                                                    "ratios": {w: {str(s): list(v) for s, v in per.items()}
                                                               for w, per in (intervals or {}).items()}},
                                          "against": {"work": args.against,
                                                      "ratios": {row: {str(s): list(v) for s, v in per.items()}
                                                                 for row, per in (compared or {}).items()}}
                                          if args.against else None,
                                          # what --against needs of these runs once their directories are gone
                                          "users": {row: {str(s): users(e) for s, e in per.items()}
                                                    for row, per in by_user.items() if per} if by_user else None},
                          text, args.out,
                          [r["trained"] for per in results.values() for r in per.values() if r],
                          seeds=f"{', '.join(map(str, seeds))} (each row's `train --seed S`; the split is the default "
                                "one in every run; each seed's paired intervals draw with that seed)")
    print(text)
    print("written:", *paths)
    return 0


if __name__ == "__main__":
    sys.exit(main())
