"""Where the tests find Android's API as a jar to compile against, without downloading it.

The same places android_demo/build_core_jar.sh looks, in the same order: KBLM_ANDROID_JAR; the
com.google.android:android:4.1.1.4 jar a Maven build of the core put in the local Maven repository
(MAVEN_REPO_LOCAL, default ~/.m2/repository); the API 23 android.jar build_apk.sh unpacks under
android_demo/build/tools. Both hold the API's classes only (their methods throw): code compiled
against them runs on a phone, whose platform provides the real classes.
"""

import os
from pathlib import Path

from tests.conftest import REPO

MAVEN_JAR = Path("com/google/android/android/4.1.1.4/android-4.1.1.4.jar")
APK_TOOLS_JAR = REPO / "android_demo" / "build" / "tools" / "usr" / "share" / "java" / "com.android.android-23.jar"
MISSING = ("no Android API jar to compile against: set KBLM_ANDROID_JAR, or run `mvn -f android_demo/core/pom.xml "
           "verify` once (it fetches com.google.android:android:4.1.1.4 into ~/.m2), or android_demo/build_apk.sh")


def android_jar() -> Path | None:
    """The first Android API jar found (see the module docstring), or None."""
    chosen = os.environ.get("KBLM_ANDROID_JAR")
    if chosen:  # named, it is the only candidate (the script refuses a missing one)
        return Path(chosen) if Path(chosen).is_file() else None
    repo = Path(os.environ.get("MAVEN_REPO_LOCAL") or Path.home() / ".m2" / "repository")
    return next((p for p in (repo / MAVEN_JAR, APK_TOOLS_JAR) if p.is_file()), None)
