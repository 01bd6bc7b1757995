"""The pure-Java core of android_demo/ passes its JUnit tests (compiled here with javac).

The core is compiled at Java 8 source level (as the APK's dexer needs) with the
JDK on the machine and run with JUnit 4 from Debian's junit4 / libhamcrest-java
packages (dev.sh installs them when missing and running as root). Skipped, with
the reason, where javac or the JUnit jars are absent. The golden files
shared with Python (the text-spec vectors, the predictor fixture, the user-history
and history-weight vectors, all in tests/golden/) are handed to the Java tests by
their paths, which the Java golden tests read themselves, as they do under Maven
(android_demo/core/pom.xml, run by tests/test_android_maven.py); and, where a Python TFLite runtime
is installed, full-distribution traces of every golden model written here with
the Python ModelFile, so the Java engine is checked on every log-prob and state
value, not only the fixture's top 3.

The APK build (android_demo/build_apk.sh) is run too where its tools are already
on the machine (aapt, zipalign, apksigner, and the bullseye android.jar and dx
unpacked under android_demo/build/tools by an earlier run of the script); it
never downloads anything here (KBLM_NO_FETCH=1) and skips, saying so, elsewhere.

Where `bash benchmarks/arm64_env.sh --java` has built an emulated aarch64 JVM (Debian's arm64
OpenJDK 17, run by qemu-aarch64-static; in KEYBOARD_LM_ARM64_ENV, default benchmarks/.arm64), the
same classes also pass the same JUnit suite there (a heavy test); it skips elsewhere and never
builds the environment (that downloads).
"""

import io
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import GOLDEN_MODELS, REPO, compacted_copy

CORE = REPO / "android_demo" / "core"
JARS = [Path("/usr/share/java/junit4.jar")]
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}
HAMCREST = [Path("/usr/share/java/hamcrest-core.jar"), Path("/usr/share/java/hamcrest.jar")]


def _pom_version() -> str:
    """The version android_demo/core/pom.xml publishes (VersionTest checks Version.NAME against it)."""
    version = ET.parse(CORE / "pom.xml").getroot().findtext("m:version", namespaces=POM_NS)
    assert version, "android_demo/core/pom.xml has no <version>"
    return version


TRACE_STEPS = 300


def _traces(tmp: Path) -> str | None:
    """Per golden model, TRACE_STEPS step_full results of the TFLite runtime (see StepEngineTraceTest.java).

    None where no TFLite runtime is installed (the Java trace test then skips).
    """
    try:
        from keyboard_lm.inference.model_file import ModelFile
        from keyboard_lm.inference.runtime import interpreter_class
        interpreter_class()
    except ImportError as e:
        print(f"no full-distribution traces: {e}")
        return None
    from keyboard_lm.text.spec import SPECIAL_TOKENS

    rng = np.random.default_rng(0)
    lines = []
    golden = sorted(GOLDEN_MODELS.glob("*.tflite"))
    # and each compacted as the exporter now writes it (tensor names and empty buffers dropped)
    (tmp / "compacted").mkdir()
    for model in golden + [compacted_copy(g, tmp / "compacted" / g.name) for g in golden]:
        m = ModelFile.load(str(model))
        v = len(m.vocab)
        out = io.BytesIO()
        out.write(np.array([TRACE_STEPS, v, m.state_size], "<i4").tobytes())
        state = m.initial_state()
        for t in range(TRACE_STEPS):
            if t % m.seq_len == 0:  # a new sentence: no state is older than seq_len inputs, as in a session
                token, state = SPECIAL_TOKENS.bos_id, m.initial_state()
            else:
                token = int(rng.integers(SPECIAL_TOKENS.bos_id + 1, v))  # <bos> only where the state restarts
            log_probs, state = m.step_full(token, state)
            out.write(np.array([token], "<i4").tobytes())
            out.write(np.asarray(log_probs, "<f4").tobytes() + np.asarray(state, "<f4").tobytes())
        trace = tmp / f"{model.parent.name}-{model.name}.trace"
        trace.write_bytes(out.getvalue())
        lines.append(f"{model} {trace}")
    return "\n".join(lines) + "\n"


