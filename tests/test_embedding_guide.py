"""android_demo/EMBEDDING.md teaches code that compiles, and runs, against the core as it is.

Every ```java block of the guide is a whole source file, compiled here with the host javac
(--release 8): the plain-Java blocks against the core's sources alone (core/src/main/java), the
Android blocks against the core, its Android adapter (core/src/android/java) and Android's API as a
jar (tests/android_api.py says where it is looked for; the Android test skips, saying so, where none
is at hand: nothing is downloaded and no Android class is stubbed). The plain-Java block TextBoxStrip
runs on a golden model with a damaged history file: the damaged file is kept, and only the typed words
are learnt. Without compiling anything: the guide's table of the public API names every public class
of the core once, as package-info.java does, and the versions it quotes are pom.xml's.
"""

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from keyboard_lm.inference.user_history import UserHistory
from tests.android_api import MISSING, android_jar
from tests.conftest import REPO

GUIDE = REPO / "android_demo" / "EMBEDDING.md"
CORE = REPO / "android_demo" / "core"
MAIN = CORE / "src" / "main" / "java"
ANDROID_SRC = CORE / "src" / "android" / "java"
MODEL = REPO / "tests" / "golden" / "models" / "cifg_dynamic-range.tflite"
TOP_LEVEL_TYPE = re.compile(r"^(?:public\s+)?(?:final\s+|abstract\s+)*(?:class|interface)\s+(\w+)", re.M)


def _java_blocks() -> dict[str, str]:
    """{type name: source} of every ```java block, each a whole source file named for its top-level type."""
    blocks = re.findall(r"^```java\n(.*?)^```$", GUIDE.read_text(encoding="utf-8"), re.M | re.S)
    sources = {}
    for block in blocks:
        names = TOP_LEVEL_TYPE.findall(block)
        assert len(names) == 1, f"a ```java block of EMBEDDING.md is not one whole source file: {block[:200]}"
        assert names[0] not in sources, f"two blocks define {names[0]}"
        sources[names[0]] = block
    return sources


def _uses_android(source: str) -> bool:
    return re.search(r"^import android\.", source, re.M) is not None


def _write(sources: dict[str, str], folder: Path) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in sources.items():
        (folder / f"{name}.java").write_text(source, encoding="utf-8")
    return [str(folder / f"{name}.java") for name in sources]


