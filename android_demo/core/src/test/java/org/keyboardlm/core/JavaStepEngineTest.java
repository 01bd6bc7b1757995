package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.nio.file.Files;
import java.util.Arrays;

import org.junit.Test;

/**
 * Loading and running exported models with the Java step engine: refusals name the file,
 * the place and the problem in one line; the arithmetic helpers of the hybrid kernel round
 * as TFLite does. Models come from tests/golden/models (see StepEngineGoldenTest).
 */
public class JavaStepEngineTest {
    private static final String DYNAMIC = "cifg_dynamic-range.tflite";
    private static final String WEIGHT_ONLY = "gru_weight-only.tflite";

    private static byte[] bytes(String name) throws Exception {
        return Files.readAllBytes(StepEngineGoldenTest.modelFile(name).toPath());
    }

    private static void putInt(byte[] b, int pos, int v) {
        for (int i = 0; i < 4; i++) b[pos + i] = (byte) (v >> (8 * i));
    }

    private static String refusal(String name, byte[] data) {
        try {
            JavaStepEngine.fromBytes(name, data);
        } catch (ModelFileException e) {
            assertTrue(e.getMessage(), e.getMessage().startsWith(name + ": "));
            assertTrue(e.getMessage(), !e.getMessage().contains("\n"));
            return e.getMessage();
        }
        fail(name + " must be refused");
        return null;
    }

    @Test
    public void anOperatorTheEngineDoesNotRunIsRefusedAtLoadByNameAndPlace() throws Exception {
        byte[] data = bytes(DYNAMIC);
        FlatBufferReader r = new FlatBufferReader(data);
        int codes = r.vector(r.root(), 1);
        boolean patched = false;
        for (int i = 0; i < r.length(codes); i++) {
            int oc = r.tableAt(codes, i);
            if (r.intField(oc, 3, 0) == BuiltinOperator.TANH) {
                putInt(data, r.field(oc, 3), 108);  // COS: a builtin the exporter never emits
                patched = true;
            }
        }
        assertTrue("the CIFG model has a TANH operator code", patched);
        String m = refusal("patched.tflite", data);
        assertTrue(m, m.contains("subgraph 0 (step), operator #10: operator COS (builtin code 108) is not run by the Java step engine"));
        assertTrue(m, m.contains("FULLY_CONNECTED"));
    }

    @Test
    public void aModelWithoutTheStepFullSignatureIsRefused() throws Exception {
        byte[] data = bytes(DYNAMIC);
        FlatBufferReader r = new FlatBufferReader(data);
        int sigs = r.vector(r.root(), 7);
        for (int i = 0; i < r.length(sigs); i++) {
            int sig = r.tableAt(sigs, i);
            if ("step_full".equals(r.string(sig, 2))) {
                int p = r.field(sig, 2);
                int s = p + r.i32(p);
                data[s + 4 + 8] = 'x';  // "step_fulx"
            }
        }
        assertTrue(refusal("renamed.tflite", data).contains("has no \"step_full\" signature"));
    }

    @Test
    public void truncatedOrForeignFilesAreRefusedWithOneClearLine() throws Exception {
        byte[] data = bytes(DYNAMIC);
        assertTrue(refusal("half.tflite", Arrays.copyOf(data, data.length / 3)).contains("truncated"));
        assertTrue(refusal("foreign.tflite", "PK\u0003\u0004 not a model".getBytes("ISO-8859-1")).contains("no TFL3 identifier"));
        byte[] garbage = new byte[64];
        Arrays.fill(garbage, (byte) 0x7f);
        garbage[4] = 'T';
        garbage[5] = 'F';
        garbage[6] = 'L';
        garbage[7] = '3';
        assertTrue(refusal("garbage.tflite", garbage).contains("malformed TFLite flatbuffer"));
    }

