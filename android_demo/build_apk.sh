#!/usr/bin/env bash
# Build, sign and verify the demo keyboard's debug APK offline, without Gradle:
#
#   sudo android_demo/build_apk.sh [MODEL.tflite]      # -> android_demo/build/keyboard_lm-demo-debug.apk
#
# Tools, all from Debian and nothing else:
#   bookworm (this machine's suite): aapt, zipalign, apksigner  - installed with apt-get
#   bullseye (same archive, older suite): libandroid-23-java (android.jar, API 23) and
#     dalvik-exchange (the dx dexer)  - downloaded through a private apt configuration in a
#     temporary directory and unpacked into android_demo/build/tools/, never installed
# The archive's address is read from this machine's /etc/apt/sources.list*; none is written here.
#
# Steps: aapt package (manifest, res/, assets/model.tflite -> R.java + resources APK)
#   -> javac -source 8 -target 8 against android.jar (core + app; Java 8 bytecode, no lambdas,
#      as dx needs) -> dx --dex -> aapt add classes.dex -> zipalign -> apksigner sign with a
#   debug key (generated once with keytool) -> apksigner verify, aapt dump badging.
#
# MODEL defaults to app/src/main/assets/model.tflite, the paper-size model with its phrase table
# exported from a federated run from the base, committed with its sha256 (app/src/main/assets/README.md
# says how it was made), which is checked before use; any .tflite from `keyboard-lm export` works.
# Root is needed only while tools are missing.
# Environment: KBLM_APK_BUILD (output directory, default android_demo/build), KBLM_ANDROID_TOOLS
# (unpacked bullseye packages, default $KBLM_APK_BUILD/tools), KBLM_NO_FETCH=1 (fail rather than
# install or download anything; tests/test_android_core.py sets it).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(dirname "$HERE")"
BUILD="${KBLM_APK_BUILD:-$HERE/build}"
TOOLS="${KBLM_ANDROID_TOOLS:-$BUILD/tools}"
OUT="$BUILD/apk"
APK="$BUILD/keyboard_lm-demo-debug.apk"
DEFAULT_MODEL="$HERE/app/src/main/assets/model.tflite"
MODEL="${1:-$DEFAULT_MODEL}"
BUILD="$(realpath -m "$BUILD")"; TOOLS="$(realpath -m "$TOOLS")"; MODEL="$(realpath -m "$MODEL")"
BULLSEYE_PACKAGES=(libandroid-23-java dalvik-exchange)
# The target SDK: the highest this toolchain can give without weakening the app. Android 14 refuses
# to install targets below 23 and Android 15 reportedly below 24. From 31 on, allowBackup="false"
# no longer keeps the history out of device-to-device transfers; only android:dataExtractionRules
# does, and aapt cannot compile that attribute against API 23's android.jar (it is dropped below).
# So 30. The code is compiled against API 23, so it calls nothing newer; README.md ("Target SDK")
# lists the behaviour changes of 24-30 reviewed against the app's code (not run on a device).
TARGET_SDK=30
BOOKWORM_PACKAGES=(aapt zipalign apksigner)
ANDROID_JAR="$TOOLS/usr/share/java/com.android.android-23.jar"
DX_JAR="$TOOLS/usr/share/java/com.android.dx-10.0.0.jar"

say() { printf '[build_apk] %s\n' "$*"; }
die() { printf '[build_apk] error: %s\n' "$*" >&2; exit 1; }

[ -f "$MODEL" ] || die "model $MODEL not found (give a .tflite written by keyboard-lm export)"
if [ "$MODEL" = "$(realpath -m "$DEFAULT_MODEL")" ]; then
    (cd "$(dirname "$MODEL")" && sha256sum --quiet -c model.tflite.sha256) \
        || die "$MODEL does not match model.tflite.sha256 beside it (re-export it as app/src/main/assets/README.md says, or give a model)"
fi
command -v javac >/dev/null && command -v java >/dev/null && command -v keytool >/dev/null \
    || die "a JDK (javac, java, keytool) is needed on PATH"

# --- tools --------------------------------------------------------------------------------
need_apt=()
for tool in aapt zipalign apksigner; do command -v "$tool" >/dev/null || need_apt+=("$tool"); done
need_private=0
[ -f "$ANDROID_JAR" ] && [ -f "$DX_JAR" ] || need_private=1

