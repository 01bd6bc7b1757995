"""The privacy planner: for a target (eps, delta), the noise each cohort size needs.

McKenna et al. 2025 ("Scaling Laws for Differentially Private Language
Models") model the loss of DP training through the noise-batch ratio, the
noise standard deviation on the averaged update: here z * clip / K for K
clients per round (Ponomareva et al. 2023, "How to DP-fy ML", make the same
point about noise against batch size). The ratio is not the whole story:
their appendix C.3 shows the batch size mattering beyond it, and their method
plans model size, batch and steps together under a compute budget, which is
``keyboard_lm.privacy.loss_model`` (``privacy plan --loss-model``) here.

Without a loss model, for each cohort size K the planner finds the noise multiplier z that meets (eps, delta) over T rounds with
dp_accounting's ``calibrate_dp_mechanism`` and ranks the cohorts by that
ratio, next to the client-steps K * T each costs:

- ``fedavg``: DP-FedAvg (McMahan et al. 2018) with Poisson sampling, q = K/N,
  the T-fold ``PoissonSampledDpEvent(q, GaussianDpEvent(z))`` on the RDP
  accountant (add/remove-one), as ``sampling.poisson_sample`` draws it.
- ``ftrl``: DP-FTRL (Kairouz et al. 2021) on ``sampling.ftrl_schedule``: the
  tree is rho-zCDP with rho = S / (2 z^2), S = ``sampling.tree_sensitivity``
  (ceil(log2(T + 1)) for one participation; summed over the trees with
  ``tree_restart``).  RDP of order a is then a * rho, which is the RDP of one
  Gaussian with noise multiplier z / sqrt(S): that event is what the
  accountant calibrates.
- ``blt``: the same schedule with buffered-linear-Toeplitz noise (McMahan, Xu
  and Zhang 2024; ``privacy.blt``): one Gaussian mechanism of squared
  sensitivity S = sens(C)^2 for the BLT optimized for T rounds and the
  schedule's (max participations, min separation), so again rho = S / (2 z^2).

Every row also carries its privacy profile (``profile.privacy_profile``: eps
at several deltas and the membership-inference bound of each, from the
project's accountant at the planned z); the table prints the top row's.

The RDP accountant runs at dp_accounting's default orders (fractional up to
10.9, then integers): fast, and sound at large z, where a fine fractional
grid fails (dp_accounting returns negative divergences for fractional orders
in the hundreds, e.g. every one from 287 up at z = 15, q = 0.1).
``accounting.fedavg_epsilon`` adds every integer order up to 1024 to the same
grid; the tests check that the planned z meets the target under it too.
"""

from __future__ import annotations

import json
import math
import warnings

import dp_accounting

from keyboard_lm.data.limits import MAX_EPSILON, MAX_ROUNDS
from keyboard_lm.errors import ConfigError
from keyboard_lm.privacy.accounting import fedavg_epsilons, rho_to_epsilons
from keyboard_lm.privacy.config import FTRL_MECHANISMS, MECHANISMS, tree_restart_setting
from keyboard_lm.privacy.profile import format_profile, privacy_profile
from keyboard_lm.privacy.sampling import ftrl_participation, restart_period, tree_sensitivity

DEFAULT_MAX_CLIENTS = 10_000
GRID_POINTS = 12


def _check_target(epsilon, rounds) -> None:
    """The target and horizon every calibration accepts (``plan``, ``noise_for``, so ``train --dp-epsilon``)."""
    if not 0 < epsilon <= MAX_EPSILON:  # NaN fails too
        raise ConfigError(f"--epsilon must be a finite number > 0 and <= {MAX_EPSILON:g}, got {epsilon}")
    if not 1 <= rounds <= MAX_ROUNDS:
        raise ConfigError(f"--rounds must be >= 1 and <= {MAX_ROUNDS:,}, got {rounds:,}")


def _check(epsilon, delta, population, rounds, clients, mechanism, clip, tree_restart=None) -> None:
    _check_target(epsilon, rounds)
    if not 0 < delta < 1:
        raise ConfigError(f"--delta must be in (0, 1), got {delta}")
    if population < 1:
        raise ConfigError(f"--population must be >= 1, got {population}")
    if mechanism not in MECHANISMS:
        raise ConfigError(f"--mechanism must be one of {', '.join(MECHANISMS)}, got {mechanism!r}")
    if not clip > 0 or math.isinf(clip):
        raise ConfigError(f"--clip must be a finite number > 0, got {clip}")
    if tree_restart is not None:
        if mechanism != "ftrl":
            raise ConfigError(f"--tree-restart {tree_restart} applies to --mechanism ftrl only (DP-FedAvg has no tree)")
        tree_restart_setting(tree_restart, "--tree-restart")
    for k in clients:
        if not 1 <= k <= population:
            raise ConfigError(f"--max-clients-per-round: a cohort of {k} is outside 1..population ({population})")


