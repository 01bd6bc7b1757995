"""The pure-Java core of android_demo/ passes its JUnit tests (compiled here with javac).

The core is compiled at Java 8 source level (as the APK's dexer needs) with the
JDK on the machine and run with JUnit 4 from Debian's junit4 / libhamcrest-java
packages (dev.sh installs them when missing and running as root). Skipped, with
the reason, where javac or the JUnit jars are absent. The golden text-spec
vectors shared with Python are handed to the Java tests as a line file.
"""

import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

CORE = REPO / "android_demo" / "core"
JARS = [Path("/usr/share/java/junit4.jar")]
HAMCREST = [Path("/usr/share/java/hamcrest-core.jar"), Path("/usr/share/java/hamcrest.jar")]


def _hex(s: str) -> str:
    return s.encode("utf-8").hex()


def _vector_lines() -> str:
    cases = json.loads((REPO / "tests" / "golden" / "text_spec_vectors.json").read_text(encoding="utf-8"))["cases"]
    lines = []
    for c in cases:
        sentences = "\u0002".join("\u0001".join(s) for s in c["sentences"])
        lines.append(" ".join(_hex(x) for x in (c["name"], c["input"], c["normalized"],
                                               "\u0001".join(c["tokens"]), sentences)))
    return "\n".join(lines) + "\n"


def _vocab_checks() -> str:
    """model path, id, hex(word) for every word the Python predictor put in the fixture."""
    golden = REPO / "tests" / "golden"
    fixture = json.loads((golden / "predictor_fixture.json").read_text(encoding="utf-8"))
    lines = set()
    for name, entry in fixture["models"].items():
        for item in entry["contexts"] + entry["completions"]:
            for i, w in zip(item["top_ids"], item["top_words"]):
                lines.add(f"{golden / 'models' / name} {i} {_hex(w)}")
    return "\n".join(sorted(lines)) + "\n"


def _bad_models(tmp: Path) -> str:
    """Files the Java reader must refuse, each with a part of the expected message."""
    good = (REPO / "tests" / "golden" / "models" / "cifg_dynamic-range.tflite").read_bytes()
    with zipfile.ZipFile(io.BytesIO(good)) as z:
        flatbuffer_end = min(i.header_offset for i in z.infolist())
        meta = json.loads(z.read("keyboard_lm.json"))
        vocab = z.read("vocab.txt")
    cases = {"truncated.tflite": (good[: len(good) // 2], "truncated"),
             "foreign.tflite": (b"PK\x03\x04 not a model at all", "no TFL3 identifier"),
             "tiny.tflite": (b"TFL", "truncated or foreign"),
             "no_zip.tflite": (good[:flatbuffer_end], "truncated")}
    lines = []
    for name, (data, expected) in cases.items():
        (tmp / name).write_bytes(data)
        lines.append(f"{_hex(expected)} {tmp / name}")
    other = tmp / "other_spec.tflite"
    other.write_bytes(good[:flatbuffer_end])
    with zipfile.ZipFile(other, "a") as z:
        z.writestr("keyboard_lm.json", json.dumps({**meta, "text_spec": "kblm-text-0"}))
        z.writestr("vocab.txt", vocab)
    lines.append(f"{_hex('text spec kblm-text-0')} {other}")
    return "\n".join(lines) + "\n"


def test_java_core_passes_junit(tmp_path):
    javac, java = shutil.which("javac"), shutil.which("java")
    if not javac or not java:
        pytest.skip("no JDK (javac/java) on PATH: the Java core cannot be compiled here")
    hamcrest = next((p for p in HAMCREST if p.exists()), None)
    if not JARS[0].exists() or hamcrest is None:
        pytest.skip("JUnit 4 / hamcrest jars absent: install Debian's junit4 and libhamcrest-java (dev.sh does as root)")
    sources = sorted(str(p) for p in (CORE / "src").rglob("*.java"))
    classes = tmp_path / "classes"
    cp = ":".join([str(classes), str(JARS[0]), str(hamcrest)])
    c = subprocess.run([javac, "--release", "8", "-nowarn", "-d", str(classes), "-cp", cp, *sources],
                       capture_output=True, text=True)
    assert c.returncode == 0, "javac failed:\n" + c.stderr[-4000:]
    tests = sorted(p.relative_to(CORE / "src" / "test" / "java").with_suffix("").as_posix().replace("/", ".")
                   for p in (CORE / "src" / "test" / "java").rglob("*Test.java"))
    assert tests, "no JUnit test classes found"
    vectors = tmp_path / "vectors.txt"
    vectors.write_text(_vector_lines(), encoding="utf-8")
    vocab_checks = tmp_path / "vocab_checks.txt"
    vocab_checks.write_text(_vocab_checks(), encoding="utf-8")
    bad = tmp_path / "bad"
    bad.mkdir()
    bad_models = tmp_path / "bad_models.txt"
    bad_models.write_text(_bad_models(bad), encoding="utf-8")
    r = subprocess.run([java, f"-Dkblm.vectors={vectors}", f"-Dkblm.vocabchecks={vocab_checks}",
                        f"-Dkblm.badmodels={bad_models}", "-cp", cp, "org.junit.runner.JUnitCore", *tests],
                       capture_output=True, text=True, timeout=300)
    summary = [line for line in r.stdout.splitlines() if line.startswith(("OK (", "Tests run:"))]
    print("JUnit:", " ".join(summary))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
