"""The Java core as an app developer gets it: android_demo/build_core_jar.sh builds the versioned jar,
sources jar and POM (org.keyboardlm:keyboardlm-core, the POM being android_demo/core/pom.xml, which
tests/test_android_maven.py builds with Maven) with the JDK alone, and the embedding sample
(android_demo/samples/EmbeddingSample.java), compiled against that jar and nothing else, runs on a real
model file of the repository.

The sample's first strip is checked against the Python predictor's golden fixture
(tests/golden/predictor_fixture.json) and the history file it saves is read back with the Python
UserHistory. The demo APK's committed model (android_demo/app/src/main/assets/model.tflite: a federated run
from the base with its phrase table) is checked against its recorded sha256, and the jar alone loads it and
fills a strip.
Skipped, with the reason, where the JDK (javac, java, jar) is absent, or no Android API jar is at hand to
compile the jar's InputConnection adapter against (tests/android_api.py says where it is looked for).
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from keyboard_lm.inference.user_history import UserHistory
from tests.android_api import MISSING, android_jar
from tests.conftest import REPO

pytestmark = pytest.mark.heavy  # subprocesses: javac, jar and two JVM runs

DEMO = REPO / "android_demo"
SCRIPT = DEMO / "build_core_jar.sh"
MAIN = DEMO / "core" / "src" / "main" / "java"
ANDROID_SRC = DEMO / "core" / "src" / "android" / "java"
POM_XML = DEMO / "core" / "pom.xml"
VERSION_JAVA = MAIN / "org" / "keyboardlm" / "core" / "Version.java"
SAMPLE = DEMO / "samples" / "EmbeddingSample.java"
MODEL = REPO / "tests" / "golden" / "models" / "cifg_dynamic-range.tflite"
APK_ASSETS = DEMO / "app" / "src" / "main" / "assets"
APK_MODEL = APK_ASSETS / "model.tflite"
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def _need_jdk() -> Path:
    """The Android API jar to build with; skips where it or a JDK tool is missing."""
    missing = [t for t in ("javac", "java", "jar") if not shutil.which(t)]
    if missing:
        pytest.skip(f"no JDK tools {', '.join(missing)} on PATH: the core jar cannot be built here")
    found = android_jar()
    if found is None:
        pytest.skip(MISSING)
    return found


def _version() -> str:
    """pom.xml's version, which Version.java must repeat."""
    version = ET.parse(POM_XML).getroot().findtext("m:version", namespaces=POM_NS)
    found = re.findall(r'^\s*NAME = "([^"]*)";\s*$', VERSION_JAVA.read_text(encoding="utf-8"), re.M)
    assert found == [version], f"Version.java's NAME {found} is not pom.xml's version {version}"
    return version