def cohort_grid(population: int, max_clients_per_round: int | None = None) -> list[int]:
    """Cohort sizes K: the maximum, then halving, at most ``GRID_POINTS`` of them (ascending).

    The maximum defaults to min(population, 10,000).
    """
    top = min(population, DEFAULT_MAX_CLIENTS) if max_clients_per_round is None else max_clients_per_round
    if not 1 <= top <= population:
        raise ConfigError(f"--max-clients-per-round must be between 1 and --population ({population}), got {top}")
    return sorted({max(1, round(top / 2 ** i)) for i in range(GRID_POINTS)})


def _accountant():
    return dp_accounting.rdp.RdpAccountant()


def _event_maker(mechanism: str, population: int, rounds: int, k: int, tree_restart=None):
    """(z -> DpEvent, extra columns) of ``mechanism`` with cohort ``k`` (and ftrl's ``tree_restart``)."""
    if mechanism == "fedavg":
        q = k / population
        extra = {"sampling": "poisson", "sampling_probability": q}
        return (lambda z: dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(z)), rounds)), extra
    max_part, min_sep = ftrl_participation(population, k, rounds)
    if mechanism == "blt":
        from keyboard_lm.privacy.blt import blt_for_schedule

        blt, s = blt_for_schedule(population, k, rounds)
        extra = {"sampling": "ftrl_schedule", "max_participations": max_part, "min_separation": min_sep,
                 "blt": blt.to_dict(), "blt_sensitivity": s}
        return (lambda z: dp_accounting.GaussianDpEvent(z / math.sqrt(s))), extra
    restart = tree_restart_setting("none" if tree_restart is None else tree_restart, "--tree-restart")
    period = restart_period(restart, population, k)
    s = tree_sensitivity(population, k, rounds, period)
    extra = {"sampling": "ftrl_schedule", "max_participations": max_part, "min_separation": min_sep,
             "tree_restart": restart, "restart_period": period, "tree_sensitivity": s}
    return (lambda z: dp_accounting.GaussianDpEvent(z / math.sqrt(s))), extra


def noise_for(epsilon: float, delta: float, population: int, rounds: int, clients_per_round: int,
              mechanism: str = "fedavg", tree_restart=None) -> float:
    """The smallest noise multiplier z (to 1e-4) meeting (eps, delta); see the module docstring.

    ``tree_restart`` (ftrl): ``none`` (None), ``epoch`` or a period in rounds.
    """
    _check_target(epsilon, rounds)
    make_event, _ = _event_maker(mechanism, population, rounds, clients_per_round, tree_restart)
    # The search starts above 0: z = 0 (no noise) has eps = inf, no finite value to bracket with.
    bracket = dp_accounting.LowerEndpointAndGuess(1e-3, 1.0)
    try:
        with warnings.catch_warnings():
            # The bracket search overflows on its way up at extreme targets; the outcome is handled below,
            # and the warning would be a second line on stderr.
            warnings.simplefilter("ignore", RuntimeWarning)
            return float(dp_accounting.calibrate_dp_mechanism(
                _accountant, make_event, epsilon, delta, bracket_interval=bracket, tol=1e-4))
    except dp_accounting.mechanism_calibration.NoBracketIntervalFoundError:
        raise ConfigError(f"--epsilon {epsilon:g}: even a noise multiplier of 0.001 meets it with "
                          f"{clients_per_round} clients per round; plan for a smaller epsilon") from None
    except (ValueError, dp_accounting.mechanism_calibration.NoOptimumFoundError) as e:
        # dp_accounting's numerical limits (a negative divergence, a root brentq cannot bracket): the target
        # is outside what its arithmetic resolves, which is a setting to change, not a crash.
        raise ConfigError(f"--epsilon {epsilon:g}, --delta {delta:g} over {rounds:,} rounds with "
                          f"{clients_per_round:,} of {population:,} clients per round: the accountant cannot "
                          f"calibrate a noise multiplier ({str(e).splitlines()[0]})") from None


