"""The Android demo's Java core as the Java benchmarks use it: its sources (now or at a revision), JVM flags,
the emulated aarch64 JVM's path, and the words every keystroke benchmark types."""

from __future__ import annotations

from pathlib import Path

from benchmarks.common import baseline

REPO = Path(__file__).resolve().parents[2]
#: The core's sources (main and bench), and its main sources relative to the repository (as git archive names them).
CORE = REPO / "android_demo" / "core" / "src"
CORE_MAIN = "android_demo/core/src/main/java"
#: Serial GC: one collector thread, so heap and timing figures do not depend on the machine's cores.
JVM_FLAGS = ["-XX:+UseSerialGC"]
#: The emulated aarch64 JVM inside the directory arm64_env.sh --java prints.
JAVA_ARM64 = Path("java-root/usr/lib/jvm/java-17-openjdk-arm64/bin/java")
WORDS = 300


def tree_at(rev: str, dest: Path) -> Path:
    """The core's main sources at ``rev``, unpacked into dest (git archive: the working tree is not touched)."""
    return baseline.tree_at(rev, dest, [CORE_MAIN]) / CORE_MAIN


def typed_words() -> list[str]:
    """The first WORDS words of the embedded corpus (the words the latency and keystroke benchmarks type)."""
    from keyboard_lm.data.corpora import load_default

    corpus = load_default()
    return " ".join(" ".join(t for c in corpus.client_ids[:200] for t in corpus.clients[c]).split()[:WORDS]).split()
