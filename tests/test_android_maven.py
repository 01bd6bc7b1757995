"""The core's Maven build (android_demo/core/pom.xml) and what it publishes.

Without Maven: the repository's LICENSE is the Apache-2.0 text the POM and pyproject.toml declare; the
POM carries what a public repository asks of an artifact (name, description, url, licenses, scm,
developers), pins every plugin, compiles for Java 8 and runs every JUnit class with every system
property a test reads; core/build.gradle follows it; src/main/java imports nothing from Android.

With Maven (heavy tests): `mvn -o verify` runs offline, every JUnit test passes (the text-spec and
model-archive tests that read the golden files among them), and the jar, sources jar and Javadoc jar
are made. It never downloads: it skips, saying so, where `mvn` is absent or the local Maven repository
(~/.m2) lacks a plugin or dependency (one online `mvn -f android_demo/core/pom.xml verify` fetches them).
`mvn install` and `mvn deploy` (android_demo/EMBEDDING.md) are not run here: the one writes into the
user's ~/.m2, and Maven refuses to deploy offline, even to a file repository.
"""

import re
import shutil
import subprocess
import tomllib
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

CORE = REPO / "android_demo" / "core"
POM_XML = CORE / "pom.xml"
NS = {"m": "http://maven.apache.org/POM/4.0.0"}
# What Maven says when -o meets an artifact it never downloaded (its message names no host we match on).
OFFLINE_MISSING = re.compile(r"[^\n]*offline mode[^\n]*")


def _pom() -> ET.Element:
    return ET.parse(POM_XML).getroot()


def _text(element: ET.Element, path: str) -> str:
    return (element.findtext(path, namespaces=NS) or "").strip()


def _plugins(pom: ET.Element) -> list[ET.Element]:
    return pom.findall(".//m:plugins/m:plugin", NS)


def _surefire_properties(pom: ET.Element) -> dict[str, str]:
    surefire = next(p for p in _plugins(pom) if _text(p, "m:artifactId") == "maven-surefire-plugin"
                    and p.find("m:configuration", NS) is not None)
    props = surefire.find("m:configuration/m:systemPropertyVariables", NS)
    return {child.tag.split("}")[1]: (child.text or "").strip() for child in props}


def test_the_license_is_the_apache_2_text_the_pom_and_pyproject_declare():
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.split()[:5] == ["Apache", "License", "Version", "2.0,", "January"], text[:200]
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in text and "END OF TERMS AND CONDITIONS" in text
    assert len(text.split()) > 1500, "the full license text, not a notice"
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert pyproject["license"] == {"text": "Apache-2.0"}
    assert [_text(lic, "m:name") for lic in _pom().iterfind("m:licenses/m:license", NS)] == ["Apache-2.0"]


def test_the_pom_has_what_a_public_maven_repository_asks_for():
    pom = _pom()
    for field in ("groupId", "artifactId", "version", "name", "description", "url", "licenses/m:license/m:url",
                  "scm/m:connection", "scm/m:url", "developers/m:developer/m:name"):
        assert _text(pom, f"m:{field}"), f"pom.xml has no {field}"
    assert (_text(pom, "m:groupId"), _text(pom, "m:artifactId"), _text(pom, "m:packaging")) == \
        ("org.keyboardlm", "keyboardlm-core", "jar")
    assert _text(pom, "m:properties/m:maven.compiler.release") == "8"
    unpinned = [_text(p, "m:artifactId") for p in _plugins(pom)
                if not _text(p, "m:version") and not any(_text(q, "m:artifactId") == _text(p, "m:artifactId")
                                                         and _text(q, "m:version") for q in _plugins(pom))]
    assert not unpinned, f"plugins without a pinned version (an offline build needs the ones fetched): {unpinned}"
    pinned = {_text(p, "m:artifactId") for p in _plugins(pom) if _text(p, "m:version")}
    lifecycle = {f"maven-{name}-plugin" for name in ("clean", "resources", "compiler", "surefire", "jar", "source",
                                                     "javadoc", "install", "deploy")}
    assert lifecycle <= pinned, f"Maven would pick these plugins' versions itself: {sorted(lifecycle - pinned)}"
    scopes = {_text(d, "m:artifactId"): _text(d, "m:scope") for d in pom.iterfind("m:dependencies/m:dependency", NS)}
    assert scopes == {"android": "provided", "junit": "test"}, "the core needs nothing at run time"


def test_surefire_runs_every_junit_class_with_every_property_the_tests_read():
    pom_text = POM_XML.read_text(encoding="utf-8")
    for word in ("<exclude", "<skipTests", "<testFailureIgnore", "<skip>"):
        assert word not in pom_text, f"pom.xml: {word} leaves JUnit tests out"
    given = _surefire_properties(_pom())
    sources = "\n".join(p.read_text(encoding="utf-8") for p in (CORE / "src" / "test" / "java").rglob("*.java"))
    read = set(re.findall(r'"(kblm\.[A-Za-z0-9_.]+)"', sources))
    # kblm.traces: full-distribution traces only tests/test_android_core.py can write (Python's TFLite runtime).
    assert read - {"kblm.traces"} <= set(given), f"pom.xml does not pass {sorted(read - {'kblm.traces'} - set(given))}"
    assert "kblm.textspec" in given and given["kblm.version"] == "${project.version}"
    for name, value in given.items():
        if "/" in value:
            path = Path(value.replace("${kblm.golden}", "${project.basedir}/../../tests/golden")
                        .replace("${project.basedir}", str(CORE)))
            assert path.exists(), f"pom.xml: {name} names {value}, which does not exist"


