#!/usr/bin/env bash
# Set up (idempotently) an emulated aarch64 Python 3.11 with tflite-runtime and numpy:
#   Debian bookworm arm64 python3.11 via `debootstrap --arch=arm64 --foreign` (packages unpacked,
#   never configured), run by qemu-aarch64-static (user-mode emulation), and the aarch64 wheels
#   of tflite-runtime 2.14.0 and numpy 1.25.2 unpacked onto PYTHONPATH.
# With --java, also an emulated aarch64 JVM: Debian bookworm arm64 openjdk-17-jre-headless and its
#   dependencies, by debootstrap --foreign --include into a second root (java-root), unpacked the same way.
#   Java bytecode is portable: the Android core is compiled with the host's javac and run there.
# Prints the directory; benchmarks/latency_benchmark.py, benchmarks/java_arm64_benchmark.py and
# tests/test_android_core.py use it. Needs root for apt-get.
#
#   bash benchmarks/arm64_env.sh [--java]
set -euo pipefail
java=0
for arg in "$@"; do
  case "$arg" in
    --java) java=1 ;;
    *) echo "arm64_env.sh: unknown argument $arg (usage: arm64_env.sh [--java])" >&2; exit 2 ;;
  esac
done
here="$(cd "$(dirname "$0")" && pwd)"
env_dir="${ARM64_ENV_DIR:-$here/.arm64}"
root="$env_dir/root"
site="$env_dir/site"
if ! command -v qemu-aarch64-static >/dev/null || ! command -v debootstrap >/dev/null; then
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user-static debootstrap >&2
fi
# The Debian archive this machine's own apt uses (one-line .list or deb822 .sources files,
# security archives skipped); no mirror is written into this repository.
debian_mirror() {
  local uri
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z+]+:\/\//) { print $i; break } }' |
        grep -v -- -security | head -n 1 || true)
  if [ -z "$uri" ]; then
    uri=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '$1 == "URIs:" { print $2 }' |
          grep -v -- -security | head -n 1 || true)
  fi
  if [ -z "$uri" ]; then
    echo "arm64_env.sh: found no Debian archive in /etc/apt/sources.list or /etc/apt/sources.list.d/" >&2
    exit 1
  fi
  echo "$uri"
}
if [ ! -x "$root/usr/bin/python3.11" ]; then
  rm -rf "$root"
  debootstrap --arch=arm64 --foreign --variant=minbase \
    --include=python3.11-minimal,libpython3.11-stdlib bookworm "$root" "$(debian_mirror)" >&2
  # --foreign unpacks only the base system; unpack the downloaded python packages too.
  for deb in "$root"/var/cache/apt/archives/*.deb; do dpkg-deb -x "$deb" "$root"; done
fi
if [ ! -d "$site/tflite_runtime" ] || [ ! -d "$site/numpy" ]; then
  rm -rf "$site" "$env_dir/wheels"
  mkdir -p "$site" "$env_dir/wheels"
  python3 -m pip download --quiet --only-binary=:all: --no-deps --python-version 3.11 \
    --platform manylinux_2_34_aarch64 --platform manylinux_2_17_aarch64 --platform manylinux2014_aarch64 \
    tflite-runtime==2.14.0 numpy==1.25.2 -d "$env_dir/wheels" >&2
  for whl in "$env_dir"/wheels/*.whl; do python3 -m zipfile -e "$whl" "$site"; done
fi
QEMU_LD_PREFIX="$root" qemu-aarch64-static "$root/usr/bin/python3.11" -c \
  "import platform, sys; assert platform.machine() == 'aarch64', platform.machine()" >&2
if [ "$java" = 1 ]; then
  java_root="$env_dir/java-root"
  java_bin="$java_root/usr/lib/jvm/java-17-openjdk-arm64/bin/java"
  if [ ! -x "$java_bin" ]; then
    rm -rf "$java_root"
    debootstrap --arch=arm64 --foreign --variant=minbase --include=openjdk-17-jre-headless \
      bookworm "$java_root" "$(debian_mirror)" >&2
    # As above: --foreign only unpacks the base system. No maintainer script runs, so there is no
    # /usr/bin/java alternative and no Java CA store; the JVM is called by its full path.
    for deb in "$java_root"/var/cache/apt/archives/*.deb; do dpkg-deb -x "$deb" "$java_root"; done
  fi
  # `java -version` names no architecture; the os.arch property does.
  arch=$(QEMU_LD_PREFIX="$java_root" qemu-aarch64-static "$java_bin" -XshowSettings:properties -version 2>&1 |
         awk '$1 == "os.arch" { print $3 }')
  if [ "$arch" != aarch64 ]; then
    echo "arm64_env.sh: the emulated JVM reports os.arch '$arch', not aarch64" >&2
    exit 1
  fi
  QEMU_LD_PREFIX="$java_root" qemu-aarch64-static "$java_bin" -version >&2
fi
echo "$env_dir"
