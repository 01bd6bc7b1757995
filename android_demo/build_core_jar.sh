#!/usr/bin/env bash
# Build the Java core as its Maven artifact with the JDK's javac and jar alone, offline:
#
#   android_demo/build_core_jar.sh [OUT_DIR]      # default android_demo/build (git-ignored)
#
#   -> OUT_DIR/keyboardlm-core-VERSION.jar           classes, Java 8 bytecode (javac --release 8)
#      OUT_DIR/keyboardlm-core-VERSION-sources.jar   the sources
#      OUT_DIR/keyboardlm-core-VERSION.pom           core/pom.xml, as Maven publishes it
#
# The standard build is Maven's (mvn -f android_demo/core/pom.xml verify, which also runs the JUnit
# suite and makes the Javadoc jar); this script makes the same jar and sources jar where Maven or
# its local repository is not at hand. The coordinates are core/pom.xml's; the version is also
# written in core/src/main/java/org/keyboardlm/core/Version.java (NAME), which the code reports at
# run time, and the script refuses to build when the two differ. The jar's manifest carries the
# version too (Implementation-Version), META-INF/maven/... holds the POM, as Maven's own jars do, and
# META-INF/LICENSE the repository's license.
#
# core/src/android/java (InputConnectionEditor) compiles against Android's API, found in this order:
# KBLM_ANDROID_JAR; the com.google.android:android:4.1.1.4 jar in the local Maven repository (where
# a Maven build of the core put it; MAVEN_REPO_LOCAL, default ~/.m2/repository); the API 23
# android.jar that build_apk.sh unpacks under android_demo/build/tools. Only the three files above
# are written into OUT_DIR; nothing is downloaded. To use the jar, see android_demo/EMBEDDING.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/core/src/main/java"
ANDROID_SRC="$HERE/core/src/android/java"
POM_XML="$HERE/core/pom.xml"
LICENSE="$(dirname "$HERE")/LICENSE"
OUT="$(realpath -m "${1:-$HERE/build}")"
GROUP_ID=org.keyboardlm
ARTIFACT_ID=keyboardlm-core

say() { printf '[build_core_jar] %s\n' "$*"; }
die() { printf '[build_core_jar] error: %s\n' "$*" >&2; exit 1; }

command -v javac >/dev/null && command -v jar >/dev/null || die "a JDK (javac, jar) is needed on PATH"
[ -f "$LICENSE" ] || die "no LICENSE at the repository root ($LICENSE)"

# The project's own coordinates: the first groupId, artifactId and version of the POM (its
# dependencies and plugins come after them).
pom_value() { sed -n "s|^[[:space:]]*<$1>\([^<]*\)</$1>[[:space:]]*$|\1|p" "$POM_XML" | head -n 1; }
[ "$(pom_value groupId):$(pom_value artifactId)" = "$GROUP_ID:$ARTIFACT_ID" ] \
    || die "$POM_XML is not $GROUP_ID:$ARTIFACT_ID (found $(pom_value groupId):$(pom_value artifactId))"
VERSION="$(pom_value version)"
[[ "$VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+([-.][0-9A-Za-z.-]+)?$ ]] \
    || die "no version like 1.2.3 in $POM_XML (found '${VERSION}')"
VERSION_JAVA="$SRC/org/keyboardlm/core/Version.java"
NAME_IN_JAVA="$(sed -n 's/^[[:space:]]*NAME = "\([^"]*\)";[[:space:]]*$/\1/p' "$VERSION_JAVA")"
[ "$NAME_IN_JAVA" = "$VERSION" ] \
    || die "Version.java's NAME is '$NAME_IN_JAVA' but pom.xml's version is '$VERSION': write the same version in both"
grep -q "GROUP_ID = \"$GROUP_ID\"" "$VERSION_JAVA" && grep -q "ARTIFACT_ID = \"$ARTIFACT_ID\"" "$VERSION_JAVA" \
    || die "Version.java's GROUP_ID/ARTIFACT_ID differ from $GROUP_ID:$ARTIFACT_ID"

ANDROID_JAR=""
for candidate in "${KBLM_ANDROID_JAR:-}" \
        "${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}/com/google/android/android/4.1.1.4/android-4.1.1.4.jar" \
        "$HERE/build/tools/usr/share/java/com.android.android-23.jar"; do
    if [ -n "$candidate" ] && [ -f "$candidate" ]; then ANDROID_JAR="$candidate"; break; fi
done
[ -z "${KBLM_ANDROID_JAR:-}" ] || [ "$ANDROID_JAR" = "$KBLM_ANDROID_JAR" ] || die "KBLM_ANDROID_JAR=$KBLM_ANDROID_JAR: no such file"
[ -n "$ANDROID_JAR" ] || die "no Android API jar to compile core/src/android/java against: set KBLM_ANDROID_JAR, \
or run a Maven build of the core once (it fetches com.google.android:android:4.1.1.4), or build_apk.sh (API 23)"

NAME="$ARTIFACT_ID-$VERSION"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
MAVEN_META="$WORK/classes/META-INF/maven/$GROUP_ID/$ARTIFACT_ID"
mkdir -p "$MAVEN_META" "$WORK/sources/META-INF" "$OUT"

# --- POM and license -----------------------------------------------------------------------------
cp "$POM_XML" "$MAVEN_META/pom.xml"
printf 'groupId=%s\nartifactId=%s\nversion=%s\n' "$GROUP_ID" "$ARTIFACT_ID" "$VERSION" > "$MAVEN_META/pom.properties"
cp "$LICENSE" "$WORK/classes/META-INF/LICENSE"
cp "$LICENSE" "$WORK/sources/META-INF/LICENSE"

# --- classes -----------------------------------------------------------------------------------
find "$SRC" -name '*.java' | LC_ALL=C sort > "$WORK/sources.txt"
find "$ANDROID_SRC" -name '*.java' | LC_ALL=C sort > "$WORK/android-sources.txt"
javac --release 8 -encoding UTF-8 -nowarn -d "$WORK/classes" "@$WORK/sources.txt"
# Android's API only as a compile-time classpath: the phone provides it, the jar does not carry it.
javac --release 8 -encoding UTF-8 -nowarn -cp "$WORK/classes:$ANDROID_JAR" -d "$WORK/classes" "@$WORK/android-sources.txt"
say "javac --release 8: $(cat "$WORK/sources.txt" "$WORK/android-sources.txt" | wc -l) sources -> $(find "$WORK/classes" -name '*.class' | wc -l) classes (Android API: $(basename "$ANDROID_JAR"))"

cat > "$WORK/manifest.txt" <<EOF
Implementation-Title: $ARTIFACT_ID
Implementation-Version: $VERSION
Implementation-Vendor-Id: $GROUP_ID
Automatic-Module-Name: org.keyboardlm.core
EOF

# --- jars and POM into OUT ---------------------------------------------------------------------
cp -r "$SRC/." "$ANDROID_SRC/." "$WORK/sources/"
rm -f "$OUT/$NAME.jar" "$OUT/$NAME-sources.jar" "$OUT/$NAME.pom"
jar --create --file "$OUT/$NAME.jar" --manifest "$WORK/manifest.txt" -C "$WORK/classes" .
jar --create --file "$OUT/$NAME-sources.jar" --manifest "$WORK/manifest.txt" -C "$WORK/sources" .
cp "$POM_XML" "$OUT/$NAME.pom"
say "built $GROUP_ID:$ARTIFACT_ID:$VERSION in $OUT:"
for f in "$NAME.jar" "$NAME-sources.jar" "$NAME.pom"; do say "  $f ($(wc -c < "$OUT/$f") bytes)"; done
