"""``keyboard-lm privacy plan`` and ``audit canaries``: plan a DP run, measure what a run memorized."""

from __future__ import annotations

import json
import os

from keyboard_lm.cli.args import (comma_list, default_data_to_run, load_corpus_from_args, non_negative_int,
                                  positive_float, positive_int, round_count, split_from_args)
from keyboard_lm.cli.train import dp_options, federated_validation, train_federated_from_args, warm_start_from_args
from keyboard_lm.cli.train_flags import add_train_args
from keyboard_lm.privacy.canaries import DEFAULT_ALPHABET, DEFAULT_SLOTS


def cmd_privacy_plan(args) -> int:
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.privacy.planner import cmd_privacy_plan as run

    budget = any(b is not None for b in (args.budget_client_steps, args.budget_hours, args.budget_flops))
    if args.loss_model is None:
        if budget:
            raise ConfigError("--budget-client-steps/--budget-hours/--budget-flops plan with a fitted loss model: add "
                              "--loss-model FILE (keyboard-lm privacy fit)")
        if args.rounds is None:
            raise ConfigError("give --rounds T (or a compute budget with --loss-model)")
        return run(args)
    return _plan_with_loss_model(args)


def _plan_with_loss_model(args) -> int:
    """The compute-aware plan: every size and cohort the budget buys, ranked by the predicted loss."""
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.privacy import compute_plan
    from keyboard_lm.privacy import loss_model as lm
    from keyboard_lm.privacy.planner import cohort_grid, plan

    if args.rounds is not None:
        raise ConfigError("--rounds is chosen by the compute-aware plan: give --budget-client-steps or "
                          "--budget-hours instead")
    model = lm.LossModel.load(args.loss_model)
    rows = compute_plan.frontier(model, epsilon=args.epsilon, delta=args.delta, population=args.population,
                                 mechanism=args.mechanism, clip=args.clip, client_steps=args.budget_client_steps,
                                 hours=args.budget_hours, flops=args.budget_flops,
                                 cohorts=cohort_grid(args.population, args.max_clients_per_round),
                                 tree_restart=args.tree_restart)
    best = rows[0]
    top = plan(args.epsilon, args.delta, args.population, best["rounds"], mechanism=args.mechanism,
               clients_per_round=[best["clients_per_round"]], clip=args.clip, tree_restart=args.tree_restart)[0]
    budget = (f"{args.budget_client_steps:,} client-steps" if args.budget_client_steps is not None
              else f"{args.budget_hours:g} h on the machine the runs were measured on" if args.budget_hours is not None
              else f"{args.budget_flops:.3g} training FLOPs (6 x parameters x tokens)")
    if args.png:
        compute_plan.plot_plan(rows, args.png, f"{args.mechanism}: eps {args.epsilon:g}, delta {args.delta:.2g}, "
                                               f"N {args.population:,}, budget {budget}")
    if args.json:
        print(json.dumps({"rows": rows, "loss_model": model.to_dict(), "profile": top["profile"]}, indent=2))
        return 0
    from keyboard_lm.privacy.profile import format_profile

    print(f"{args.mechanism}: eps {args.epsilon:g}, delta {args.delta:.3g}, population {args.population:,}, "
          f"clip {args.clip:g}, budget {budget}; the {min(12, len(rows))} best of {len(rows)} (size, cohort) "
          "plans by predicted loss")
    print(compute_plan.format_frontier(rows, model))
    print(f"plan: {best['units']} units, V = {best['vocab_size']:,}, K = {best['clients_per_round']:,}, "
          f"T = {best['rounds']:,}, z = {best['noise_multiplier']:.4g}"
          + (f" (an extrapolation: {', '.join(best['outside_fit'])} lies beyond every fitted run)"
             if best.get("outside_fit") else ""))
    print(format_profile(top["profile"], "privacy profile of the plan", rho=top.get("rho")))
    if args.png:
        print(f"plan plot: {args.png}")
    return 0


