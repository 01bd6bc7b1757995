"""Carry a long centralized run across machines: its newest epoch checkpoint as files a commit can hold.

A pretraining run takes hours and a session's machine may be a new one, so a run directory under runs/ does
not outlive it. ``save`` writes what ``train --centralized --resume`` needs from RUN_DIR into SNAPSHOT_DIR:
run.json, vocab.txt, the kept weights (weights.npz), metrics.csv, manifest.json, the newest epoch's state,
and its TensorFlow checkpoint as ``checkpoint.npz`` (every tensor by its checkpoint key; the weights and
their moving average exactly, Adam's slots rounded to bfloat16 unless ``--exact``: they are re-estimated
within a few hundred steps and are half of the bytes). ``restore`` writes a run directory back from it
(the checkpoint rebuilt under its own name with TensorFlow's SaveV2), which ``--resume`` continues from the
start of the next epoch; steps inside that epoch are not in a snapshot.

    python benchmarks/tools/run_snapshot.py save runs/base_v2/w40k benchmarks/records/base/w40k
    python benchmarks/tools/run_snapshot.py restore benchmarks/records/base/w40k runs/base_v2/w40k

A damaged or foreign snapshot is refused in one line naming the file (exit code 2).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import zipfile

import numpy as np

FORMAT = "keyboard_lm.run_snapshot/1"
RUN_FILES = ("run.json", "vocab.txt", "weights.npz", "metrics.csv", "manifest.json")
TENSORS, INDEX = "checkpoint.npz", "snapshot.json"
OBJECT_GRAPH = "_CHECKPOINTABLE_OBJECT_GRAPH"


class SnapshotError(Exception):
    """One line naming what is wrong and where."""


def to_bfloat16(a: np.ndarray) -> np.ndarray:
    """float32 -> the upper 16 bits of its rounded-to-nearest-even bit pattern (bfloat16), as uint16."""
    bits = np.ascontiguousarray(a, np.float32).view(np.uint32)
    rounded = bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    return (rounded >> np.uint32(16)).astype(np.uint16)


def from_bfloat16(a: np.ndarray) -> np.ndarray:
    return (a.astype(np.uint32) << np.uint32(16)).view(np.float32)


def _rounded(key: str, dtype: str, exact: bool) -> bool:
    """Adam's float slots (the optimizer's tensors of more than one value): kept at bfloat16."""
    return not exact and dtype == "float32" and key.startswith("optimizer/")


REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def repo_relative(path: str) -> str:
    """``path`` relative to the repository when it lies inside it (a snapshot moves between machines where
    the repository is elsewhere; ``--resume`` runs from the repository's root), else as it is."""
    rel = os.path.relpath(os.path.abspath(path), REPO)
    return path if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel


def _relative_source(run_json: str) -> None:
    with open(run_json, encoding="utf-8") as f:
        info = json.load(f)
    source = (info.get("data") or {}).get("source") or {}
    if source.get("path"):
        source["path"] = repo_relative(source["path"])
        with open(run_json, "w", encoding="utf-8") as f:
            json.dump(info, f, indent=2)
            f.write("\n")


def save(run_dir: str, out: str, exact: bool = False) -> dict:
    import tensorflow as tf

    ckpt_dir = os.path.join(run_dir, "checkpoints")
    state_path = os.path.join(ckpt_dir, "state.json")
    try:
        with open(state_path, encoding="utf-8") as f:
            state = json.load(f)
        prefix = os.path.join(ckpt_dir, state["checkpoint"])
        reader = tf.train.load_checkpoint(prefix)
    except (OSError, ValueError, KeyError, tf.errors.OpError) as e:
        raise SnapshotError(f"{state_path}: no epoch checkpoint to snapshot ({type(e).__name__})") from None
    missing = [n for n in RUN_FILES if not os.path.isfile(os.path.join(run_dir, n)) and n != "metrics.csv"]
    if missing:
        raise SnapshotError(f"{run_dir}: not a run directory ({', '.join(missing)} missing)")
    shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
    arrays, entries = {}, []
    for i, key in enumerate(sorted(shapes)):
        dtype = dtypes[key].name
        value = reader.get_tensor(key)
        if dtype == "string":
            stored = np.frombuffer(bytes(value), np.uint8)
        elif _rounded(key, dtype, exact) and np.ndim(value) > 0:
            stored, dtype = to_bfloat16(value), "bfloat16"
        else:
            stored = np.asarray(value)
        arrays[f"t{i}"] = stored
        entries.append({"key": key, "dtype": dtype, "shape": list(shapes[key])})
    tmp = out.rstrip("/") + ".partial"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    np.savez_compressed(os.path.join(tmp, TENSORS), **arrays)
    for name in RUN_FILES:
        if os.path.isfile(os.path.join(run_dir, name)):  # metrics.csv: none before the first epoch
            shutil.copyfile(os.path.join(run_dir, name), os.path.join(tmp, name))
    _relative_source(os.path.join(tmp, "run.json"))
    index = {"format": FORMAT, "epoch": state["epoch"], "checkpoint": state["checkpoint"], "state": state,
             "exact": exact, "tensors": entries}
    with open(os.path.join(tmp, INDEX), "w", encoding="utf-8") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return index


def restore(snapshot: str, run_dir: str) -> dict:
    import tensorflow as tf

    index_path = os.path.join(snapshot, INDEX)
    try:
        with open(index_path, encoding="utf-8") as f:
            index = json.load(f)
        if index.get("format") != FORMAT:
            raise ValueError(f"format {index.get('format')!r}, not {FORMAT}")
        stored = np.load(os.path.join(snapshot, TENSORS))
        tensors = []
        for i, e in enumerate(index["tensors"]):
            a = stored[f"t{i}"]
            if e["dtype"] == "string":
                tensors.append(tf.constant(a.tobytes(), tf.string))
                continue
            a = from_bfloat16(a) if e["dtype"] == "bfloat16" else a
            if list(a.shape) != e["shape"]:
                raise ValueError(f"tensor {e['key']} has shape {list(a.shape)}, the index says {e['shape']}")
            tensors.append(tf.constant(a))
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as e:
        raise SnapshotError(f"{snapshot}: not a readable run snapshot ({type(e).__name__}: {e})") from None
    if os.path.exists(run_dir) and os.listdir(run_dir):
        raise SnapshotError(f"{run_dir}: exists and is not empty; restore into a new directory")
    ckpt_dir = os.path.join(run_dir, "checkpoints")
    os.makedirs(ckpt_dir)
    for name in RUN_FILES:
        if os.path.isfile(os.path.join(snapshot, name)):
            shutil.copyfile(os.path.join(snapshot, name), os.path.join(run_dir, name))
    name = index["checkpoint"]
    tf.raw_ops.SaveV2(prefix=os.path.join(ckpt_dir, name), tensor_names=[e["key"] for e in index["tensors"]],
                      shape_and_slices=[""] * len(tensors), tensors=tensors)
    with open(os.path.join(ckpt_dir, "checkpoint"), "w", encoding="utf-8") as f:
        f.write(f'model_checkpoint_path: "{name}"\nall_model_checkpoint_paths: "{name}"\n')
    doc = json.dumps(index["state"], indent=2) + "\n"
    for state_name in (f"state-{index['epoch']}.json", "state.json"):
        with open(os.path.join(ckpt_dir, state_name), "w", encoding="utf-8") as f:
            f.write(doc)
    return index


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("save", help="RUN_DIR's newest epoch checkpoint -> SNAPSHOT_DIR")
    s.add_argument("run_dir")
    s.add_argument("snapshot")
    s.add_argument("--exact", action="store_true", help="keep Adam's slots at float32 too (twice the bytes)")
    r = sub.add_parser("restore", help="SNAPSHOT_DIR -> a new RUN_DIR that --resume continues")
    r.add_argument("snapshot")
    r.add_argument("run_dir")
    args = p.parse_args(argv)
    try:
        if args.command == "save":
            index = save(args.run_dir, args.snapshot, args.exact)
            size = sum(os.path.getsize(os.path.join(args.snapshot, n)) for n in os.listdir(args.snapshot))
            print(f"saved epoch {index['epoch']} of {args.run_dir} to {args.snapshot} ({size / 2**20:.1f} MiB)")
        else:
            index = restore(args.snapshot, args.run_dir)
            print(f"restored epoch {index['epoch']} into {args.run_dir}; continue it with "
                  f"keyboard-lm train --centralized --resume --out {args.run_dir}")
    except SnapshotError as e:
        print(f"run_snapshot: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.exit(main())
