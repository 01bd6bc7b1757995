#!/usr/bin/env bash
# Set up the pinned environment (idempotent) and run a job in it.
#   bash dev.sh demo   - the main job on the embedded default corpus
#   bash dev.sh test   - the test suite (two workers; the 15 slowest tests listed at the end)
#   bash dev.sh test-extended - the tests CI adds: multi-process, fault and resume runs, Maven, benchmark scripts
#   bash dev.sh env    - only set up
# Needs Python 3.11 on PATH (python3.11, or python3 at 3.11) and the package index.
set -euo pipefail
cd "$(dirname "$0")"
export UV_PYTHON_DOWNLOADS=never TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-3}"
# Use the system certificate store (as pip does), so TLS-inspecting proxies with a
# system-installed CA work.
export UV_NATIVE_TLS="${UV_NATIVE_TLS:-1}"
UV_VERSION=0.13.9

find_python() {
  for cand in python3.11 python3 python; do
    if command -v "$cand" >/dev/null 2>&1 &&
       "$cand" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
      command -v "$cand"; return 0
    fi
  done
  echo "dev.sh: Python 3.11 is required (TensorFlow Federated 0.87 supports no newer Python)" >&2
  return 1
}

setup() {
  PY=$(find_python)
  if command -v uv >/dev/null 2>&1; then
    UV=$(command -v uv)
  else
    UV=.tools/bin/uv
    if [ ! -x "$UV" ]; then
      echo "dev.sh: installing uv $UV_VERSION into .tools/" >&2
      "$PY" -m venv .tools
      .tools/bin/pip install --quiet --disable-pip-version-check "uv==$UV_VERSION"
    fi
  fi
  # --frozen: exactly the versions in uv.lock, the ones the tests ran with.
  # --compile-bytecode: TensorFlow and TFF are thousands of modules; compiled once here, every later
  # process imports them in about a third of the time (a Python told not to write bytecode, or without
  # write access to the environment, would otherwise compile them again on every start).
  "$UV" sync --frozen --extra train --extra test --python "$PY" --quiet --compile-bytecode
  java_test_jars
}

# Maven's plugins and Android's API jar for the core's Maven build (tests/test_android_maven.py,
# test_android_core_jar.py and test_embedding_guide.py skip without them): one build fills ~/.m2 from
# Maven Central, after which the tests build offline (mvn -o). Only where mvn exists, once.
maven_repository() {
  local repo="${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}"
  if ! command -v mvn >/dev/null 2>&1 || [ -e "$repo/com/google/android/android/4.1.1.4/android-4.1.1.4.jar" ]; then
    return 0
  fi
  echo "dev.sh: filling $repo for the core's Maven build (once)" >&2
  local build
  build="$(mktemp -d)"
  mvn -q -B -f android_demo/core/pom.xml -Dmaven.repo.local="$repo" -Dkblm.buildDirectory="$build/target" \
    -Dtest=VersionTest -Dsurefire.failIfNoSpecifiedTests=false verify >/dev/null 2>&1 ||
    echo "dev.sh: the core's Maven build could not fetch its plugins; its tests will skip" >&2
  rm -rf "$build"
}

# JUnit 4 for the Java core of android_demo/ (tests/test_android_core.py skips without it).
java_test_jars() {
  if [ -e /usr/share/java/junit4.jar ] || [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    return 0
  fi
  apt-get install -y -q junit4 libhamcrest-java >/dev/null 2>&1 ||
    { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q junit4 libhamcrest-java >/dev/null 2>&1; } ||
    echo "dev.sh: could not install junit4/libhamcrest-java; the Java core test will skip" >&2
}

job="${1:-}"
shift || true
case "$job" in
  env) setup ;;
  demo) setup; exec .venv/bin/keyboard-lm demo "$@" ;;
  # Two pytest-xdist workers (the suite's subprocesses, TFF workers and timeouts leave a core idle otherwise);
  # KEYBOARD_LM_TEST_WORKERS=0 runs in one process. `test` leaves out the tests marked extended (multi-process
  # runtime, fault and resume runs, the Maven build) and bench (tests of benchmark scripts); `test-extended`
  # runs exactly those; CI runs both (.ci/run). A -m of your own replaces the selection.
  test) setup; maven_repository
    exec .venv/bin/python -m pytest -n "${KEYBOARD_LM_TEST_WORKERS:-2}" --dist worksteal -m "not extended and not bench" "$@" ;;
  test-extended) setup; maven_repository
    exec .venv/bin/python -m pytest -n "${KEYBOARD_LM_TEST_WORKERS:-2}" --dist worksteal -m "extended or bench" "$@" ;;
  *) echo "usage: bash dev.sh demo|test|test-extended|env [args...]" >&2; exit 2 ;;
esac