def _junit_run(tmp_path: Path) -> tuple[list[str], list[str]]:
    """Compile the core and its tests with the host javac; return (JVM arguments, test classes) for JUnitCore.

    Skips where javac or the JUnit jars are absent.
    """
    javac = shutil.which("javac")
    if not javac:
        pytest.skip("no JDK (javac) on PATH: the Java core cannot be compiled here")
    hamcrest = next((p for p in HAMCREST if p.exists()), None)
    if not JARS[0].exists() or hamcrest is None:
        pytest.skip("JUnit 4 / hamcrest jars absent: install Debian's junit4 and libhamcrest-java (dev.sh does as root)")
    # src/android/java (the InputConnection adapter) needs Android's API: build_apk.sh and Maven compile it.
    sources = sorted(str(p) for d in ("main", "test", "bench") for p in (CORE / "src" / d / "java").rglob("*.java"))
    classes = tmp_path / "classes"
    cp = ":".join([str(classes), str(JARS[0]), str(hamcrest)])
    c = subprocess.run([javac, "--release", "8", "-nowarn", "-d", str(classes), "-cp", cp, *sources],
                       capture_output=True, text=True)
    assert c.returncode == 0, "javac failed:\n" + c.stderr[-4000:]
    tests = sorted(p.relative_to(CORE / "src" / "test" / "java").with_suffix("").as_posix().replace("/", ".")
                   for p in (CORE / "src" / "test" / "java").rglob("*Test.java"))
    assert tests, "no JUnit test classes found"
    golden = REPO / "tests" / "golden"
    props = [f"-Dkblm.textspec={golden / 'text_spec_vectors.json'}",
             f"-Dkblm.fixture={golden / 'predictor_fixture.json'}",
             f"-Dkblm.version={_pom_version()}",
             f"-Dkblm.userhistory={REPO / 'tests' / 'golden' / 'user_history_vectors.json'}",
             f"-Dkblm.historyweight={REPO / 'tests' / 'golden' / 'history_weight_vectors.json'}",
             f"-Dkblm.readme={REPO / 'android_demo' / 'README.md'}"]
    traces = _traces(tmp_path)
    if traces is not None:
        (tmp_path / "traces.txt").write_text(traces, encoding="utf-8")
        props.append(f"-Dkblm.traces={tmp_path / 'traces.txt'}")
    return [*props, "-cp", cp], tests


def _junit(java: list[str], args: list[str], tests: list[str], env=None, timeout=300) -> tuple[int, str]:
    """Run JUnitCore on ``java``; return (tests run, JUnit's summary line), asserting the suite passed."""
    r = subprocess.run([*java, *args, "org.junit.runner.JUnitCore", *tests], capture_output=True, text=True,
                       timeout=timeout, env=env)
    # The engine tests print their per-model agreement (max |log-prob diff|); shown with pytest -s.
    # JUnitCore prints a dot per test, so a line may start with dots.
    print("\n".join(line.lstrip(".") for line in r.stdout.splitlines()
                    if line.lstrip(".").startswith(("StepEngine", "Session", "TextField", "ModelFile", "UserHistory", "  "))))
    summary = [line for line in r.stdout.splitlines() if line.startswith(("OK (", "Tests run:"))]
    print("JUnit:", " ".join(summary))
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert len(summary) == 1 and summary[0].startswith("OK ("), r.stdout[-2000:]
    return int(summary[0][len("OK ("):].split()[0]), summary[0]


@pytest.fixture(scope="module")
def host_junit(tmp_path_factory):
    """The core compiled once and its JUnit suite passed on the host JVM: (JVM arguments, test classes, count)."""
    java = shutil.which("java")
    if not java:
        pytest.skip("no JDK (javac/java) on PATH: the Java core cannot be run here")
    args, tests = _junit_run(tmp_path_factory.mktemp("junit"))
    count, _ = _junit([java], args, tests)
    return args, tests, count


def test_java_core_passes_junit(host_junit):
    assert host_junit[2] > 0


#: Where benchmarks/arm64_env.sh --java puts the emulated aarch64 JVM (its ARM64_ENV_DIR, default below).
ARM64_ENV = Path(os.environ.get("KEYBOARD_LM_ARM64_ENV", REPO / "benchmarks" / ".arm64"))
ARM64_JAVA = Path("usr/lib/jvm/java-17-openjdk-arm64/bin/java")
#: No flag is needed for HotSpot to run under qemu-user. C2 is left out only for time: the JIT compilers run
#: emulated too, and C2's costly compiles of the tests' short-lived hot code do not pay off (the suite took
#: 89 s with C2, 19 s with C1 only, on 2 loaded x86_64 cores). Interpreter and C1 code run the whole suite;
#: benchmarks/android/java_arm64_benchmark.py runs the default (C2) JVM and checks its answers.
ARM64_JVM_FLAGS = ["-XX:TieredStopAtLevel=1"]