def _build(script: Path, out: Path, api: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["nice", "-n", "10", "bash", str(script), str(out)], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "KBLM_ANDROID_JAR": str(api)})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The jar, sources jar and POM the script builds (into a temporary directory, not android_demo/build)."""
    api = _need_jdk()
    out = tmp_path_factory.mktemp("core_jar")
    r = _build(SCRIPT, out, api)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    name = f"keyboardlm-core-{_version()}"
    files = {"jar": out / f"{name}.jar", "sources": out / f"{name}-sources.jar", "pom": out / f"{name}.pom"}
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in files.values())
    print(r.stdout.strip())
    return files


def test_the_pom_is_core_pom_xml_and_names_the_version_of_version_java(built):
    version = _version()
    assert re.fullmatch(r"\d+\.\d+\.\d+([-.][0-9A-Za-z.-]+)?", version), version
    assert built["pom"].read_bytes() == POM_XML.read_bytes(), "the script publishes core/pom.xml as it is"
    pom = ET.parse(built["pom"]).getroot()
    coordinates = {k: pom.findtext(f"m:{k}", namespaces=POM_NS) for k in ("groupId", "artifactId", "version", "packaging")}
    assert coordinates == {"groupId": "org.keyboardlm", "artifactId": "keyboardlm-core", "version": version,
                           "packaging": "jar"}
    scopes = [d.findtext("m:scope", namespaces=POM_NS) for d in pom.iterfind("m:dependencies/m:dependency", POM_NS)]
    assert scopes and set(scopes) <= {"provided", "test"}, f"the core depends on nothing at run time: {scopes}"
    with zipfile.ZipFile(built["jar"]) as z:
        assert z.read("META-INF/maven/org.keyboardlm/keyboardlm-core/pom.xml") == built["pom"].read_bytes()
        props = z.read("META-INF/maven/org.keyboardlm/keyboardlm-core/pom.properties").decode()
        manifest = z.read("META-INF/MANIFEST.MF").decode()
        assert z.read("META-INF/LICENSE") == (REPO / "LICENSE").read_bytes()
    assert props.split() == ["groupId=org.keyboardlm", "artifactId=keyboardlm-core", f"version={version}"]
    assert f"Implementation-Version: {version}" in manifest.splitlines()


def test_the_jar_holds_every_core_class_as_java_8_bytecode(built):
    sources = sorted(p.relative_to(root).as_posix() for root in (MAIN, ANDROID_SRC) for p in root.rglob("*.java"))
    assert "org/keyboardlm/core/android/InputConnectionEditor.java" in sources
    with zipfile.ZipFile(built["jar"]) as z:
        classes = {n: z.read(n) for n in z.namelist() if n.endswith(".class")}
    # A package-info.java holding documentation only compiles to no class.
    assert {s[:-len(".java")] + ".class" for s in sources if not s.endswith("/package-info.java")} <= set(classes), \
        "a core source has no class in the jar"
    majors = {name: int.from_bytes(data[6:8], "big") for name, data in classes.items()}
    assert all(data[:4] == b"\xca\xfe\xba\xbe" for data in classes.values())
    assert set(majors.values()) == {52}, {n: m for n, m in majors.items() if m != 52}
    assert not any(n.startswith("org/keyboardlm/core/") and "Test" in n.rsplit("/", 1)[1] for n in classes), \
        "test classes leaked into the jar"
    with zipfile.ZipFile(built["sources"]) as z:
        assert sorted(n for n in z.namelist() if n.endswith(".java")) == sources


def _run_sample(classes: Path, jar: Path, history: Path) -> list[str]:
    r = subprocess.run(["nice", "-n", "10", "java", "-cp", f"{jar}:{classes}", "EmbeddingSample", str(MODEL), str(history)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout.splitlines()


def test_the_embedding_sample_runs_against_the_jar_alone(built, tmp_path):
    classes = tmp_path / "classes"
    c = subprocess.run(["nice", "-n", "10", "javac", "--release", "8", "-cp", str(built["jar"]), "-d", str(classes),
                        str(SAMPLE)], capture_output=True, text=True, timeout=300)
    assert c.returncode == 0, c.stderr[-3000:]
    with zipfile.ZipFile(MODEL) as z:
        vocab = z.read("vocab.txt").decode("utf-8").splitlines()
    fixture = json.loads((REPO / "tests" / "golden" / "predictor_fixture.json").read_text(encoding="utf-8"))
    how_are = next(c for c in fixture["models"][MODEL.name]["contexts"] if c["context"] == "how are")["top_words"]
    history = tmp_path / "history.json"

    first = _run_sample(classes, built["jar"], history)
    print("\n".join(first))
    assert first[:3] == [f"keyboardlm-core {_version()}", "history: 0 words (new)", f"model: {len(vocab)} words"]
    strips = {}
    for line in first[3:-1]:
        m = re.fullmatch(r'(message|search) "([^"]*)" -> (\S+) \| (\S+) \| (\S+)', line)
        assert m, line
        strips[m[1], m[2]] = list(m.groups()[2:])
    assert len(strips) == 10, strips  # a strip after each of the 7 + 3 words typed
    # Nothing was learnt before the first "how are ": the strip is the Python predictor's top 3, best in the middle.
    assert strips["message", "how are "] == [how_are[1], how_are[0], how_are[2]]
    assert all(w in vocab for s in strips.values() for w in s)

    saved = UserHistory.load(str(history))
    assert first[-1] == f"history: {saved.num_words} words saved"
    assert saved.count("you", "are") > 0 and saved.count("like", "i") > 0, "the message field learns"
    assert saved.count("weather") == 0, "the search field is never learnt"

    second = _run_sample(classes, built["jar"], history)
    assert second[1] == f"history: {saved.num_words} words (loaded)"
    assert UserHistory.load(str(history)).count("you", "are") > saved.count("you", "are"), "the history grows"


def _copy_of_the_demo(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The script and what it reads, copied: (script, pom.xml, Version.java) of the copy."""
    demo = tmp_path / "android_demo"
    for src in (MAIN, ANDROID_SRC):
        shutil.copytree(src, demo / src.relative_to(DEMO))
    shutil.copy(POM_XML, demo / "core" / "pom.xml")
    shutil.copy(REPO / "LICENSE", tmp_path / "LICENSE")
    shutil.copy(SCRIPT, demo / SCRIPT.name)
    return demo / SCRIPT.name, demo / "core" / "pom.xml", demo / VERSION_JAVA.relative_to(DEMO)


def _set_version(pom: Path, version_java: Path, pom_version: str, java_version: str) -> None:
    old = _version()
    for path, new, line in ((pom, pom_version, "  <version>{}</version>"), (version_java, java_version, 'NAME = "{}";')):
        text = path.read_text(encoding="utf-8")
        assert text.count(line.format(old)) == 1, path
        path.write_text(text.replace(line.format(old), line.format(new)), encoding="utf-8")


