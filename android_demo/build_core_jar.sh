#!/usr/bin/env bash
# Build the Java core as a versioned Maven artifact, offline, with the JDK's javac and jar only:
#
#   android_demo/build_core_jar.sh [OUT_DIR]      # default android_demo/build (git-ignored)
#
#   -> OUT_DIR/keyboardlm-core-VERSION.jar           classes, Java 8 bytecode (javac --release 8)
#      OUT_DIR/keyboardlm-core-VERSION-sources.jar   the sources
#      OUT_DIR/keyboardlm-core-VERSION.pom           org.keyboardlm:keyboardlm-core:VERSION, no dependencies
#
# VERSION is written in one place, core/src/main/java/org/keyboardlm/core/Version.java (NAME),
# which the code also reads at run time (org.keyboardlm.core.Version.NAME). The jar's manifest
# carries it too (Implementation-Version), and META-INF/maven/... holds the POM, as Maven's
# own jars do. Only the three files above are written into OUT_DIR; nothing is downloaded.
# To use the jar from Maven or Gradle, see android_demo/EMBEDDING.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/core/src/main/java"
OUT="$(realpath -m "${1:-$HERE/build}")"
GROUP_ID=org.keyboardlm
ARTIFACT_ID=keyboardlm-core

say() { printf '[build_core_jar] %s\n' "$*"; }
die() { printf '[build_core_jar] error: %s\n' "$*" >&2; exit 1; }

command -v javac >/dev/null && command -v jar >/dev/null || die "a JDK (javac, jar) is needed on PATH"
VERSION_JAVA="$SRC/org/keyboardlm/core/Version.java"
VERSION="$(sed -n 's/^[[:space:]]*NAME = "\([^"]*\)";[[:space:]]*$/\1/p' "$VERSION_JAVA")"
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+([-.][0-9A-Za-z.-]+)?$ ]] \
    || die "no version like 1.2.3 on a 'NAME = \"...\";' line of $VERSION_JAVA (found '${VERSION}')"
grep -q "GROUP_ID = \"$GROUP_ID\"" "$VERSION_JAVA" && grep -q "ARTIFACT_ID = \"$ARTIFACT_ID\"" "$VERSION_JAVA" \
    || die "Version.java's GROUP_ID/ARTIFACT_ID differ from $GROUP_ID:$ARTIFACT_ID"

NAME="$ARTIFACT_ID-$VERSION"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/classes/META-INF/maven/$GROUP_ID/$ARTIFACT_ID" "$OUT"

# --- POM ---------------------------------------------------------------------------------------
POM="$WORK/classes/META-INF/maven/$GROUP_ID/$ARTIFACT_ID/pom.xml"
cat > "$POM" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>$GROUP_ID</groupId>
  <artifactId>$ARTIFACT_ID</artifactId>
  <version>$VERSION</version>
  <packaging>jar</packaging>
  <name>keyboard_lm core</name>
  <description>On-device next-word prediction for keyboards: loads a model exported by keyboard-lm export
    and ranks suggestions in plain Java 8 (no Android or TFLite dependency).</description>
  <licenses>
    <license>
      <name>Apache-2.0</name>
    </license>
  </licenses>
  <properties>
    <maven.compiler.release>8</maven.compiler.release>
  </properties>
</project>
EOF
printf 'groupId=%s\nartifactId=%s\nversion=%s\n' "$GROUP_ID" "$ARTIFACT_ID" "$VERSION" \
    > "$WORK/classes/META-INF/maven/$GROUP_ID/$ARTIFACT_ID/pom.properties"

# --- classes -----------------------------------------------------------------------------------
find "$SRC" -name '*.java' | LC_ALL=C sort > "$WORK/sources.txt"
javac --release 8 -encoding UTF-8 -nowarn -d "$WORK/classes" "@$WORK/sources.txt"
say "javac --release 8: $(wc -l < "$WORK/sources.txt") sources -> $(find "$WORK/classes" -name '*.class' | wc -l) classes"

cat > "$WORK/manifest.txt" <<EOF
Implementation-Title: $ARTIFACT_ID
Implementation-Version: $VERSION
Implementation-Vendor-Id: $GROUP_ID
Automatic-Module-Name: org.keyboardlm.core
EOF

# --- jars and POM into OUT ---------------------------------------------------------------------
rm -f "$OUT/$NAME.jar" "$OUT/$NAME-sources.jar" "$OUT/$NAME.pom"
jar --create --file "$OUT/$NAME.jar" --manifest "$WORK/manifest.txt" -C "$WORK/classes" .
jar --create --file "$OUT/$NAME-sources.jar" --manifest "$WORK/manifest.txt" -C "$SRC" .
cp "$POM" "$OUT/$NAME.pom"
say "built $GROUP_ID:$ARTIFACT_ID:$VERSION in $OUT:"
for f in "$NAME.jar" "$NAME-sources.jar" "$NAME.pom"; do say "  $f ($(wc -c < "$OUT/$f") bytes)"; done