def plan(epsilon: float, delta: float, population: int, rounds: int, *, mechanism: str = "fedavg",
         clients_per_round: list[int] | None = None, max_clients_per_round: int | None = None,
         clip: float = 1.0, tree_restart=None) -> list[dict]:
    """One row per cohort size, ranked by noise-batch ratio z * clip / K (lowest first).

    Args:
      epsilon, delta: the target guarantee for the whole run (T rounds).
      population: N, the clients that may be sampled.
      rounds: T.
      mechanism: ``fedavg`` (Poisson sampling) or ``ftrl`` (cyclic schedule).
      clients_per_round: cohort sizes K to try (default ``cohort_grid``).
      max_clients_per_round: the top of the default grid.
      clip: the L2 clip C; z does not depend on it, the ratio does.
      tree_restart: ``ftrl`` only: ``none`` (None), ``epoch`` (N // K rounds
        per tree, so the period follows each row's K) or a period in rounds.
    Returns:
      Dicts with ``clients_per_round``, ``noise_multiplier``,
      ``noise_batch_ratio``, ``client_steps`` (K * T), the target, the
      sampling's own columns (q; or participations, separation, restart
      period, rho) and ``profile`` (eps and the membership-inference bound
      at several deltas).
    """
    _check(epsilon, delta, population, rounds, clients_per_round or [], mechanism, clip, tree_restart)
    cohorts = clients_per_round or cohort_grid(population, max_clients_per_round)
    rows = []
    for k in sorted(set(cohorts)):
        z = noise_for(epsilon, delta, population, rounds, k, mechanism, tree_restart)
        _, extra = _event_maker(mechanism, population, rounds, k, tree_restart)
        if mechanism in FTRL_MECHANISMS:
            extra["rho"] = extra["tree_sensitivity" if mechanism == "ftrl" else "blt_sensitivity"] / (2 * z * z)

        def eps_at(deltas, z=z, k=k, rho=extra.get("rho")):
            return (rho_to_epsilons(rho, deltas) if mechanism in FTRL_MECHANISMS
                    else fedavg_epsilons(z, k / population, rounds, deltas))

        rows.append({"mechanism": mechanism, "epsilon": epsilon, "delta": delta, "population": population,
                     "rounds": rounds, "clients_per_round": k, "noise_multiplier": z, "clip": clip,
                     "noise_batch_ratio": z * clip / k, "client_steps": k * rounds, **extra,
                     "profile": privacy_profile(eps_at, population, delta, own="target")})
    return sorted(rows, key=lambda r: r["noise_batch_ratio"])


def format_table(rows: list[dict]) -> str:
    """A plain-text table of ``plan``'s rows, in their order."""
    if not rows:
        return "(no cohort sizes)"
    ftrl = rows[0]["mechanism"] in FTRL_MECHANISMS
    tree = rows[0]["mechanism"] == "ftrl"
    head = ["rank", "K", "z", "z*C/K", "client-steps"] + (["max part.", "min sep."] + (["restart"] if tree else [])
                                                           + ["rho"] if ftrl else ["q"])
    lines = []
    for i, r in enumerate(rows, 1):
        cells = [str(i), f"{r['clients_per_round']:,}", f"{r['noise_multiplier']:.4g}",
                 f"{r['noise_batch_ratio']:.4g}", f"{r['client_steps']:,}"]
        cells += ([str(r["max_participations"]), str(r["min_separation"])]
                  + (["none" if r["restart_period"] is None else f"{r['restart_period']:,}"] if tree else [])
                  + [f"{r['rho']:.4g}"] if ftrl else [f"{r['sampling_probability']:.4g}"])
        lines.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(head)]
    r0 = rows[0]
    restart = (f", tree restart {r0['tree_restart']}" + (" (every N // K rounds)" if r0["tree_restart"] == "epoch"
                                                        else "") if tree else "")
    title = (f"{r0['mechanism']}: eps {r0['epsilon']:g}, delta {r0['delta']:.3g}, population {r0['population']:,}, "
             f"{r0['rounds']:,} rounds, clip {r0['clip']:g}{restart}; ranked by noise-batch ratio z*C/K "
             "(lower is better)")
    out = [title, "  ".join(h.rjust(w) for h, w in zip(head, widths))]
    out += ["  ".join(c.rjust(w) for c, w in zip(cells, widths)) for cells in lines]
    return "\n".join(out)


def plot_frontier(rows: list[dict], path: str) -> None:
    """PNG of the frontier: noise-batch ratio against client-steps K*T, each point labelled K."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pts = sorted(rows, key=lambda r: r["client_steps"])
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot([r["client_steps"] for r in pts], [r["noise_batch_ratio"] for r in pts], "o-")
    for r in pts:
        ax.annotate(f"K={r['clients_per_round']}", (r["client_steps"], r["noise_batch_ratio"]),
                    textcoords="offset points", xytext=(4, 4), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("client-steps K*T")
    ax.set_ylabel("noise-batch ratio z*C/K")
    if pts:
        r0 = pts[0]
        ax.set_title(f"{r0['mechanism']}: eps {r0['epsilon']:g}, delta {r0['delta']:.2g}, "
                     f"N {r0['population']:,}, T {r0['rounds']:,}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def cmd_privacy_plan(args) -> int:
    """``keyboard-lm privacy plan``: print the ranked table (or JSON), optionally write the PNG.

    ``args`` has epsilon, delta, population, rounds, max_clients_per_round
    (or None), mechanism, clip, tree_restart (or None), png (or None) and
    json.  The table is followed by the privacy profile of its top row.
    """
    rows = plan(args.epsilon, args.delta, args.population, args.rounds, mechanism=args.mechanism,
                max_clients_per_round=args.max_clients_per_round, clip=args.clip,
                tree_restart=getattr(args, "tree_restart", None))
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        r0 = rows[0]
        print(format_table(rows))
        print(format_profile(r0["profile"], f"privacy profile of rank 1 (K={r0['clients_per_round']:,}, "
                                            f"z={r0['noise_multiplier']:.4g})", rho=r0.get("rho")))
    if args.png:
        plot_frontier(rows, args.png)
        if not args.json:
            print(f"frontier plot: {args.png}")
    return 0