def test_the_version_comes_from_the_pom_and_version_java_must_repeat_it(tmp_path):
    """Changed in pom.xml and Version.java, the version changes the jar, the POM and Version.NAME; a bad or differing one is refused."""
    api = _need_jdk()
    script, pom_xml, version_java = _copy_of_the_demo(tmp_path)
    _set_version(pom_xml, version_java, "7.8.9-rc.1", "7.8.9-rc.1")
    r = _build(script, tmp_path / "out", api)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    jar = tmp_path / "out" / "keyboardlm-core-7.8.9-rc.1.jar"
    pom = ET.parse(tmp_path / "out" / "keyboardlm-core-7.8.9-rc.1.pom").getroot()
    assert pom.findtext("m:version", namespaces=POM_NS) == "7.8.9-rc.1"
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "PrintVersion.java").write_text(
        "public class PrintVersion { public static void main(String[] a) {"
        " System.out.println(org.keyboardlm.core.Version.NAME); } }\n", encoding="utf-8")
    subprocess.run(["javac", "--release", "8", "-cp", str(jar), "-d", str(probe), str(probe / "PrintVersion.java")],
                   check=True, timeout=300)
    out = subprocess.run(["java", "-cp", f"{jar}:{probe}", "PrintVersion"], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "7.8.9-rc.1", out.stderr

    for pom_version, java_version, message in (
            ("latest", "latest", "no version like 1.2.3"),
            ("7.8.10", "7.8.9", "Version.java's NAME is '7.8.9' but pom.xml's version is '7.8.10'")):
        script, pom_xml, version_java = _copy_of_the_demo(tmp_path / pom_version)
        _set_version(pom_xml, version_java, pom_version, java_version)
        bad = tmp_path / pom_version / "out"
        r = _build(script, bad, api)
        assert r.returncode != 0
        assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not bad.exists() or not any(bad.iterdir()), "nothing is written on refusal"


def test_the_apk_model_matches_its_recorded_sha256():
    recorded = (APK_ASSETS / "model.tflite.sha256").read_text(encoding="utf-8").split()
    assert recorded[1:] == ["model.tflite"], recorded
    assert hashlib.sha256(APK_MODEL.read_bytes()).hexdigest() == recorded[0], \
        "assets/model.tflite changed without its sha256 (see android_demo/app/src/main/assets/README.md)"
    with zipfile.ZipFile(APK_MODEL) as z:
        meta = json.loads(z.read("keyboard_lm.json"))
        table = z.read("phrases.bin")
    assert meta["model"]["model_type"] == "cifg" and meta["model"]["units"] == 670
    assert meta["quantization"] == "dynamic-range" and APK_MODEL.stat().st_size <= 1468006, "over the 1.4 MiB budget"
    # The whole stack: the model and its federated phrase table, the table recorded with its digest
    assert meta["phrases"]["sha256"] == hashlib.sha256(table).hexdigest() and meta["phrases"]["contexts"] > 0
    assert meta["phrases"]["discovery"]["k_anonymity"] >= 5
    card = json.loads((APK_ASSETS / "model.tflite.card.json").read_text(encoding="utf-8"))
    assert card["sha256"] == recorded[0] and card["training"]["init_from"]["name"] == "base"


def test_the_apk_model_loads_in_the_jar_and_fills_a_strip_with_real_words(built, tmp_path):
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "Strip.java").write_text(
        "import java.util.Collections;\n"
        "import org.keyboardlm.core.*;\n"
        "public class Strip { public static void main(String[] a) throws Exception {\n"
        "  try (Predictor p = new Predictor(ModelFile.load(a[0]), Collections.<String>emptyList())) {\n"
        "    for (String w : new TextField(p).update(a[1]).slots()) System.out.println(w);\n"
        "  } } }\n", encoding="utf-8")
    c = subprocess.run(["nice", "-n", "10", "javac", "--release", "8", "-cp", str(built["jar"]), "-d", str(probe),
                        str(probe / "Strip.java")], capture_output=True, text=True, timeout=300)
    assert c.returncode == 0, c.stderr[-3000:]
    r = subprocess.run(["nice", "-n", "10", "java", "-cp", f"{built['jar']}:{probe}", "Strip", str(APK_MODEL),
                        "see you at the "], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    strip = r.stdout.split()
    print("see you at the ->", " | ".join(strip))
    with zipfile.ZipFile(APK_MODEL) as z:
        vocab = z.read("vocab.txt").decode("utf-8").splitlines()
    # Three different words of the model's own vocabulary, not special tokens or punctuation; which ones is the model's say.
    assert len(strip) == 3 and len(set(strip)) == 3, strip
    assert all(w in vocab[4:] and re.fullmatch(r"[a-z][a-z']*", w) for w in strip), strip
