"""``keyboard-lm demo``: the main job. Federated training on the embedded corpus, export, suggestions."""

from __future__ import annotations

import dataclasses
import os

from keyboard_lm.cli.args import non_negative_int, positive_int


def demo_recipe(rounds: int | None = None, seed: int = 0, base=None):
    """(model, federated, client data, split, loop) settings of ``demo`` on the embedded corpus.

    ``base`` (the ModelConfig of the shipped base, the default): the base's CIFG fine-tuned by federated
    averaging on the embedded corpus (docs/training.md has the measurement).  ``base=None`` is the recipe
    from random weights the demo ran before the base existed.
    """
    from keyboard_lm.data.config import ClientDataConfig
    from keyboard_lm.data.split import SplitConfig
    from keyboard_lm.federated.config import FederatedConfig, LoopConfig
    from keyboard_lm.models.config import ModelConfig

    if base is not None:
        rounds = rounds or DEMO_BASE_ROUNDS
        # The base's model, quantization-aware, so the int8 file computes exactly what was evaluated.
        model_config = dataclasses.replace(base, quantization="dynamic-range")
        fed = FederatedConfig(algorithm="fedavg", server_optimizer="adam", server_lr=DEMO_BASE_SERVER_LR,
                              client_lr=DEMO_BASE_CLIENT_LR, clients_per_round=20, rounds=rounds, seed=seed,
                              validation_fraction=0.0, lr_decay=1.0, weight_average=0.0)
        data_config = ClientDataConfig(max_seq_len=20, batch_size=10, epochs=DEMO_BASE_LOCAL_EPOCHS,
                                       max_batches=120)
    else:
        rounds = rounds or 100
        # A smaller CIFG than Hard et al.'s (D=64, H=256): the embedded corpus has
        # only ~27k words, and the paper size trains slower and no better on it from random weights.
        model_config = ModelConfig("cifg", embedding_dim=64, units=256, quantization="dynamic-range")
        # No validation clients: with 10% set aside, seed 0 drew a client whose local loss exploded at round 4.
        fed = FederatedConfig(algorithm="fedavg", server_optimizer="adam", server_lr=0.02, client_lr=1.0,
                              clients_per_round=20, rounds=rounds, seed=seed, validation_fraction=0.0,
                              lr_decay=1.0, weight_average=0.0)
        data_config = ClientDataConfig(max_seq_len=20, batch_size=10, epochs=5, max_batches=120)
    loop = LoopConfig(eval_every=max(1, rounds // 10), checkpoint_every=max(1, rounds // 10))
    return model_config, fed, data_config, SplitConfig(0.1, seed=0), loop


#: The demo's fine-tuning of the base (measured in docs/training.md).
DEMO_BASE_ROUNDS, DEMO_BASE_SERVER_LR, DEMO_BASE_CLIENT_LR, DEMO_BASE_LOCAL_EPOCHS = 40, 0.002, 0.3, 1


def cmd_demo(args) -> int:
    """The main job: federated training on the embedded corpus, then suggestions."""
    from keyboard_lm.data.corpora import load_default
    from keyboard_lm.data.split import split_clients
    from keyboard_lm.federated.trainer import RunOptions, train_federated

    init = None
    if not args.scratch:
        from keyboard_lm.models.warm_start import load_warm_start

        init = load_warm_start("base")
    corpus = load_default()
    model_config, fed, data_config, split, loop = demo_recipe(
        args.rounds, args.seed, base=init.base.model_config if init is not None else None)
    start = "the shipped base model" if init is not None else "random weights"
    print(f"keyboard-lm demo: FedAdam over {corpus.name} from {start}, {fed.rounds} rounds, "
          f"run directory {args.out}")
    if init is not None:
        init = init.check_overlap(corpus, split)
    # The demo re-runs into a directory holding its own earlier run; anything else is refused
    # unless --overwrite (see prepare_run_dir).
    train_federated(corpus, args.out, model_config, fed, data_config, split, loop,
                    RunOptions(init=init, data_source={"path": None, "format": "default"}, command="demo",
                               overwrite=args.overwrite))
    from keyboard_lm.export.tflite_export import export_run
    from keyboard_lm.inference import Predictor
    from keyboard_lm.text.tokenizer import tokenize

    model_path = os.path.join(args.out, "model.tflite")
    card = export_run(args.out, model_path)
    exact = ", computing exactly what was evaluated" if card["quantization"]["exact"] else ""
    print(f"\nexported {model_path}: {card['size_bytes']:,} bytes, int8 ({card['quantization']['mode']}){exact}, "
          "vocabulary inside")
    predictor = Predictor.load(model_path)
    heldout = split_clients(corpus.client_ids, split)[1]
    print("top-3 suggestions from the TFLite predictor for held-out contexts "
          "(client: context -> strip | actual next word)")
    shown = 0
    for cid in heldout:  # one context per held-out conversation
        words = next((tokenize(t) for t in corpus.clients[cid] if len(tokenize(t)) >= 4), None)
        if words is None or shown >= args.contexts:
            continue
        context, actual = " ".join(words[:3]), words[3]
        strip = "  ".join(f"{w} ({p:.2f})" for w, p in predictor.suggest(context))
        print(f"  {cid}: \"{context}\" -> {strip} | {actual}")
        shown += 1
    example = "what is your"
    completions = ", ".join(w for w, _ in predictor.complete(example, "f"))
    print(f"completing \"{example} f\" -> {completions}")
    print(f"\nrun directory: {args.out} (metrics.csv, metrics.png, weights.npz, vocab.txt, checkpoints/, "
          f"model.tflite)")
    return 0


def register(sub) -> None:
    """Add ``demo``."""
    demo = sub.add_parser("demo", help="federated training on the embedded corpus, then suggestions")
    demo.add_argument("--rounds", type=positive_int, default=None,
                      help=f"({DEMO_BASE_ROUNDS} from the base, 100 with --scratch)")
    demo.add_argument("--scratch", action="store_true",
                      help="start from random weights with the small CIFG the demo trained before the base model "
                           "existed, instead of fine-tuning the base")
    demo.add_argument("--out", default=os.path.join("runs", "demo"), help="run directory (runs/demo)")
    demo.add_argument("--contexts", type=non_negative_int, default=8, help="held-out contexts to show (8)")
    demo.add_argument("--seed", type=non_negative_int, default=0, help="seed of training (0)")
    demo.add_argument("--overwrite", action="store_true",
                      help="write into --out even if it holds something other than an earlier demo run")
    demo.set_defaults(func=cmd_demo)
