"""McKenna et al.'s accounting-only vector fields (their section 4.5) at this project's population sizes.

Before any training, which budget lowers the noise-batch ratio z * C / K most: more privacy budget
(epsilon), more data (clients in the population) or more compute (clients a round at the same rounds)?
`keyboard-lm privacy field` computes the table and the relative gain one grid step along each axis; this
script draws the six fields this project's runs stand in, DP-FedAvg (Poisson sampling) and DP-FTRL (tree
or BLT noise, cyclic schedule), 40 rounds as the DP rows of docs/privacy.md:

- privacy vs compute at the Tiny Shakespeare speeches' population (6,387, delta 6.52e-5 as those runs);
- data vs compute at eps 10 and Gboard's delta 1e-10, from 1,000 clients (the mail has 887 senders) to
  1,024,000 (a Gboard-sized population is larger still).

    python benchmarks/privacy/privacy_field.py            # writes privacy_field.{json,md} and six PNGs
"""

from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from benchmarks.common import result_file  # noqa: E402
from keyboard_lm.privacy import field as fl  # noqa: E402

COHORTS = [25, 50, 100, 200, 400, 800, 1600]
EPSILONS = [0.25, 0.5, 1, 2, 4, 8, 16, 32, 64]
POPULATIONS = [1000 * 2 ** i for i in range(11)]
ROUNDS = 40
SHAKESPEARE_SPEECHES, SHAKESPEARE_DELTA = 6387, 6.52e-5
GBOARD_DELTA, DATA_EPSILON = 1e-10, 10.0


def fields() -> list[tuple[str, dict]]:
    """(name, arguments of ``field.field``) of each field drawn."""
    out = []
    for mechanism in ("fedavg", "ftrl", "blt"):
        out.append((f"{mechanism}_privacy", dict(vs="privacy", cohorts=COHORTS, columns=EPSILONS,
                                                  delta=SHAKESPEARE_DELTA, rounds=ROUNDS, mechanism=mechanism,
                                                  population=SHAKESPEARE_SPEECHES)))
        out.append((f"{mechanism}_data", dict(vs="data", cohorts=COHORTS, columns=POPULATIONS, delta=GBOARD_DELTA,
                                               rounds=ROUNDS, mechanism=mechanism, epsilon=DATA_EPSILON)))
    return out


def _share(result: dict) -> tuple[int, int]:
    """(cells where the column budget gains more, cells with both arrows)."""
    pairs = [(c, r) for gc_row, gr_row in zip(result["gain_column"], result["gain_row"])
             for c, r in zip(gc_row, gr_row) if c is not None and r is not None]
    return sum(c > r for c, r in pairs), len(pairs)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=result_file.results_dir("privacy"))
    p.add_argument("--name", default="privacy_field")
    args = p.parse_args(argv)
    results, sections = {}, []
    for name, kwargs in fields():
        start = time.time()
        vs = kwargs.pop("vs")
        result = fl.field(vs, **kwargs)
        png = f"{args.name}_{name}.png"
        fl.plot_field(result, os.path.join(args.out, png))
        wins, cells = _share(result)
        result["column_gains_more"] = {"cells": wins, "of": cells}
        result["seconds"] = round(time.time() - start, 1)
        results[name] = result
        budget = "epsilon doubled" if vs == "privacy" else "the population doubled"
        sections.append(f"## {name}\n\n{fl.format_field(result)}\n\n{budget} lowers the ratio more than the "
                        f"cohort doubled in {wins} of {cells} cells. ![{name}]({png})\n")
        print(f"{name}: {result['seconds']} s", flush=True)
    _, md = result_file.write(args.name, {"fields": results}, "\n".join(sections), args.out,
                              seeds="none (deterministic: privacy accounting only, no training or sampling)")
    print(f"written: {md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