if [ ${#need_apt[@]} -gt 0 ] || [ $need_private -eq 1 ]; then
    [ "${KBLM_NO_FETCH:-0}" != 1 ] || die "missing ${need_apt[*]:-} $([ $need_private -eq 1 ] && echo "android.jar/dx under $TOOLS"); KBLM_NO_FETCH=1 forbids fetching them"
    [ "$(id -u)" -eq 0 ] || die "missing ${need_apt[*]:-} $([ $need_private -eq 1 ] && echo "android.jar/dx"); run as root once to fetch them"
fi

if [ ${#need_apt[@]} -gt 0 ]; then
    say "installing ${BOOKWORM_PACKAGES[*]} from this machine's suite (apt-get update once)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${BOOKWORM_PACKAGES[@]}" >/dev/null
fi

# The Debian archive this machine uses for its own suite (one-line and deb822 sources), with
# its keyring: "URI KEYRING". Security and update suites do not match the bare codename.
debian_archive() {
    local codename="$1" f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        awk -v c="$codename" '
            $1 == "deb" {
                i = 2; opts = ""
                if ($2 ~ /^\[/) { while ($i !~ /\]$/) { opts = opts " " $i; i++ } opts = opts " " $i; i++ }
                if ($(i + 1) == c) {
                    key = ""
                    if (match(opts, /signed-by=[^] ]+/)) key = substr(opts, RSTART + 10, RLENGTH - 10)
                    print $i, key; exit
                }
            }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v c="$codename" '
            function flush() {
                if (types ~ /(^| )deb( |$)/ && enabled != "no") {
                    n = split(suites, s, " ")
                    for (k = 1; k <= n; k++) if (s[k] == c) { split(uris, u, " "); print u[1], key; found = 1; exit }
                }
                types = suites = uris = key = enabled = ""
            }
            /^[ \t]*$/ { flush(); next }
            /^#/ { next }
            { field = tolower($1); sub(/^[^:]*:[ \t]*/, "") }
            field == "types:" { types = $0 } field == "suites:" { suites = $0 } field == "uris:" { uris = $0 }
            field == "signed-by:" { key = $0 } field == "enabled:" { enabled = tolower($0) }
            END { if (!found) flush() }' "$f"
    done
}

if [ $need_private -eq 1 ]; then
    codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
    [ -n "$codename" ] || die "cannot tell this machine's Debian suite from /etc/os-release"
    read -r archive keyring < <(debian_archive "$codename" | head -n 1) || true
    [ -n "${archive:-}" ] || die "no 'deb' source for suite $codename in /etc/apt/sources.list*"
    keyring="${keyring:-/usr/share/keyrings/debian-archive-keyring.gpg}"
    [ -f "$keyring" ] || die "keyring $keyring (from this machine's apt sources) not found"
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/lists/partial" "$tmp/cache/archives/partial" "$tmp/preferences.d"
    : > "$tmp/status"
    echo "deb [signed-by=$keyring] $archive bullseye main" > "$tmp/sources.list"
    APT_PRIVATE=(-o Dir::Etc::SourceList="$tmp/sources.list" -o Dir::Etc::SourceParts=/dev/null
                 -o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts="$tmp/preferences.d"
                 -o Dir::State::Lists="$tmp/lists" -o Dir::Cache="$tmp/cache" -o Dir::State::status="$tmp/status"
                 -o APT::Sandbox::User=root -o Acquire::Languages=none)
    say "fetching ${BULLSEYE_PACKAGES[*]} from the bullseye suite of this machine's Debian archive (private apt config in $tmp)"
    apt-get "${APT_PRIVATE[@]}" update -qq
    (cd "$tmp" && apt-get "${APT_PRIVATE[@]}" download "${BULLSEYE_PACKAGES[@]}" >/dev/null)
    mkdir -p "$TOOLS"
    for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$TOOLS"; say "unpacked $(basename "$deb")"; done
fi
[ -f "$ANDROID_JAR" ] && [ -f "$DX_JAR" ] || die "android.jar or dx.jar missing under $TOOLS"

# --- build --------------------------------------------------------------------------------
rm -rf "$OUT"
mkdir -p "$OUT/gen" "$OUT/classes" "$OUT/assets" "$OUT/dex"
cp "$MODEL" "$OUT/assets/model.tflite"
say "model: $MODEL ($(stat -c %s "$MODEL") bytes) -> assets/model.tflite"

# One source for package, SDK levels and version: app/build.gradle (the manifest has none, as
# the Android Gradle plugin wants). The target SDK is TARGET_SDK above.
gradle_value() { sed -n "s/^[[:space:]]*$1[[:space:]]\{1,\}'\{0,1\}\([^' ]*\)'\{0,1\}[[:space:]]*$/\1/p" "$HERE/app/build.gradle" | head -n 1; }
PACKAGE="$(gradle_value namespace)"
MIN_SDK="$(gradle_value minSdk)"
VERSION_CODE="$(gradle_value versionCode)"
VERSION_NAME="$(gradle_value versionName)"
[ -n "$PACKAGE" ] && [ -n "$MIN_SDK" ] && [ -n "$VERSION_CODE" ] && [ -n "$VERSION_NAME" ] \
    || die "cannot read namespace/minSdk/versionCode/versionName from app/build.gradle"
# API 23's aapt does not know android:dataExtractionRules (API 31); below target SDK 31 allowBackup="false" and
# fullBackupContent already keep the history out of backups and device transfers, so the attribute is dropped.
sed -e "0,/<manifest /s//<manifest package=\"$PACKAGE\" /" -e 's/ android:dataExtractionRules="[^"]*"//' \
    "$HERE/app/src/main/AndroidManifest.xml" > "$OUT/AndroidManifest.xml"
aapt package -f -m -J "$OUT/gen" -M "$OUT/AndroidManifest.xml" -S "$HERE/app/src/main/res" \
    -A "$OUT/assets" -0 tflite -I "$ANDROID_JAR" -F "$OUT/app.unsigned.apk" \
    --min-sdk-version "$MIN_SDK" --target-sdk-version "$TARGET_SDK" --version-code "$VERSION_CODE" --version-name "$VERSION_NAME"

mapfile -t sources < <(find "$HERE/core/src/main/java" "$HERE/core/src/android/java" "$HERE/app/src/main/java" "$OUT/gen" -name '*.java' | sort)
javac -source 8 -target 8 -bootclasspath "$ANDROID_JAR" -Xlint:-options -encoding UTF-8 -nowarn \
    -d "$OUT/classes" "${sources[@]}"
say "javac: ${#sources[@]} sources (core + app + R.java) against android.jar API 23"

java -cp "$DX_JAR" com.android.dx.command.Main --dex --min-sdk-version="$MIN_SDK" --output="$OUT/dex/classes.dex" "$OUT/classes"
(cd "$OUT/dex" && aapt add "$OUT/app.unsigned.apk" classes.dex >/dev/null)
zipalign -f -p 4 "$OUT/app.unsigned.apk" "$OUT/app.aligned.apk"

KEYSTORE="$BUILD/debug.keystore"
if [ ! -f "$KEYSTORE" ]; then
    keytool -genkeypair -keystore "$KEYSTORE" -storepass android -keypass android -alias androiddebugkey \
        -keyalg RSA -keysize 2048 -validity 10000 -dname "CN=Android Debug,O=Android,C=US" >/dev/null 2>&1
    say "generated debug key $KEYSTORE (password android)"
fi
apksigner sign --v4-signing-enabled false --ks "$KEYSTORE" --ks-pass pass:android --key-pass pass:android --ks-key-alias androiddebugkey \
    --out "$APK" "$OUT/app.aligned.apk"

# --- verify -------------------------------------------------------------------------------
say "apksigner verify:"
apksigner verify --verbose --print-certs "$APK" | grep -E '^(Verifies|Verified using|Signer #1 certificate (DN|SHA-256))'
zipalign -c -p 4 "$APK" && say "zipalign -c: aligned"
say "aapt dump badging:"
aapt dump badging "$APK" | grep -E "^(package|sdkVersion|targetSdkVersion|application-label|launchable-activity|uses-permission)"
aapt list "$APK" | grep -E '^(classes.dex|assets/model.tflite|AndroidManifest.xml)$' >/dev/null || die "APK lacks classes.dex, the model or the manifest"
say "built $APK ($(stat -c %s "$APK") bytes)"
