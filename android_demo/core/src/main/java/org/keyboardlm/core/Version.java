package org.keyboardlm.core;

/**
 * The version of this core, published as the Maven artifact org.keyboardlm:keyboardlm-core.
 * The artifact's version is android_demo/core/pom.xml's; {@link #NAME} repeats it for the code to
 * report at run time, and every build refuses the two when they differ (VersionTest under Maven,
 * Gradle and pytest; android_demo/build_core_jar.sh before it compiles).
 */
public final class Version {
    /** Group id of the Maven artifact. */
    public static final String GROUP_ID = "org.keyboardlm";
    /** Artifact id of the Maven artifact. */
    public static final String ARTIFACT_ID = "keyboardlm-core";
    /**
     * The version, e.g. "0.1.0". Assigned in a static block, so it is not a compile-time
     * constant: code compiled against one jar reads the version of the jar it runs with.
     */
    public static final String NAME;

    static {
        NAME = "0.1.0";
    }

    private Version() {}
}
