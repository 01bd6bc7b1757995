package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.Random;

import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * Loading a model for the keyboard: from a path or from bytes (an Android asset), and every
 * bad file refused with one line naming it, never another exception: the bad models
 * {@link ModelArchiveTest#badModels} makes, every truncation, and random corruption.
 */
public class ModelFileTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    static byte[] goldenBytes() throws Exception {
        return Files.readAllBytes(StepEngineGoldenTest.modelFile("si-cifg_dynamic-range.tflite").toPath());
    }

    static void refused(String name, byte[] data, String expected) {
        try {
            ModelFile.fromBytes(name, data);
            fail(name + " must be refused");
        } catch (ModelFileException e) {
            assertTrue(e.getMessage(), e.getMessage().startsWith(name + ": "));
            assertTrue(e.getMessage() + " should say " + expected, e.getMessage().contains(expected));
            assertTrue(e.getMessage(), !e.getMessage().contains("\n"));
        }
    }

    @Test
    public void aModelFromBytesEqualsTheModelFromItsPath() throws Exception {
        String path = StepEngineGoldenTest.modelFile("si-cifg_dynamic-range.tflite").getPath();
        ModelFile a = ModelFile.load(path);
        ModelFile b = ModelFile.fromBytes("asset:model.tflite", goldenBytes());
        assertEquals(a.vocab.tokens(), b.vocab.tokens());
        assertEquals(20, b.seqLen);
        float[] x = a.engine.stepFull(Vocabulary.BOS, a.engine.initialState()).logProbs;
        float[] y = b.engine.stepFull(Vocabulary.BOS, b.engine.initialState()).logProbs;
        assertTrue(Arrays.equals(x, y));
    }

    @Test
    public void theSharedBadModelsAreRefusedByModelFileToo() throws Exception {
        for (String[] c : ModelArchiveTest.badModels(tmp.getRoot())) {
            String path = c[1];
            try {
                ModelFile.load(path);
                fail(path + " must be refused");
            } catch (ModelFileException e) {
                assertTrue(e.getMessage(), e.getMessage().startsWith(path + ": ") && !e.getMessage().contains("\n"));
            }
        }
        try {
            ModelFile.load("/nonexistent/model.tflite");
            fail();
        } catch (ModelFileException e) {
            assertTrue(e.getMessage(), e.getMessage().startsWith("/nonexistent/model.tflite: cannot read the model file"));
        }
    }

    @Test
    public void everyTruncationIsRefusedInOneLine() throws Exception {
        byte[] good = goldenBytes();
        for (int n = 0; n < good.length; n += 97) {
            String expected = n < 8 ? "truncated or foreign" : "truncated";
            refused("cut" + n + ".tflite", Arrays.copyOf(good, n), expected);
        }
        refused("empty.tflite", new byte[0], "truncated or foreign");
    }

    @Test
    public void aForeignFileIsRefused() {
        refused("photo.jpg", new byte[] {(byte) 0xff, (byte) 0xd8, (byte) 0xff, (byte) 0xe0, 0, 0x10, 'J', 'F', 'I', 'F'},
                "no TFL3 identifier");
        refused("plain.tflite", "    TFL3 but nothing else".getBytes(StandardCharsets.US_ASCII), "truncated");
    }

    @Test
    public void aVocabularyThatDisagreesWithTheEngineIsRefused() throws Exception {
        ModelFile m = FakeEngine.model(20, "a", "b");
        try {
            new ModelFile("mixed.tflite", FakeEngine.model(20, "a").vocab, m.engine, 20, "");
            fail();
        } catch (ModelFileException e) {
            assertTrue(e.getMessage(), e.getMessage().startsWith("mixed.tflite: the model scores 6 words but its vocabulary has 5"));
        }
    }

    /**
     * Random bytes changed anywhere: refused with a ModelFileException of one line (the checksum
     * covers every byte), unless every write put back the byte that was there; such a file, the
     * original, still answers.
     */
    @Test
    public void randomCorruptionIsRefusedOrStillRuns() throws Exception {
        byte[] good = goldenBytes();
        Random r = new Random(1);
        int refusedCount = 0;
        int ran = 0;
        for (int trial = 0; trial < 400; trial++) {
            byte[] bad = good.clone();
            int changes = 1 + r.nextInt(4);
            for (int c = 0; c < changes; c++) bad[r.nextInt(bad.length)] = (byte) r.nextInt(256);
            ModelFile m;
            try {
                m = ModelFile.fromBytes("fuzz" + trial + ".tflite", bad);
            } catch (ModelFileException e) {
                assertTrue(e.getMessage(), e.getMessage().startsWith("fuzz" + trial + ".tflite: ") && !e.getMessage().contains("\n"));
                refusedCount++;
                continue;
            }
            assertTrue("trial " + trial + ": a changed file loaded", Arrays.equals(bad, good));
            Predictor p = new Predictor(m, null);
            try {
                p.suggest("how are you", 3);
                p.complete("how are", "y", 3);
                ran++;
            } catch (RuntimeException e) {
                throw new AssertionError("trial " + trial + ": a loaded model failed at run time: " + e, e);
            }
        }
        System.out.println("ModelFile: 400 corrupted files, " + refusedCount + " refused in one line, " + ran
                + " unchanged (every write put the same byte back) load and answer");
    }
}
