package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.Collections;

import org.junit.Test;

/** A model from outside the APK is used only when its sha256 is one the app was built with. */
public class ExternalModelPolicyTest {
    @Test
    public void sha256IsTheStandardDigest() {
        assertEquals("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                ExternalModelPolicy.sha256("abc".getBytes(StandardCharsets.US_ASCII)));
        assertEquals("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", ExternalModelPolicy.sha256(new byte[0]));
    }

    @Test
    public void onlyAFileWithAnAcceptedDigestIsUsed() throws Exception {
        File model = StepEngineGoldenTest.modelFile("cifg_dynamic-range.tflite");
        byte[] bytes = Files.readAllBytes(model.toPath());
        String digest = ExternalModelPolicy.sha256(bytes);
        ExternalModelPolicy accepting = new ExternalModelPolicy(Arrays.asList("", " " + digest.toUpperCase() + " "));
        assertNull(accepting.refusal("pushed/model.tflite", bytes));
        byte[] changed = bytes.clone();
        changed[changed.length / 2] ^= 1;  // one bit anywhere: refused
        String refusal = accepting.refusal("pushed/model.tflite", changed);
        assertEquals("pushed/model.tflite: not used: its sha256 " + ExternalModelPolicy.sha256(changed)
                + " is none of the 1 this app accepts", refusal);
        assertEquals("pushed/model.tflite: not used: its sha256 " + digest
                        + " is not accepted (this app accepts no model from outside its APK)",
                new ExternalModelPolicy(Collections.<String>emptyList()).refusal("pushed/model.tflite", bytes));
    }

    @Test
    public void aMalformedAcceptedDigestIsRefusedByName() {
        for (String bad : new String[] {"abc", "g" + new String(new char[63]).replace('\0', '0'), "sha256:00"}) {
            try {
                new ExternalModelPolicy(Collections.singletonList(bad));
                fail(bad);
            } catch (IllegalArgumentException e) {
                assertTrue(e.getMessage(), e.getMessage().equals("accepted model sha256 '" + bad + "' is not 64 hex digits"));
            }
        }
    }
}
