"""DP-FTRL with and without tree restarts: eps, calibrated noise, and the noise the model carries.

For each setting, `--dp-tree-restart none` against `epoch` (a new tree every
N // K rounds), side by side:

- the exact tree sensitivity S of the cyclic schedule (``sampling.tree_sensitivity``),
  rho = S / (2 z^2) and eps at the setting's delta for the same noise multiplier z;
- the z that ``privacy plan`` calibrates for the same target eps;
- the noise itself, measured on the project's own DP-FTRL query
  (``federated.dp.tree_query``, tensorflow_privacy's tree and restart queries)
  fed zero records for T rounds: the variance per coordinate of one round's
  residual, and of the sum of all residuals so far, which is the noise in the
  model of server SGD (DP-FTRL's model is the initial one minus the learning
  rate times that sum), at the last round and at its worst; then scaled by z^2
  at the target eps, so that both arms are compared at the same guarantee.

    python benchmarks/privacy/tree_restart_benchmark.py            # about a minute on 2 cores

Results: benchmarks/results/privacy/tree_restart_benchmark.{json,md}.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from benchmarks.common import result_file  # noqa: E402

#: (name, population N, clients per round K, rounds T, delta, target eps).  The fixed-noise column
#: uses the z that meets the target without restarts (z = 7.0 for Gboard's es-ES vector).
SETTINGS = [
    ("Gboard es-ES (6 participations)", 334, 1, 2000, 1e-10, 8.9),
    ("Shakespeare speeches, 300 rounds", 6387, 100, 300, 6387 ** -1.1, 10.0),
    ("Shakespeare speeches, 60 rounds (one epoch)", 6387, 100, 60, 6387 ** -1.1, 10.0),
]


def measured_noise(population, k, rounds, tree_restart, dims, seed):
    """Per-coordinate variance (z = 1, clip 1) of one round's residual and of the running sum of residuals."""
    import tensorflow as tf

    from keyboard_lm.federated.dp import tree_query
    from keyboard_lm.privacy.config import DPConfig

    dp = DPConfig("ftrl", 1.0, population, k, clip=1.0, tree_restart=tree_restart)
    query = tree_query(dp, [tf.TensorSpec([dims], tf.float32)], noise_seed=seed)
    state = query.initial_global_state()
    zeros = [tf.zeros([dims])]

    @tf.function
    def step(state):
        out, state, _ = query.get_noised_result(zeros, state)
        return out[0], state

    total = np.zeros(dims)
    residual, running = [], []
    for _ in range(rounds):
        out, state = step(state)
        out = out.numpy()
        total += out
        residual.append(out.var())
        running.append(total.var())
    # Divided by K^2: NormalizedQuery divides the noisy sum by K; report the sum's noise per unit clip.
    k2 = float(k * k)
    return {"residual_mean": float(np.mean(residual)) * k2, "sum_final": running[-1] * k2,
            "sum_max": float(np.max(running)) * k2}


def run(dims, seed):
    from keyboard_lm.privacy.accounting import rho_to_epsilon
    from keyboard_lm.privacy.planner import noise_for
    from keyboard_lm.privacy.sampling import restart_period, tree_sensitivity

    rows = []
    for name, n, k, t, delta, target in SETTINGS:
        z = noise_for(target, delta, n, t, k, "ftrl", "none")
        for restart in ("none", "epoch"):
            s = tree_sensitivity(n, k, t, restart_period(restart, n, k))
            z_cal = noise_for(target, delta, n, t, k, "ftrl", restart)
            noise = measured_noise(n, k, t, restart, dims, seed)
            rows.append({"setting": name, "population": n, "clients_per_round": k, "rounds": t,
                         "tree_restart": restart, "restart_period": restart_period(restart, n, k),
                         "tree_sensitivity": s, "z": z, "rho": s / (2 * z * z),
                         "epsilon": rho_to_epsilon(s / (2 * z * z), delta), "delta": delta,
                         "target_epsilon": target, "z_for_target": z_cal, "noise_z1": noise,
                         "noise_at_target": {key: v * z_cal ** 2 for key, v in noise.items()}})
            print(f"{name} {restart}: S {s:g}, eps {rows[-1]['epsilon']:.3g}, z for eps {target:g} {z_cal:.4g}, "
                  f"residual {rows[-1]['noise_at_target']['residual_mean']:.1f}, "
                  f"model {rows[-1]['noise_at_target']['sum_final']:.1f}", flush=True)
    return rows


def markdown(rows, dims):
    lines = ["Noise variances are per coordinate per unit clip, measured over "
             f"{dims:,} coordinates on the project's DP-FTRL query fed zero records, and scaled by the z that "
             "meets the target eps: *residual* is one round's noise, *model* the noise in the sum of all rounds' "
             "residuals (what server SGD's model carries) at the last round and at its worst.", "",
             "*eps at z* uses the z that meets the target eps without restarts.", "",
             "| setting | restart | S | eps at z | z for target eps | residual var | model var, last | "
             "model var, worst |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        restart = r["tree_restart"] + (f" ({r['restart_period']} rounds)" if r["restart_period"] else "")
        at = r["noise_at_target"]
        lines.append(f"| {r['setting']} (N {r['population']:,}, K {r['clients_per_round']}, T {r['rounds']:,}, "
                     f"delta {r['delta']:.2g}) | {restart} | {r['tree_sensitivity']:g} | "
                     f"{r['epsilon']:.3g} at z {r['z']:.3g} | {r['z_for_target']:.3g} (eps {r['target_epsilon']:g}) | "
                     f"{at['residual_mean']:.1f} | {at['sum_final']:.1f} | {at['sum_max']:.1f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dims", type=int, default=4000, help="coordinates of the measured noise (4000)")
    parser.add_argument("--seed", type=int, default=1, help="noise seed (1)")
    parser.add_argument("--out", default=result_file.results_dir("privacy"))
    args = parser.parse_args()
    rows = run(args.dims, args.seed)
    paths = result_file.write("tree_restart_benchmark", {"dims": args.dims, "seed": args.seed, "rows": rows},
                  markdown(rows, args.dims), args.out,
                  seeds=f"{args.seed} (--seed: the tree's noise)")
    print("written: " + ", ".join(paths))


if __name__ == "__main__":
    main()