def test_gradle_follows_the_pom():
    gradle = (CORE / "build.gradle").read_text(encoding="utf-8")
    assert "XmlSlurper().parse(file('pom.xml'))" in gradle and "version = pom.version.text()" in gradle
    assert gradle.count("JavaVersion.VERSION_1_8") == 2 and "'src/android/java'" in gradle
    for dep in _pom().iterfind("m:dependencies/m:dependency", NS):
        coordinates = f"{_text(dep, 'm:groupId')}:{_text(dep, 'm:artifactId')}:{_text(dep, 'm:version')}"
        assert f"'{coordinates}'" in gradle, f"core/build.gradle lacks {coordinates}"
    assert "withSourcesJar()" in gradle and "withJavadocJar()" in gradle


def test_only_the_android_source_root_uses_android():
    main = CORE / "src" / "main" / "java"
    leaks = [p.relative_to(main).as_posix() for p in main.rglob("*.java")
             if re.search(r"^import android\.", p.read_text(encoding="utf-8"), re.M)]
    assert not leaks, f"the core imports Android: {leaks}"
    android = CORE / "src" / "android" / "java"
    assert sorted(p.relative_to(android).as_posix() for p in android.rglob("*.java")) == \
        ["org/keyboardlm/core/android/InputConnectionEditor.java", "org/keyboardlm/core/android/package-info.java"]


def _class_major(data: bytes) -> int:
    assert data[:4] == b"\xca\xfe\xba\xbe"
    return int.from_bytes(data[6:8], "big")


@pytest.fixture(scope="module")
def maven(tmp_path_factory):
    """One offline `mvn verify`, building into a temporary directory: (its build directory, the version)."""
    mvn = shutil.which("mvn")
    if not mvn:
        pytest.skip("no mvn on PATH: the Maven build of the core cannot run here")
    target = tmp_path_factory.mktemp("maven") / "target"
    r = subprocess.run(["nice", "-n", "10", mvn, "-o", "-B", "-q", "-f", str(POM_XML), "verify",
                        f"-Dkblm.buildDirectory={target}"], capture_output=True, text=True, timeout=1200)
    out = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout + r.stderr)
    missing = OFFLINE_MISSING.search(out)
    if r.returncode != 0 and missing:
        pytest.skip("the local Maven repository lacks what the build needs and this test never downloads "
                    f"({missing[0].split(': Cannot access')[0].strip()[:200]}): run `mvn -f android_demo/core/pom.xml "
                    "verify` once online")
    assert r.returncode == 0, out[-6000:]
    return target, _text(_pom(), "m:version")


@pytest.mark.heavy
def test_maven_verify_runs_every_junit_test_offline_and_passes(maven):
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    ran = {}
    target, _ = maven
    for report in (target / "surefire-reports").glob("TEST-*.xml"):
        suite = ET.parse(report).getroot()
        for key in totals:
            totals[key] += int(suite.get(key, 0))
        ran[suite.get("name").rsplit(".", 1)[1]] = int(suite.get("tests")) - int(suite.get("skipped", 0))
    print(f"Surefire: {totals}")
    classes = {p.stem for p in (CORE / "src" / "test" / "java").rglob("*Test.java")}
    assert set(ran) == classes, f"JUnit classes Surefire did not run: {sorted(classes - set(ran))}"
    assert totals["failures"] == totals["errors"] == 0 and totals["tests"] > 150, totals
    for name in ("TextSpecTest", "ModelArchiveTest", "ModelFileTest", "VersionTest", "PredictorGoldenTest"):
        assert ran[name] > 0, f"{name} was skipped"
    assert totals["skipped"] <= 1, "only StepEngineTraceTest may skip (its traces need Python's TFLite runtime)"


@pytest.mark.heavy
def test_maven_makes_the_jar_the_sources_jar_and_the_javadoc_jar(maven):
    target, version = maven
    jar, sources, javadoc = (target / f"keyboardlm-core-{version}{suffix}.jar" for suffix in ("", "-sources", "-javadoc"))
    with zipfile.ZipFile(jar) as z:
        classes = {n: z.read(n) for n in z.namelist() if n.endswith(".class")}
        assert z.read("META-INF/maven/org.keyboardlm/keyboardlm-core/pom.xml") == POM_XML.read_bytes()
        assert z.read("META-INF/LICENSE") == (REPO / "LICENSE").read_bytes()
        assert f"Implementation-Version: {version}" in z.read("META-INF/MANIFEST.MF").decode().splitlines()
    assert {"org/keyboardlm/core/InputLogic.class", "org/keyboardlm/core/android/InputConnectionEditor.class"} <= set(classes)
    assert {_class_major(d) for d in classes.values()} == {52}, "Java 8 bytecode"
    assert not any(n.rsplit("/", 1)[1].endswith("Test.class") for n in classes), "test classes leaked into the jar"
    with zipfile.ZipFile(sources) as z:
        assert "org/keyboardlm/core/android/InputConnectionEditor.java" in z.namelist()
    with zipfile.ZipFile(javadoc) as z:
        pages = set(z.namelist())
    for page in ("index.html", "org/keyboardlm/core/package-summary.html", "org/keyboardlm/core/InputLogic.html",
                 "org/keyboardlm/core/HistoryStore.html", "org/keyboardlm/core/android/InputConnectionEditor.html"):
        assert page in pages, f"the Javadoc jar has no {page}"
