"""The privacy profile of a run: eps at several deltas, and what each pair allows an attacker.

One (eps, delta) pair is one point of a curve: the same mechanism satisfies
(eps(delta), delta)-DP for every delta, and a smaller delta costs a larger eps.
The profile reports eps at the deltas readers compare across papers (1e-3,
1e-5, 1e-7), at 1e-10 (the delta Gboard reports its production models at,
beside rho-zCDP), at 1/N^1.1 for a population of N (Gboard's convention, below
1/N) and at the run's own delta, each from the same accountant as the run's
eps (``accounting``: RDP for DP-FedAvg, zCDP of the tree for DP-FTRL).

Each pair is also read as a bound on membership inference: no test that
guesses from the trained model whether one user took part has a true-positive
rate more than ``advantage_bound(eps, delta)`` above its false-positive rate
(Kairouz, Oh and Viswanath 2015, Thm 2.1; Dong, Roth and Su 2022's trade-off
function f_{eps,delta}).  A delta above 1/N is marked: (eps, delta)-DP with
delta >= 1/N allows a mechanism that publishes one user's data outright.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from keyboard_lm.errors import ConfigError

#: The fixed deltas of every profile, besides 1/N^1.1 and the run's own.
PROFILE_DELTAS = (1e-3, 1e-5, 1e-7)
#: Gboard reports each production model's guarantee as eps at this delta, with rho-zCDP (Google's 2025
#: write-ups of its on-device language models: eps 0.994 to 13.69 at delta 1e-10).
GBOARD_DELTA = 1e-10
GBOARD_LABEL = "Gboard's"

#: Readers' description of the advantage column (run.json and the model card carry it).
ADVANTAGE = ("largest TPR - FPR of any membership-inference test against (eps, delta)-DP: "
             "(e^eps - 1 + 2 delta) / (e^eps + 1) (Kairouz, Oh and Viswanath 2015, Thm 2.1)")


def advantage_bound(epsilon: float, delta: float) -> float:
    """The most a membership-inference attacker can gain, TPR - FPR, against (eps, delta)-DP.

    Any test between "the user took part" and "did not" on an (eps, delta)-DP
    output has TPR <= e^eps FPR + delta and 1 - FPR <= e^eps (1 - TPR) + delta
    (Kairouz, Oh and Viswanath 2015, Thm 2.1; the f-DP trade-off function
    f_{eps,delta} of Dong, Roth and Su 2022).  The two lines meet at
    FPR = (1 - delta) / (e^eps + 1), where TPR - FPR is largest:
    (e^eps - 1 + 2 delta) / (e^eps + 1) = tanh(eps / 2) + 2 delta / (e^eps + 1).
    Yeom et al. 2018's membership advantage is the same TPR - FPR.

    Args:
      epsilon: eps >= 0 (inf allowed: no bound, 1).
      delta: in [0, 1).
    Returns:
      The bound, in [delta, 1].
    """
    if not epsilon >= 0:
        raise ConfigError(f"epsilon must be >= 0, got {epsilon}")
    if not 0 <= delta < 1:
        raise ConfigError(f"delta must be in [0, 1), got {delta}")
    if math.isinf(epsilon):
        return 1.0
    # The tanh form does not overflow at large eps.
    return min(1.0, math.tanh(epsilon / 2) + 2 * delta * math.exp(-epsilon) / (1 + math.exp(-epsilon)))


def profile_deltas(population: int, delta: float | None = None, own: str = "run") -> list[tuple[float, str]]:
    """(delta, label) of a profile, largest delta first.

    Deltas within 5% of each other are one row (6.5e-5 typed for 1/6387^1.1
    = 6.52e-5), at the run's own delta when it is one of them.

    Args:
      population: N; adds 1/N^1.1, labelled ``1/N^1.1``.
      delta: the run's (or the plan's) own delta, labelled ``own``; None: none.
      own: its label (``run``, ``target``).
    """
    if population < 1:
        raise ConfigError(f"population must be >= 1, got {population}")
    found: list[list] = []
    for d, label in [*((d, "") for d in PROFILE_DELTAS), (GBOARD_DELTA, GBOARD_LABEL),
                     (population ** -1.1, "1/N^1.1"),
                     *([(delta, own)] if delta is not None else [])]:
        same = next((f for f in found if math.isclose(f[0], d, rel_tol=0.05)), None)
        if same is None:
            found.append([d, label])
        else:
            same[1] = ", ".join(x for x in (same[1], label) if x)
            if label == own:
                same[0] = d
    return [(d, label) for d, label in sorted(found, key=lambda f: -f[0])]


def privacy_profile(epsilons_at: Callable[[Sequence[float]], Sequence[float]], population: int,
                    delta: float | None = None, own: str = "run") -> list[dict]:
    """eps and the membership-inference bound at each of ``profile_deltas``.

    Args:
      epsilons_at: deltas -> eps at each, from the run's accountant
        (``accounting.fedavg_epsilons``, ``accounting.rho_to_epsilons``).
      population, delta, own: as ``profile_deltas``.
    Returns:
      One dict per delta, largest first: ``delta``, ``epsilon`` (the string
      "inf" when unbounded, as run.json writes it), ``advantage``
      (``advantage_bound``), ``label`` and ``delta_above_1_over_n``.
    """
    rows = profile_deltas(population, delta, own)
    eps = list(epsilons_at([d for d, _ in rows]))
    return [{"delta": d, "epsilon": e if math.isfinite(e) else "inf", "advantage": advantage_bound(e, d),
             "label": label, "delta_above_1_over_n": d > 1.0 / population}
            for (d, label), e in zip(rows, eps)]


def format_rho(rho: float | None) -> str:
    """The rho-zCDP line of a profile, Gboard's second figure; None where the accountant is RDP."""
    if rho is None:
        return ("  rho-zCDP: not reported (DP-FedAvg is accounted by RDP with amplification by sampling; "
                "rho is DP-FTRL's figure)")
    return f"  rho-zCDP: {rho:.4g}" if math.isfinite(rho) else "  rho-zCDP: inf (no noise)"


def format_profile(rows: list[dict], title: str = "privacy profile", rho: float | None | str = "") -> str:
    """A short plain-text table of ``privacy_profile``'s rows; with ``rho`` (a number, or None for an RDP
    accountant), the rho-zCDP line Gboard reports beside eps at delta 1e-10."""
    head = ["delta", "eps", "TPR-FPR <="]
    cells = [[f"{r['delta']:.3g}" + ("*" if r["delta_above_1_over_n"] else ""),
              r["epsilon"] if isinstance(r["epsilon"], str) else f"{r['epsilon']:.3g}",
              f"{r['advantage']:.3f}"] for r in rows]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
    lines = [f"{title}:", "  " + "  ".join(h.rjust(w) for h, w in zip(head, widths))]
    for r, c in zip(rows, cells):
        lines.append(("  " + "  ".join(x.rjust(w) for x, w in zip(c, widths)) + f"  {r['label']}").rstrip())
    if rho != "":
        lines.append(format_rho(rho))
    lines.append("  TPR-FPR: the most any membership-inference test can gain, (e^eps - 1 + 2 delta) / (e^eps + 1)")
    if any(r["delta_above_1_over_n"] for r in rows):
        lines.append("  * delta above 1/N: such a guarantee allows publishing one user's data outright")
    return "\n".join(lines)