def _javac(classpath: list[Path], out: Path, files: list[str]) -> None:
    r = subprocess.run(["nice", "-n", "10", "javac", "--release", "8", "-encoding", "UTF-8", "-nowarn",
                        "-cp", ":".join(map(str, classpath)), "-d", str(out), *files],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, "javac failed:\n" + r.stderr[-4000:]


def _public_types(root: Path) -> set[str]:
    return {m for p in root.rglob("*.java") for m in re.findall(r"^public\s+(?:final\s+|abstract\s+)*(?:class|interface)\s+(\w+)",
                                                                   p.read_text(encoding="utf-8"), re.M)}


def test_every_java_block_is_a_whole_source_file_for_a_plain_or_an_android_build():
    sources = _java_blocks()
    android = {name for name, source in sources.items() if _uses_android(source)}
    assert {"ModelAssets", "History", "PredictingKeyboard"} <= android, sorted(android)
    assert "TextBoxStrip" in set(sources) - android
    keyboard = sources["PredictingKeyboard"]
    for used in ("InputLogic", "StripRanker", "HistoryStore", "IdleSaver", "InputConnectionEditor", "onStartInput("):
        assert used in keyboard, f"the service block does not use {used}"


def test_the_api_table_lists_every_public_class_once_as_the_package_documentation_does():
    guide = GUIDE.read_text(encoding="utf-8")
    rows = {m[0]: re.findall(r"`(\w+)`", m[1]) for m in re.findall(r"^\| \*\*(Public [^*]+)\*\*[^|]*\| (.*) \|$", guide, re.M)}
    assert set(rows) == {"Public API", "Public for tools and tests"}, rows
    api, internal = rows["Public API"], rows["Public for tools and tests"]
    info = (MAIN / "org" / "keyboardlm" / "core" / "package-info.java").read_text(encoding="utf-8")
    api_paragraph, internal_paragraph = info.split("<p>The other public classes")
    documented_api = re.findall(r"org\.keyboardlm\.core\.(?:android\.)?(\w+)[}]", api_paragraph.split("<h2>Public API")[1])
    documented_internal = re.findall(r"org\.keyboardlm\.core\.(\w+)[}]", internal_paragraph.split("<h2>Null")[0])
    assert sorted(api) == sorted(documented_api) and sorted(internal) == sorted(documented_internal), \
        "EMBEDDING.md's table and package-info.java list different classes"
    public = _public_types(MAIN) | _public_types(ANDROID_SRC)
    assert sorted(api + internal) == sorted(public), \
        f"public classes missing from the table: {sorted(public - set(api + internal))}; " \
        f"not public or listed twice: {sorted(c for c in api + internal if c not in public or (api + internal).count(c) > 1)}"


def test_the_guide_quotes_the_pom_version_and_no_stale_claim():
    guide = GUIDE.read_text(encoding="utf-8")
    version = ET.parse(CORE / "pom.xml").getroot().findtext("{http://maven.apache.org/POM/4.0.0}version")
    quoted = set(re.findall(r"keyboardlm-core:(\d[\w.-]*)'", guide)) | set(re.findall(r"<version>([^<]+)</version>", guide))
    quoted |= set(re.findall(r"^    keyboardlm-core (\d\S*)$", guide, re.M))
    assert quoted == {version}, quoted
    assert "no Gradle or Maven build" not in guide and "could reach" not in guide
    assert "field.update(text)" not in guide, "the guide must say whether the keyboard typed the text"


@pytest.fixture(scope="module")
def core_classes(tmp_path_factory) -> Path:
    """The core (src/main/java) compiled once by the host javac."""
    if not shutil.which("javac") or not shutil.which("java"):
        pytest.skip("no JDK (javac, java) on PATH: the guide's Java cannot be compiled here")
    out = tmp_path_factory.mktemp("core") / "classes"
    _javac([], out, sorted(str(p) for p in MAIN.rglob("*.java")))
    return out


@pytest.mark.heavy
def test_the_plain_java_blocks_compile_and_the_text_box_learns_only_what_was_typed(core_classes, tmp_path):
    plain = {name: source for name, source in _java_blocks().items() if not _uses_android(source)}
    classes = tmp_path / "classes"
    _javac([core_classes], classes, _write(plain, tmp_path / "src"))

    folder = tmp_path / "user"
    folder.mkdir()
    history = folder / "history.json"
    damaged = b'{"format": "keyboard_lm.user_history", "version": 1, "words": {"how": '
    history.write_bytes(damaged)
    r = subprocess.run(["nice", "-n", "10", "java", "-cp", f"{core_classes}:{classes}", "TextBoxStrip", str(MODEL),
                        str(history)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    print(r.stdout)
    lines = r.stdout.splitlines()
    kept = [p for p in folder.rglob("*") if p.is_file() and p != history and p.read_bytes() == damaged]  # in the quarantine
    assert len(kept) == 1, f"the damaged history was not kept aside: {sorted(p.name for p in folder.iterdir())}"
    assert lines[0].startswith("notice: ") and kept[0].name in lines[0], lines[0]
    strips = [line for line in lines[1:] if line.startswith('"')]
    assert [s.split(" -> ")[0] for s in strips] == [f'"thank you weather forecast {t}"' for t in ("how ", "how are ",
                                                                                             "how are you ")]
    saved = UserHistory.load(str(history))
    assert saved.count("how") > 0 and saved.count("are") > 0, "typed words are learnt"
    assert saved.count("thank") == saved.count("weather") == saved.count("forecast") == 0, \
        "the text the box opened with and the pasted text are never learnt"


@pytest.mark.heavy
def test_the_android_blocks_compile_against_the_core_and_androids_api(core_classes, tmp_path):
    api = android_jar()
    if api is None:
        pytest.skip(MISSING)
    blocks = {name: source for name, source in _java_blocks().items() if _uses_android(source)}
    adapter = sorted(str(p) for p in ANDROID_SRC.rglob("*.java"))
    _javac([core_classes, api], tmp_path / "classes", adapter + _write(blocks, tmp_path / "src"))
    print(f"compiled {sorted(blocks)} against {api.name}")
