"""benchmarks/export/model_fuzz.py's harness: a worker that dies on a signal is a crash, not a refusal."""

import subprocess
import sys

import pytest

from benchmarks.export import model_fuzz

pytestmark = pytest.mark.bench


def test_the_fuzz_worker_sees_a_crash_as_a_crash(tmp_path):
    """The batch's harness is real: a worker that dies on a signal is a crash, not a refusal."""
    w = model_fuzz.Worker([sys.executable, "-c", "import os, signal, sys; print('ready', flush=True); "
                           "sys.stdin.readline(); os.kill(os.getpid(), signal.SIGSEGV)"], timeout=30)
    assert w.load(str(tmp_path / "any.tflite")) == ("crash", "exit -11 (signal 11)")
    w.close()
    subprocess.run([sys.executable, "-c", "pass"], check=True)  # nothing left of the dead worker