@pytest.mark.heavy
def test_java_core_passes_junit_on_an_emulated_aarch64_jvm(host_junit):
    """The same classes (bytecode from the host javac) pass the same JUnit suite on Debian's arm64 JVM under qemu.

    About 21 s wall and 28 s of CPU on a 2-core x86_64 machine (39 s wall under load), the host run it
    is compared with (``host_junit``, shared with the host test) included; the emulated JVM runs without C2
    (ARM64_JVM_FLAGS).
    """
    qemu = shutil.which("qemu-aarch64-static")
    root = ARM64_ENV / "java-root"
    if not qemu or not (root / ARM64_JAVA).exists():
        pytest.skip(f"no emulated aarch64 JVM at {root} with qemu-aarch64-static: "
                    "build it with `bash benchmarks/arm64_env.sh --java` (downloads; KEYBOARD_LM_ARM64_ENV moves it)")
    args, tests, host_count = host_junit
    env = {**os.environ, "QEMU_LD_PREFIX": str(root)}
    arch = subprocess.run([qemu, str(root / ARM64_JAVA), "-XshowSettings:properties", "-version"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert "os.arch = aarch64" in arch.stderr, arch.stderr[-2000:]
    count, summary = _junit([qemu, str(root / ARM64_JAVA), *ARM64_JVM_FLAGS], args, tests, env=env, timeout=900)
    assert count == host_count, f"aarch64 JVM: {summary}; host JVM: OK ({host_count} tests)"


_PROPERTY = re.compile(r'"(kblm\.[A-Za-z0-9_.]+)"')


def _properties_read_by_the_java_tests() -> dict[str, set[str]]:
    """{property: the test classes that read it unguarded}: every "kblm.*" literal in a JUnit test source.

    A read guarded by ``Assume.assume*`` within the next three lines (the test skips without it, as
    StepEngineTraceTest does for the traces only pytest writes) is left out.
    """
    reads: dict[str, set[str]] = {}
    for path in sorted((CORE / "src" / "test" / "java").rglob("*.java")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            for name in _PROPERTY.findall(line):
                if any("Assume.assume" in later for later in lines[i + 1:i + 4]):
                    continue
                reads.setdefault(name, set()).add(path.stem)
    return reads


def test_gradle_passes_every_system_property_the_java_tests_read():
    """`gradle :core:test` (not runnable here: no network to Gradle distributions) gets every kblm.* property.

    core/build.gradle must run every JUnit class (as Maven's Surefire does: no exclude) and pass each
    property a test class reads unguarded; and each path it passes must exist in the repository.
    """
    gradle = (CORE / "build.gradle").read_text(encoding="utf-8")
    passed = dict(re.findall(r"systemProperty\s+'(kblm\.[A-Za-z0-9_.]+)',\s*rootProject\.file\('([^']+)'\)\.path", gradle))
    assert passed, "core/build.gradle passes no kblm.* system property in the form systemProperty 'kblm.x', rootProject.file('...').path"
    assert not re.search(r"\bexclude\b", gradle), "core/build.gradle excludes tests that Maven runs"
    reads = _properties_read_by_the_java_tests()
    assert "kblm.historyweight" in reads and "kblm.textspec" in reads, reads
    missing = {name: sorted(classes) for name, classes in reads.items() if name not in passed}
    assert not missing, f"core/build.gradle does not pass these system properties to the test classes that read them: {missing}"
    for name, relative in passed.items():
        assert (REPO / "android_demo" / relative).resolve().exists(), f"core/build.gradle: {name} names {relative}, which does not exist"


def test_pytest_passes_every_system_property_the_java_tests_read():
    """The JUnit run here gets every kblm.* property any test reads, guarded or not (the guarded ones then run too)."""
    names = set(_PROPERTY.findall("\n".join(p.read_text(encoding="utf-8")
                                            for p in (CORE / "src" / "test" / "java").rglob("*.java"))))
    source = Path(__file__).read_text(encoding="utf-8")
    given = set(re.findall(r"-D(kblm\.[A-Za-z0-9_.]+)=", source))
    assert names - given == set(), f"tests/test_android_core.py does not pass {sorted(names - given)} to the JUnit run"


APP = REPO / "android_demo" / "app" / "src" / "main"
ANDROID_NS = "{http://schemas.android.com/apk/res/android}"


def _java_string_constant(path: Path, name: str) -> str:
    m = re.search(rf'static final String {name} = "([^"]+)";', path.read_text(encoding="utf-8"))
    assert m, f"{path.relative_to(REPO)} has no String constant {name}"
    return m.group(1)


def test_backups_and_device_transfers_exclude_the_user_history():
    """The manifest points at backup rules for API 23-30 and data-extraction rules for 31+, and both leave out
    the history file, its temporary file and a damaged copy kept aside, by the names the code uses."""
    import xml.etree.ElementTree as ET

    history = _java_string_constant(APP / "java" / "org" / "keyboardlm" / "demo" / "UserHistoryStore.java", "FILE")
    bad = _java_string_constant(CORE / "src" / "main" / "java" / "org" / "keyboardlm" / "core" / "UserHistoryFile.java",
                                "BAD_SUFFIX")
    names = {history, history + ".tmp", history + bad}
    app = ET.parse(APP / "AndroidManifest.xml").getroot().find("application")
    assert app.get(ANDROID_NS + "allowBackup") == "false"

    def excluded(xml_ref: str, sections: list[str]) -> None:
        assert xml_ref and xml_ref.startswith("@xml/"), xml_ref
        root = ET.parse(APP / "res" / "xml" / (xml_ref[len("@xml/"):] + ".xml")).getroot()
        for section in sections:
            node = root if section == "." else root.find(section)
            assert node is not None, f"{xml_ref} has no <{section}>"
            paths = {e.get("path") for e in node.findall("exclude") if e.get("domain") == "file"}
            assert names <= paths, f"{xml_ref} <{section}> does not exclude {sorted(names - paths)} (domain file)"
            assert not node.findall("include"), f"{xml_ref} <{section}> includes files: only exclusions are wanted"

    excluded(app.get(ANDROID_NS + "fullBackupContent"), ["."])
    excluded(app.get(ANDROID_NS + "dataExtractionRules"), ["cloud-backup", "device-transfer"])


ANDROID_TOOLS = REPO / "android_demo" / "build" / "tools"
ANDROID_JARS = [ANDROID_TOOLS / "usr/share/java/com.android.android-23.jar",
                ANDROID_TOOLS / "usr/share/java/com.android.dx-10.0.0.jar"]


def test_build_apk_builds_a_signed_verified_keyboard(tmp_path):
    missing = [t for t in ("aapt", "zipalign", "apksigner", "javac", "java", "keytool") if not shutil.which(t)]
    missing += [str(j.relative_to(REPO)) for j in ANDROID_JARS if not j.exists()]
    if missing:
        pytest.skip(f"APK tools absent ({', '.join(missing)}): run android_demo/build_apk.sh once as root to fetch them")
    model = REPO / "tests" / "golden" / "models" / "gru_weight-only.tflite"
    env = {**os.environ, "KBLM_APK_BUILD": str(tmp_path), "KBLM_ANDROID_TOOLS": str(ANDROID_TOOLS), "KBLM_NO_FETCH": "1"}
    r = subprocess.run(["nice", "-n", "19", "bash", str(REPO / "android_demo" / "build_apk.sh"), str(model)],
                       capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout
    assert "Verifies" in out and "Verified using v2 scheme (APK Signature Scheme v2): true" in out, out
    assert "package: name='org.keyboardlm.demo'" in out and "sdkVersion:'21'" in out, out
    apk = tmp_path / "keyboard_lm-demo-debug.apk"
    with zipfile.ZipFile(apk) as z:
        assert z.read("assets/model.tflite") == model.read_bytes()
        dex = z.read("classes.dex")
    for cls in ("org/keyboardlm/demo/KeyboardService", "org/keyboardlm/core/TextField", "org/keyboardlm/core/JavaStepEngine"):
        assert f"L{cls};".encode() in dex, f"{cls} not in classes.dex"
    print(next(line for line in out.splitlines() if line.startswith("[build_apk] built")))
