"""The pure-Java core of android_demo/ passes its JUnit tests (compiled here with javac).

The core is compiled at Java 8 source level (as the APK's dexer needs) with the
JDK on the machine and run with JUnit 4 from Debian's junit4 / libhamcrest-java
packages (dev.sh installs them when missing and running as root). Skipped, with
the reason, where javac or the JUnit jars are absent. The golden text-spec
vectors shared with Python are handed to the Java tests as a line file.
"""

import json
import shutil
import subprocess
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
    r = subprocess.run([java, f"-Dkblm.vectors={vectors}", "-cp", cp, "org.junit.runner.JUnitCore", *tests],
                       capture_output=True, text=True, timeout=300)
    summary = [line for line in r.stdout.splitlines() if line.startswith(("OK (", "Tests run:"))]
    print("JUnit:", " ".join(summary))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
