package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;

import org.junit.Assume;
import org.junit.Test;

/**
 * The version the code reports ({@link Version#NAME}) is the version the build publishes: the
 * build passes the version of android_demo/core/pom.xml as kblm.version (Maven its
 * {@code project.version}, Gradle and tests/test_android_core.py the value they read from it).
 */
public class VersionTest {
    @Test
    public void theCodeReportsTheVersionThePomPublishes() {
        String built = System.getProperty("kblm.version");
        Assume.assumeTrue("kblm.version not given (a build that does not read pom.xml)", built != null);
        assertEquals("Version.NAME differs from pom.xml's <version>", built, Version.NAME);
        assertEquals("org.keyboardlm", Version.GROUP_ID);
        assertEquals("keyboardlm-core", Version.ARTIFACT_ID);
    }
}