    @Test
    public void aTokenOutsideTheVocabularyOrAStateOfTheWrongSizeIsRejected() throws Exception {
        JavaStepEngine e = JavaStepEngine.fromBytes(DYNAMIC, bytes(DYNAMIC));
        try {
            e.stepFull(e.vocabSize(), e.initialState());
            fail("token id = vocabulary size must be rejected");
        } catch (IllegalArgumentException expected) {
            assertTrue(expected.getMessage().contains("outside the vocabulary"));
        }
        try {
            e.step(1, new float[e.stateSize() + 1]);
            fail("a state of the wrong size must be rejected");
        } catch (IllegalArgumentException expected) {
            assertTrue(expected.getMessage().contains("the model's has " + e.stateSize()));
        }
    }

    @Test
    public void stepLeavesTheGivenStateUnchangedAndRepeatsExactly() throws Exception {
        for (String name : new String[] {DYNAMIC, WEIGHT_ONLY}) {
            JavaStepEngine e = JavaStepEngine.fromBytes(name, bytes(name));
            float[] state = e.stepFull(1, e.initialState()).state;
            float[] copy = state.clone();
            StepEngine.FullStep a = e.stepFull(20, state);
            StepEngine.FullStep b = e.stepFull(20, state);
            assertArrayEquals(name, copy, state, 0f);
            assertArrayEquals(name, a.logProbs, b.logProbs, 0f);
            assertArrayEquals(name, a.state, b.state, 0f);
            double total = 0;
            for (float lp : a.logProbs) total += Math.exp(lp);
            assertEquals(name + ": probabilities sum to 1", 1.0, total, 1e-4);
        }
    }

    @Test
    public void weightOnlyInt8WeightsAreDequantizedOnceAtLoad() throws Exception {
        TfliteModel m = TfliteModel.read(WEIGHT_ONLY, bytes(WEIGHT_ONLY));
        int dequantize = 0;
        for (TfliteModel.Operator op : m.subgraphs.get(0).operators) {
            if (op.builtinCode == BuiltinOperator.DEQUANTIZE) dequantize++;
        }
        assertEquals(3, dequantize);  // embedding, gate and candidate kernels
        Interpreter g = new Interpreter(m, 0);
        assertEquals(m.subgraphs.get(0).operators.size() - dequantize, g.plannedOperators());
    }

    @Test
    public void hybridInputQuantizationRoundsHalvesAwayFromZeroLikeTflite() {
        assertEquals(-1.0, FullyConnected.roundHalfAway(-0.5), 0);
        assertEquals(1.0, FullyConnected.roundHalfAway(0.5), 0);
        assertEquals(3.0, FullyConnected.roundHalfAway(2.5), 0);
        assertEquals(-3.0, FullyConnected.roundHalfAway(-2.5), 0);
        assertEquals(1.0, FullyConnected.roundHalfAway(1.4999999), 0);
        // Symmetric: range 2 -> scale 2/127, 1 * 63.5 = 63.5 rounds to 64.
        byte[] q = new byte[3];
        float scale = FullyConnected.quantizeSymmetric(new float[] {-2f, 1f, 0.01f}, 0, 3, q);
        assertArrayEquals(new byte[] {-127, 64, 1}, q);
        assertEquals(2f / 127f, scale, 0f);
    }

    @Test
    public void hybridAsymmetricQuantizationPicksTheZeroPointAndScaleOfTflite() {
        // rmin -1, rmax 2: scale 3/255, zero point -128 + 85 = -43; both ends representable.
        byte[] q = new byte[4];
        float[] scale = new float[1];
        int zp = FullyConnected.quantizeAsymmetric(new float[] {-1f, 0f, 0.25f, 2f}, 0, 4, q, scale);
        assertEquals(-43, zp);
        assertEquals((float) (3.0 / 255.0), scale[0], 0f);
        assertArrayEquals(new byte[] {-128, -43, -22, 127}, q);
        // Only positive values: rmin is 0, so the zero point sits at -128.
        zp = FullyConnected.quantizeAsymmetric(new float[] {0.5f, 1f, 0.25f}, 0, 3, q, scale);
        assertEquals(-128, zp);
        assertEquals(127, q[1]);
        // An all-zero row quantizes to zeros with scale 1 and zero point 0.
        zp = FullyConnected.quantizeAsymmetric(new float[] {0f, 0f}, 0, 2, q, scale);
        assertEquals(0, zp);
        assertEquals(1f, scale[0], 0f);
    }
}
