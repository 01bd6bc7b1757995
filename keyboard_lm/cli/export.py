"""``keyboard-lm export``: a run directory -> a self-contained int8 .tflite file and its model card."""

from __future__ import annotations

from keyboard_lm.cli.args import non_negative_int, positive_int
from keyboard_lm.models.config import QUANTIZATION


def cmd_export(args) -> int:
    from keyboard_lm.export.tflite_export import export_run

    budget = None if args.budget_bytes == 0 else args.budget_bytes
    card = export_run(args.run_dir, args.out, budget_bytes=budget, k=args.top_k, quantization=args.quantization,
                      phrases=not args.no_phrases, vocab_size=args.vocab_size)
    b = card["size_breakdown"]
    print(f"wrote {args.out}: {b['total']:,} bytes (budget {budget:,} bytes)" if budget else
          f"wrote {args.out}: {b['total']:,} bytes (no budget)")
    for name, value in b.items():
        if name != "total":
            print(f"  {name:24s} {value:>10,} B")
    v = card["vocabulary"]
    if v["kept"] < v["run"]:
        print(f"vocabulary: the {v['kept']:,} most frequent of the run's {v['run']:,} words; the "
              f"{v['run'] - v['kept']:,} rarest are <oov> in the file and never suggested")
    q = card["quantization"]
    print(f"quantization: {q['mode']} ({q['scheme']})")
    if q["exact"]:
        if q["trained_for"] != "none":
            print("  the run was trained for this mode: the file computes exactly what was evaluated")
    else:
        why = (f"weights moved by up to {q['max_rounding_error_steps']:.2f} quantization steps" if
               q["trained_for"] == "none" else f"the run was trained for {q['trained_for']!r}, which rounds "
               "matrix inputs differently")
        print(f"  {why}: near-tied suggestions may reorder (train with --quantization-aware {q['mode']} "
              "to export exactly what was evaluated)")
    print(f"sha256 {card['sha256']}\nmodel card: {args.out}.card.json")
    return 0


def register(sub) -> None:
    """Add ``export``."""
    ex = sub.add_parser("export", help="run directory -> self-contained int8 .tflite (+ model card JSON)")
    ex.add_argument("run_dir", metavar="RUN_DIR")
    ex.add_argument("--out", required=True, metavar="MODEL.tflite")
    ex.add_argument("--budget-bytes", type=non_negative_int, default=1_468_006,
                    help="fail if the file would be larger (1468006 = 1.4 MiB; 0 = no budget)")
    ex.add_argument("--no-phrases", action="store_true",
                    help="leave the run's phrase table (keyboard-lm phrases) out of the file")
    ex.add_argument("--vocab-size", type=positive_int, default=None, metavar="N",
                    help="keep only the run's N most frequent words: the rarest embedding rows are dropped, the "
                         "ranking among the words kept is unchanged, a dropped word is <oov> (default: all; with a "
                         "phrase table, the table's)")
    ex.add_argument("--top-k", type=positive_int, default=3, help="candidates returned by the step signature (3)")
    ex.add_argument("--quantization", choices=("auto", *QUANTIZATION), default="auto",
                    help="dynamic-range: int8 weights, int8-rounded matrix inputs at run time (hybrid kernels); "
                         "weight-only: int8 weights, float32 arithmetic, 4x the weight memory; none: float32; "
                         "auto (default): the mode the run was trained for, else dynamic-range")
    ex.set_defaults(func=cmd_export)