def cmd_privacy_fit(args) -> int:
    """``keyboard-lm privacy fit``: fit the loss model to finished DP runs, report the held-out error."""
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.privacy import loss_model as lm

    curves = [lm.read_run(d) for d in args.runs]
    if len({c.name for c in curves}) < len(curves):  # runs of one name in several directories: all parent/run
        for c, d in zip(curves, args.runs):
            c.name = "/".join(os.path.normpath(os.path.abspath(d)).split(os.sep)[-2:])
    names = [c.name for c in curves]
    if len(set(names)) < len(names):
        raise ConfigError(f"runs given twice: {', '.join(sorted({n for n in names if names.count(n) > 1}))}")
    held = [h for h in (args.heldout.split(",") if args.heldout else []) if h]
    for h in held:
        if h not in names:
            raise ConfigError(f"--heldout {h}: not one of the runs given ({', '.join(names)})")
    fitted = [c for c in curves if c.name not in held]
    model = lm.fit(fitted, [c for c in curves if c.name in held])
    if args.leave_one_out:
        lm.leave_one_out(model, fitted)
    record = model.to_dict()
    if args.isotonic:
        from keyboard_lm.privacy import isotonic_loss as il

        iso = il.fit_isotonic(fitted)
        iso_held = [{"run": c.name, "measured": c.loss[-1], "predicted": iso.predict(c.params, c.rounds[-1], c.ratio),
                     "outside": iso.outside(c.params, c.rounds[-1], c.ratio)}
                    for c in curves if c.name in held]
        for h in iso_held:
            h["relative_error"] = (h["predicted"] - h["measured"]) / h["measured"]
        record["isotonic"] = {"method": "McKenna et al. 2025: per-size monotone tables over rounds and ratio, "
                                        "interpolated in log space", "heldout": iso_held,
                              "leave_one_out": il.leave_one_out_isotonic(fitted) if args.leave_one_out else []}
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    print(f"loss model {lm.FORM}")
    print("  " + ", ".join(f"{k} = {v:.4g}" for k, v in model.theta.items()))
    print(f"fitted on {len(model.fitted_on)} runs ({', '.join(model.fitted_on)}), start {model.start}: rmse "
          f"{model.fit_rmse:.4f} over every round")
    if model.one_size:
        print(f"one model size ({model.sizes[0]['params']:,} parameters): no size term (A = 0); plans keep this size")
    for h in model.heldout:
        print(f"held out {h['run']}: measured {h['measured']:.4f}, predicted {h['predicted']:.4f} "
              f"({100 * h['relative_error']:+.2f}%; the fitted runs' mean final loss: "
              f"{100 * h['constant_relative_error']:+.2f}%)")
    if model.leave_one_out:
        print("leave-one-out (each fitted run predicted by a fit on the others):")
        for h in model.leave_one_out:
            print(f"  {h['run']}: ratio {h['ratio']:.3g}, measured {h['measured']:.4f}, predicted {h['predicted']:.4f} "
                  f"({100 * h['relative_error']:+.2f}%; the others' mean final loss: "
                  f"{100 * h['constant_relative_error']:+.2f}%)")
        e = lm.error_summary(model.leave_one_out)
        print(f"  |error| mean {100 * e['mean']:.2f}%, max {100 * e['max']:.2f}%; closer than the "
              f"constant on {e['beats_constant']} of {e['count']}")
    if args.isotonic:
        iso = record["isotonic"]
        print("isotonic (McKenna et al.'s fit), the same runs:")
        for h in iso["heldout"]:
            print(f"  held out {h['run']}: predicted {h['predicted']:.4f} ({100 * h['relative_error']:+.2f}%)"
                  + (f" [outside the runs: {', '.join(h['outside'])}]" if h["outside"] else ""))
        for h in iso["leave_one_out"]:
            print(f"  leave-one-out {h['run']}: predicted {h['predicted']:.4f} ({100 * h['relative_error']:+.2f}%)"
                  + (f" [outside the others: {', '.join(h['outside'])}]" if h["outside"] else ""))
        if iso["leave_one_out"]:
            e = lm.error_summary(iso["leave_one_out"])
            print(f"  |error| mean {100 * e['mean']:.2f}%, max {100 * e['max']:.2f}% (parametric above); closer than "
                  f"the constant on {e['beats_constant']} of {e['count']}")
    for params, cost in sorted(model.cost.items(), key=lambda kv: int(kv[0])):
        print(f"cost: {int(params):,} params, {1000 * cost:.2f} ms per client-step")
    if args.png:
        lm.plot(model, curves, args.png, args.png_rounds)
        print(f"plot: {args.png}")
    print(f"wrote {args.out}")
    return 0



