"""The noise a DP-FTRL run leaves in its model: tree against BLT at the runs' own settings.

For each DP-FTRL run directory (``--dp ftrl`` or ``--dp blt``), the run's
own query (``federated.dp.tree_query`` or ``federated.blt_query``) is driven
for the run's rounds with every client update zero, on ``--coordinates``
independent coordinates, and its output goes through the run's server step
(SGD with heavy-ball momentum at the run's rate) exactly as in training: what
is left in the model at the end is the noise alone. Reported: its standard
deviation per coordinate, and that times sqrt(parameters), the norm it has
over the whole model. The clip, z, cohort and schedule are the run's
(run.json), so the figure is the one training saw.

    python benchmarks/privacy/dp_noise_in_model.py runs/privacy_base_clean/base_ftrl_eps10 runs/privacy_base_clean/base_blt_eps10
"""

from __future__ import annotations

import argparse
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from benchmarks.common import result_file  # noqa: E402


def noise_left(run_dir: str, coordinates: int = 20000, seed: int = 0) -> dict:
    """The run's DP-FTRL noise after its rounds, through its server step, per coordinate."""
    import tensorflow as tf

    from keyboard_lm.federated.blt_query import make_blt_query
    from keyboard_lm.federated.dp import tree_query
    from keyboard_lm.privacy.blt import BLT
    from keyboard_lm.privacy.config import DPConfig

    from keyboard_lm.models.run_dir import RunRecord

    record = RunRecord.read(run_dir)
    dp, fed = record.differential_privacy, record.federated
    if dp["mechanism"] not in ("ftrl", "blt"):
        raise SystemExit(f"{run_dir}: --dp {dp['mechanism']}, not DP-FTRL")
    config = DPConfig(dp["mechanism"], dp["noise_multiplier"], dp["population"], dp["clients_per_round"],
                      clip=dp["clip"], delta=dp["delta"], tree_restart=dp.get("tree_restart"))
    specs = [tf.TensorSpec([coordinates], tf.float32)]
    if dp["mechanism"] == "blt":
        from tensorflow_privacy.privacy.dp_query.normalized_query import NormalizedQuery

        blt = BLT(tuple(dp["blt"]["theta"]), tuple(dp["blt"]["omega"]))
        query = NormalizedQuery(make_blt_query(blt, config.clip, config.noise_multiplier, specs, noise_seed=seed),
                                denominator=float(config.clients_per_round))
    else:
        query = tree_query(config, specs, noise_seed=seed)
    rounds = int(dp["rounds"])
    lr, momentum = float(fed["server_lr"]), float(fed["server_momentum"])
    state = query.initial_global_state()
    params = query.derive_sample_params(state)
    model, velocity = np.zeros(coordinates), np.zeros(coordinates)
    for _ in range(rounds):
        sample = query.initial_sample_state([tf.zeros([coordinates])])
        sample = query.accumulate_preprocessed_record(sample, query.preprocess_record(params, [tf.zeros([coordinates])]))
        result, state, _ = query.get_noised_result(sample, state)
        velocity = momentum * velocity + result[0].numpy()  # TFF's sgdm: accumulator = m * acc + g
        model = model - lr * velocity
    std = float(model.std())
    return {"run": run_dir, "mechanism": dp["mechanism"], "epsilon": dp["epsilon"], "noise_multiplier":
            dp["noise_multiplier"], "rounds": rounds, "clients_per_round": dp["clients_per_round"], "clip": dp["clip"],
            "std_per_coordinate": std, "norm_over_model": std * math.sqrt(record.parameters),
            "parameters": record.parameters}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("runs", nargs="+")
    p.add_argument("--coordinates", type=int, default=20000)
    p.add_argument("--name", default=None, help="also write benchmarks/results/privacy/NAME.{md,json}")
    p.add_argument("--out", default=result_file.results_dir("privacy"))
    args = p.parse_args()
    lines = [f"The noise each DP-FTRL run leaves in its model after its rounds ({args.coordinates:,} coordinates "
             "of the run's own query and server step, every update zero).", "",
             "| run | mechanism | eps | z | noise std per coordinate | its norm over the model |",
             "|---|---|---|---|---|---|"]
    results = []
    for run in args.runs:
        r = noise_left(run, args.coordinates)
        results.append(r)
        eps = r["epsilon"] if isinstance(r["epsilon"], str) else f"{r['epsilon']:.3g}"
        lines.append(f"| {os.path.basename(run)} | {r['mechanism']} | {eps} | {r['noise_multiplier']:.4g} | "
                     f"{r['std_per_coordinate']:.3g} | {r['norm_over_model']:.3g} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.name:

        print("written:", *result_file.write(args.name, {"runs": results}, text, args.out, seeds=(
            "0 (`noise_left`'s default noise seed: the query's noise over the run's rounds of zero updates)")))


if __name__ == "__main__":
    main()
