package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

import org.junit.Test;

/**
 * Reading the model file's embedded zip. tests/test_android_core.py passes, via
 * system properties: kblm.vocabchecks, lines "model-path id hex(word)" from the
 * Python predictor fixture; kblm.badmodels, lines "expected-message-part path".
 */
public class ModelArchiveTest {
    private static String hex(String h) {
        byte[] b = new byte[h.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
        return new String(b, StandardCharsets.UTF_8);
    }

    private static List<String> lines(String property) throws IOException {
        String path = System.getProperty(property);
        assertTrue("system property " + property + " is set", path != null);
        return Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8);
    }

    @Test
    public void vocabularyFromTheModelAgreesWithThePythonPredictorOnEveryFixtureWord() throws Exception {
        List<String> checks = lines("kblm.vocabchecks");
        assertTrue(checks.size() > 10);
        for (String line : checks) {
            String[] f = line.split(" ");
            ModelArchive m = ModelArchive.load(f[0]);
            assertEquals(20, m.seqLen);
            assertEquals(f[0] + " id " + f[1], hex(f[2]), m.vocab.get(Integer.parseInt(f[1])));
        }
    }

    @Test
    public void truncatedForeignAndOtherSpecFilesAreRefusedWithOneClearLine() throws Exception {
        List<String> cases = lines("kblm.badmodels");
        assertTrue(cases.size() >= 4);
        for (String line : cases) {
            int sp = line.indexOf(' ');
            String expected = hex(line.substring(0, sp));
            String path = line.substring(sp + 1);
            try {
                ModelArchive.load(path);
                fail(path + " must be refused");
            } catch (ModelFileException e) {
                assertTrue(e.getMessage(), e.getMessage().startsWith(path + ": "));
                assertTrue(e.getMessage() + " should say " + expected, e.getMessage().contains(expected));
                assertTrue(!e.getMessage().contains("\n"));
            }
        }
    }
}
