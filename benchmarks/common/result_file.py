"""Shared by the benchmarks: machine description and writing JSON + markdown results."""

from __future__ import annotations

import datetime
import json
import os
import platform
import shlex
import sys

RESULTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "results")


def results_dir(study: str) -> str:
    """benchmarks/results/STUDY: where a study's scripts write their result files (one folder per study)."""
    return os.path.join(RESULTS, study)


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem_gb = None
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            mem_gb = round(int(f.readline().split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": mem_gb, "machine": platform.machine(),
            "system": platform.system(), "python": platform.python_version()}


def _clean(x):
    """NaN/Inf -> None, so the JSON is standard."""
    if isinstance(x, float) and (x != x or x in (float("inf"), float("-inf"))):
        return None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def trained_line(trained: list[dict]) -> str:
    """One header line for the training runs a result collects (``runs.trained`` of each): their span and hosts."""
    starts = sorted(t["started"] for t in trained if t.get("started"))
    ends = sorted(t["finished"] for t in trained if t.get("finished"))
    hosts = sorted({h for t in trained for h in t.get("hosts") or ()})
    span = f"{starts[0]} to {ends[-1]}" if starts and ends else "dates not found in the runs' files"
    return (f"- trained: {len(trained)} runs, {span}, on host {', '.join(hosts) or 'not recorded'} (each run's "
            "TensorBoard event files and metrics.csv; the date and machine above are the collection's)\n")


def write(name: str, result: dict, markdown: str, out_dir: str, trained: list[dict] | None = None, *,
          seeds: str) -> tuple[str, str]:
    """Write ``name``.json and ``name``.md (with machine, date, command and ``seeds``: the seeds the figures
    rest on, or "none (deterministic: ...)" and why) into out_dir; with ``trained`` (the runs a --collect step
    reads, ``runs.trained`` of each), also when and where those runs trained."""
    if not seeds or not seeds.strip():
        raise ValueError(f"result {name}: seeds is blank (say which seeds, or 'none (deterministic: ...)')")
    os.makedirs(out_dir, exist_ok=True)
    meta = {"benchmark": name, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": shlex.join(["python", *sys.argv]), "machine": machine(), "seeds": seeds}
    if trained is not None:
        meta["trained"] = trained
    doc = {**meta, **result}
    json_path = os.path.join(out_dir, f"{name}.json")
    md_path = os.path.join(out_dir, f"{name}.md")
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(_clean(doc), f, indent=2, allow_nan=False)
    m = meta["machine"]
    header = (f"# {name}\n\n- date: {meta['date']}\n- machine: {m['cpu']}, {m['cores']} cores, "
              f"{m['memory_gb']} GB, {m['system']} {m['machine']}, Python {m['python']}\n"
              f"- command: `{meta['command']}`\n- seeds: {seeds}\n"
              + (trained_line(trained) if trained is not None else "") + "\n")
    with open(md_path, "w", encoding="utf-8") as f:
        f.write(header + markdown + "\n")
    return json_path, md_path


def spread(values: list[float]) -> str:
    """Mean ± standard deviation over seeds, as a table cell ("-" for none)."""
    import statistics

    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.4g} (1 seed)"
    return f"{statistics.fmean(values):.4g} ± {statistics.stdev(values):.2g} ({len(values)} seeds)"


def publish(name: str, data: dict, markdown: str, out_dir: str, started: float,
            trained: list[dict] | None = None, *, seeds: str) -> None:
    """``write`` a resumable benchmark's report (with the seconds this call took since ``started``) and print it."""
    import time

    paths = write(name, {**data, "seconds_this_call": time.time() - started}, markdown, out_dir, trained,
                  seeds=seeds)
    print(markdown)
    print("written:", *paths)