def _canary_repeats(text: str) -> list[int]:
    from keyboard_lm.errors import ConfigError

    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise ConfigError(f"--canary-repeats must be comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise ConfigError(f"--canary-repeats must be integers >= 1, got {text!r}")
    return values


#: ``audit canaries``'s canary flags and their defaults (a resumed audit refuses a value other than the run's).
CANARY_DEFAULTS = {"canaries": 6, "controls": 4, "canary_repeats": "1,4,16", "canary_seed": 0,
                   "canary_words": ",".join(DEFAULT_ALPHABET), "canary_slots": DEFAULT_SLOTS, "canary_clients": 1}
#: run.json's ``audit`` key of each canary flag.
CANARY_SETTINGS = {"canaries": "canaries", "controls": "controls", "canary_seed": "seed",
                   "canary_repeats": "repeats", "canary_words": "alphabet", "canary_slots": "slots",
                   "canary_clients": "clients_per_canary"}


def _canary_words(text: str) -> list[str]:
    return [w.strip() for w in text.split(",") if w.strip()]


def _audit_settings(args) -> dict:
    """The canaries' settings from the flags: what ``au.plant`` takes and run.json records for --resume."""
    from keyboard_lm.privacy import canaries as cn

    words = _canary_words(args.canary_words)
    cn.CanaryFormat(alphabet=tuple(words), slots=args.canary_slots)  # a bad format fails before any data is read
    return {"canaries": args.canaries, "controls": args.controls, "repeats": _canary_repeats(args.canary_repeats),
            "seed": args.canary_seed, "validation_fraction": federated_validation(args)["validation_fraction"],
            "alphabet": words, "slots": args.canary_slots, "clients_per_canary": args.canary_clients}


def _flag_value(dest: str, value):
    """A canary flag's value as run.json's ``audit`` records it."""
    if dest == "canary_repeats":
        return ",".join(map(str, _canary_repeats(value) if isinstance(value, str) else value))
    if dest == "canary_words":
        return ",".join(_canary_words(value) if isinstance(value, str) else value)
    return value


def _resume_audit(args):
    """Continue the audit run in --out from its checkpoint: the same canaries planted in the same clients,
    the participation recorded so far kept; (placements, controls) once it has finished."""
    from keyboard_lm.data.split import SplitConfig
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.models.run_dir import load_run
    from keyboard_lm.privacy import audit as au

    if args.out is None:
        raise ConfigError("audit canaries --resume needs --out RUN_DIR, the audit run to continue")
    if args.centralized or args.init_from is not None:
        raise ConfigError("audit canaries --resume continues the run in --out with its own settings; "
                          "--centralized and --init-from do not apply")
    info = load_run(args.out).info
    settings = info.get("audit")
    if not settings:
        raise ConfigError(f"{args.out}: run.json records no canary settings; --resume continues a run made by "
                          "`audit canaries` (runs made before it recorded them start again with --overwrite)")
    # runs recorded before the format flags planted the default format, each canary in one client
    settings = {"alphabet": list(DEFAULT_ALPHABET), "slots": DEFAULT_SLOTS, "clients_per_canary": 1, **settings}
    for dest, key in CANARY_SETTINGS.items():
        value, saved = _flag_value(dest, getattr(args, dest)), _flag_value(dest, settings[key])
        if getattr(args, dest) != CANARY_DEFAULTS[dest] and value != saved:
            raise ConfigError(f"--{dest.replace('_', '-')} {value}: the run in {args.out} planted with "
                              f"{saved}; --resume plants what the run planted (leave the flag out)")
    default_data_to_run(args, info)
    corpus, placements, controls = au.plant(load_corpus_from_args(args), SplitConfig(**info["data"]["split"]),
                                            **settings)
    train_federated_from_args(args, corpus=corpus, track_clients=au.tracked_clients(placements),
                              audit=settings)
    au.save_canaries(args.out, placements, controls)
    return placements, controls


def cmd_audit_canaries(args) -> int:
    """``keyboard-lm audit canaries``: plant canaries, train as ``train`` would, report each one's exposure.

    With ``--run RUN_DIR`` an existing audit run is measured again (its
    canaries.json); otherwise the canaries are planted in training clients,
    the run is trained into ``--out`` with every ``train`` option (``--dp``
    included), and canaries.json, audit.json and the table are written.
    """
    from keyboard_lm.errors import ConfigError
    from keyboard_lm.privacy import audit as au
    from keyboard_lm.privacy import exposure

    if args.run:
        run_dir = args.run
        placements, controls = au.load_canaries(run_dir)
    elif args.resume:
        run_dir, (placements, controls) = args.out, _resume_audit(args)
    else:
        if args.out is None:
            raise ConfigError("audit canaries needs --out RUN_DIR (to train) or --run RUN_DIR (to re-audit)")
        if args.centralized:
            raise ConfigError("audit canaries trains a federated run; --centralized does not apply")
        au.check_counts(args.canaries, args.controls)  # bad counts and flags fail before any data is read
        settings = _audit_settings(args)
        dp_options(args)
        init = warm_start_from_args(args)
        corpus, placements, controls = au.plant(load_corpus_from_args(args), split_from_args(args), **settings)
        run_dir = args.out
        train_federated_from_args(args, corpus=corpus, track_clients=au.tracked_clients(placements), init=init,
                                  audit=settings)
        au.save_canaries(run_dir, placements, controls)
    report = au.audit(run_dir, placements, controls)
    rows, dp = report["rows"], report["differential_privacy"]
    noisy = bool(dp) and bool(dp.get("noise_multiplier"))
    control = None
    if args.control:
        control = au.control_power(args.control, report["statistic"])
        report["control"] = {"run": args.control, "power": control}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        eps = "no DP" if not dp else f"eps {dp['epsilon'] if isinstance(dp['epsilon'], str) else round(dp['epsilon'], 3)}"
        print(f"exposure of {len(rows)} canaries in {run_dir} ({eps}); max = log2|R|; controls were never planted")
        print(exposure.format_audit(rows))
        print("rounds its clients trained in, per canary (copies x trainings): " +
              ", ".join(f"{r['repeats']}x {r['participations']}" for r in rows if r["client"] is not None))
        print(f"the audit's statistic: {report['statistic'].replace('_', ' ')} (calibration "
              f"{report['calibration']})")
        for line in au.verdict(report["power"], report["one_run"], noisy=noisy, control=control,
                               control_run=args.control, statistic=report["statistic"]):
            print(line)
        print(f"written: {os.path.join(run_dir, au.AUDIT_FILE)}")
    return 0


def cmd_privacy_field(args) -> int:
    """``keyboard-lm privacy field``: the noise-batch ratio over two budgets and what doubling each buys."""
    from keyboard_lm.privacy import field as fl

    columns = args.epsilons if args.vs == "privacy" else args.populations
    result = fl.field(args.vs, cohorts=args.clients_per_round, columns=columns, delta=args.delta,
                      rounds=args.rounds, mechanism=args.mechanism, epsilon=args.epsilon,
                      population=args.population, clip=args.clip)
    if args.png:
        fl.plot_field(result, args.png)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(fl.format_field(result))
    if args.png:
        print(f"field plot: {args.png}")
    return 0


def register(sub) -> None:
    """Add ``privacy plan`` and ``audit canaries``."""
    priv = sub.add_parser("privacy", help="differential privacy tools").add_subparsers(
        dest="privacy_command", required=True)
    pp = priv.add_parser("plan", help="noise multiplier per cohort size for a target (eps, delta), "
                                      "ranked by the noise-batch ratio z*clip/K, and the privacy profile "
                                      "(eps at several deltas) of the top row")
    pp.add_argument("--epsilon", type=positive_float, required=True, help="target epsilon")
    pp.add_argument("--delta", type=float, required=True, help="target delta, in (0, 1)")
    pp.add_argument("--population", type=positive_int, required=True, help="N, clients in the population")
    pp.add_argument("--rounds", type=round_count, default=None,
                    help="T, training rounds (without --loss-model)")
    pp.add_argument("--loss-model", metavar="FILE", help="plan the compute too: the loss model of "
                    "`keyboard-lm privacy fit` chooses model size, cohort and rounds under a budget")
    pp.add_argument("--budget-client-steps", type=positive_int, default=None, metavar="S",
                    help="with --loss-model: K * T at most")
    pp.add_argument("--budget-hours", type=positive_float, default=None, metavar="H",
                    help="with --loss-model: hours at the seconds per client-step measured in its runs")
    pp.add_argument("--budget-flops", type=positive_float, default=None, metavar="F",
                    help="with --loss-model: training FLOPs at most, 6 x parameters x tokens (McKenna et al.)")
    pp.add_argument("--max-clients-per-round", type=positive_int, default=None,
                    help="top of the cohort grid (min(N, 10000))")
    pp.add_argument("--mechanism", choices=("fedavg", "ftrl", "blt"), default="fedavg",
                    help="fedavg (DP-FedAvg), ftrl (DP-FTRL, tree noise) or blt (DP-FTRL, BLT noise) (fedavg)")
    pp.add_argument("--clip", type=positive_float, default=1.0, help="L2 clip C of the noise-batch ratio (1.0)")
    pp.add_argument("--tree-restart", default=None, metavar="none|epoch|ROUNDS",
                    help="--mechanism ftrl: one tree (none, the default), a new tree every N // K rounds (epoch) "
                         "or every ROUNDS rounds, as train --dp-tree-restart")
    pp.add_argument("--png", metavar="PATH", help="also plot the frontier (with --loss-model: the predicted loss "
                    "of every cohort the budget buys, a line per size)")
    pp.add_argument("--json", action="store_true")
    pp.set_defaults(func=cmd_privacy_plan)
    pf = priv.add_parser("fit", help="fit the planner's loss model (McKenna et al.: loss from model size, "
                                     "rounds and noise-batch ratio) to finished DP runs with a fixed clip")
    pf.add_argument("runs", nargs="+", metavar="RUN_DIR")
    pf.add_argument("--heldout", metavar="NAME,...", help="runs predicted, not fitted on (their error is reported)")
    pf.add_argument("--out", required=True, metavar="FILE", help="the loss model (JSON)")
    pf.add_argument("--leave-one-out", action="store_true",
                    help="also predict each fitted run from a fit on the others, and report the errors")
    pf.add_argument("--isotonic", action="store_true",
                    help="also McKenna et al.'s own fit (monotone tables interpolated in log space) on the same "
                         "runs, its held-out and leave-one-out errors beside the parametric form's")
    pf.add_argument("--png", metavar="PATH", help="plot the predicted loss against the noise-batch ratio, runs on it")
    pf.add_argument("--png-rounds", type=positive_int, default=40, help="rounds of the plotted prediction (40)")
    pf.set_defaults(func=cmd_privacy_fit)
    pv = priv.add_parser("field", help="accounting only: the noise-batch ratio over cohort K and epsilon (or "
                                       "population), and the relative decrease one step along each (McKenna et "
                                       "al.'s vector fields)")
    pv.add_argument("--vs", choices=("privacy", "data"), default="privacy",
                    help="columns: epsilons at --population (privacy) or populations at --epsilon (data) (privacy)")
    pv.add_argument("--delta", type=float, required=True, help="delta, in (0, 1)")
    pv.add_argument("--rounds", type=round_count, required=True, help="T, rounds at every cell")
    pv.add_argument("--clients-per-round", type=comma_list(positive_int), required=True, metavar="K1,K2,...",
                    help="the rows: cohort sizes, increasing (the compute budget at T rounds)")
    pv.add_argument("--epsilons", type=comma_list(positive_float), metavar="E1,E2,...",
                    help="--vs privacy: the columns, increasing")
    pv.add_argument("--population", type=positive_int, help="--vs privacy: N")
    pv.add_argument("--populations", type=comma_list(positive_int), metavar="N1,N2,...",
                    help="--vs data: the columns, increasing")
    pv.add_argument("--epsilon", type=positive_float, help="--vs data: the target epsilon")
    pv.add_argument("--mechanism", choices=("fedavg", "ftrl", "blt"), default="fedavg", help="as privacy plan (fedavg)")
    pv.add_argument("--clip", type=positive_float, default=1.0, help="L2 clip C of the ratio (1.0)")
    pv.add_argument("--png", metavar="PATH", help="also draw the field")
    pv.add_argument("--json", action="store_true")
    pv.set_defaults(func=cmd_privacy_field)

    audit = sub.add_parser("audit", help="memorization audits").add_subparsers(dest="audit_command", required=True)
    ac = audit.add_parser("canaries", help="plant canary sentences, train, report their exposure (Carlini et al.)",
                          description="Plants --canaries random sentences of one format ('my number is' + "
                                      "--canary-slots words of --canary-words) into training clients, trains "
                                      "federated with every `train` "
                                      "option (--dp too) and reports each canary's exposure, log2|R| - "
                                      "log2(rank); --controls unplanted canaries give the baseline. --out RUN_DIR "
                                      "--resume continues an audit run from its checkpoint with the same canaries.")
    add_train_args(ac, out_required=False)
    d = CANARY_DEFAULTS
    ac.add_argument("--canaries", type=int, default=d["canaries"], help="canaries planted (%(default)s)")
    ac.add_argument("--canary-repeats", default=d["canary_repeats"], metavar="R1,R2,...",
                    help="copies of each canary, cycled over the canaries (%(default)s)")
    ac.add_argument("--controls", type=int, default=d["controls"],
                    help="canaries of the same format never planted (%(default)s)")
    ac.add_argument("--canary-seed", type=non_negative_int, default=d["canary_seed"],
                    help="seed of canaries and placement (%(default)s)")
    ac.add_argument("--canary-words", default=d["canary_words"], metavar="W1,W2,...",
                    help="the alphabet of the secret words, each one token in the model's vocabulary; a larger "
                         "one keeps canaries from sharing word pairs (%(default)s)")
    ac.add_argument("--canary-slots", type=positive_int, default=d["canary_slots"],
                    help="secret words per canary: |R| = words ** slots, ranked exactly up to 100,000, "
                         "extrapolated beyond (%(default)s)")
    ac.add_argument("--canary-clients", type=positive_int, default=d["canary_clients"],
                    help="training clients that hold each canary, --canary-repeats copies in each: a secret many "
                         "users share, which a user-level DP guarantee covers only as a group (%(default)s)")
    ac.add_argument("--run", metavar="RUN_DIR", help="re-audit a run made by `audit canaries` instead of training")
    ac.add_argument("--control", metavar="RUN_DIR", help="the noiseless audit run of the same setting: its "
                    "canaries must stand out from its controls (the audit's power) before this run's say anything "
                    "about DP")
    ac.add_argument("--json", action="store_true")
    ac.set_defaults(func=cmd_audit_canaries)
