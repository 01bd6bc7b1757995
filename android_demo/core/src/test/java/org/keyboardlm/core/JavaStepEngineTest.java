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

    /** The refusal of {@code data}, resealed: a file patched on purpose reaches the checks behind the checksum. */
    private static String refusal(String name, byte[] data) throws Exception {
        try {
            JavaStepEngine.fromBytes(name, ModelBytes.seal(data));
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
        assertTrue(refusal("no_archive.tflite", Arrays.copyOf(data, 64)).contains("no zip end record"));
        // Garbage with an identifier and an (empty) archive, so the checksum holds: the flatbuffer reader refuses it.
        byte[] garbage = new byte[64 + EmbeddedZip.END_RECORD];
        Arrays.fill(garbage, 0, 64, (byte) 0x7f);
        garbage[4] = 'T';
        garbage[5] = 'F';
        garbage[6] = 'L';
        garbage[7] = '3';
        garbage[64] = 'P';
        garbage[65] = 'K';
        garbage[66] = 5;
        garbage[67] = 6;
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
        assertEquals(m.subgraphs.get(0).operators.size() - dequantize, g.plannedOperators() + g.fusedOperators());
    }

    @Test
    public void theLogitsLogSoftmaxAndTopKRunAsOneKernel() throws Exception {
        String[][] expected = {{JavaStepEngine.STEP_FULL, "+LOG_SOFTMAX"}, {JavaStepEngine.STEP, "+LOG_SOFTMAX+STRIDED_SLICE+TOPK_V2"}};
        for (String name : new String[] {DYNAMIC, WEIGHT_ONLY}) {
            TfliteModel m = TfliteModel.read(name, bytes(name));
            for (String[] e : expected) {
                Interpreter g = new Interpreter(m, m.signature(e[0]).subgraph);
                Interpreter separate = new Interpreter(m, m.signature(e[0]).subgraph, false, true);
                int fused = 0;
                for (int i = 0; i < g.plannedOperators(); i++) {
                    if (!g.plannedFusion(i).isEmpty()) {
                        assertEquals(name + " " + e[0], e[1], g.plannedFusion(i));
                        assertEquals(name, BuiltinOperator.FULLY_CONNECTED, g.plannedOperator(i).builtinCode);
                        fused++;
                    }
                }
                assertEquals(name + " " + e[0], 1, fused);
                assertEquals(name + " " + e[0], separate.plannedOperators(), g.plannedOperators() + g.fusedOperators());
                assertEquals(0, separate.fusedOperators());
            }
        }
    }

    /** The signature's outputs after {@code steps} tokens run through {@code g}, one value array reused throughout. */
    private static Object[] outputs(TfliteModel m, String key, Interpreter g, int steps) {
        TfliteModel.Signature s = m.signature(key);
        Object[] v = g.newValues();
        float[] state = new float[((float[]) v[s.inputs.get("state")]).length];
        java.util.List<String> names = new java.util.ArrayList<String>(new java.util.TreeSet<String>(s.outputs.keySet()));
        Object[] out = new Object[names.size() * steps];
        java.util.Random r = new java.util.Random(5);
        for (int t = 0; t < steps; t++) {
            ((int[]) v[s.inputs.get("token")])[0] = t % 20 == 0 ? Vocabulary.BOS : 4 + r.nextInt(300);
            if (t % 20 == 0) state = new float[state.length];
            System.arraycopy(state, 0, (float[]) v[s.inputs.get("state")], 0, state.length);
            g.run(v);
            for (int i = 0; i < names.size(); i++) {
                Object o = v[s.outputs.get(names.get(i))];
                out[t * names.size() + i] = o instanceof float[] ? ((float[]) o).clone() : ((int[]) o).clone();
            }
            state = ((float[]) v[s.outputs.get("state")]).clone();
        }
        return out;
    }

    /** Fused kernels and packed int8 weights (HotSpot) give the bits of every operator run on its own over plain int8 loops (Android). */
    @Test
    public void fusedKernelsGiveTheSameBitsAsTheOperatorsOneByOne() throws Exception {
        for (String name : new String[] {"cifg_dynamic-range.tflite", "gru_dynamic-range.tflite", "lstm_weight-only.tflite",
                "si-cifg_weight-only.tflite"}) {
            TfliteModel m = TfliteModel.read(name, bytes(name));
            for (String key : new String[] {JavaStepEngine.STEP, JavaStepEngine.STEP_FULL}) {
                int sub = m.signature(key).subgraph;
                Object[] fused = outputs(m, key, new Interpreter(m, sub, true, true), 60);
                Object[] separate = outputs(m, key, new Interpreter(m, sub, false, false), 60);
                for (int i = 0; i < fused.length; i++) {
                    if (fused[i] instanceof float[]) {
                        assertArrayEquals(name + " " + key + " output " + i, (float[]) separate[i], (float[]) fused[i], 0f);
                    } else {
                        assertArrayEquals(name + " " + key + " output " + i, (int[]) separate[i], (int[]) fused[i]);
                    }
                }
            }
        }
    }

    @Test
    public void theSubgraphsOfOneFileShareTheirWeights() throws Exception {
        TfliteModel m = TfliteModel.read(DYNAMIC, bytes(DYNAMIC));
        Interpreter step = new Interpreter(m, m.signature(JavaStepEngine.STEP).subgraph);
        Interpreter full = new Interpreter(m, m.signature(JavaStepEngine.STEP_FULL).subgraph);
        int shared = 0;
        for (TfliteModel.Tensor a : step.subgraph.tensors) {
            for (TfliteModel.Tensor b : full.subgraph.tensors) {
                if (a.type == TfliteModel.INT8 && m.hasData(a.buffer) && a.buffer == b.buffer && a.type == b.type) {
                    assertTrue(a.name, step.constant(a.index) == full.constant(b.index));
                    shared++;
                }
            }
        }
        assertTrue("int8 weights read by both subgraphs: " + shared, shared > 0);
        // The FULLY_CONNECTED weights are packed once for both subgraphs (FullyConnected.sharedPack's key).
        int packed = 0;
        for (TfliteModel.Tensor t : step.subgraph.tensors) {
            if (t.type == TfliteModel.INT8 && t.shape.length == 2 && m.shared("packed int8 " + t.buffer + " " + t.shape[0] + " " + t.shape[1]) != null) {
                packed++;
            }
        }
        assertTrue("packed weights kept: " + packed, packed > 0);
    }

    /**
     * A weight-only file's int8 weights are dequantized once for both subgraphs, and the int8
     * copies are not kept: nothing reads them after the DEQUANTIZE that ran at load.
     */
    @Test
    public void weightOnlySubgraphsShareTheDequantizedWeightsAndDropTheInt8Ones() throws Exception {
        for (String name : new String[] {WEIGHT_ONLY, "cifg_weight-only.tflite"}) {
            TfliteModel m = TfliteModel.read(name, bytes(name));
            Interpreter step = new Interpreter(m, m.signature(JavaStepEngine.STEP).subgraph);
            Interpreter full = new Interpreter(m, m.signature(JavaStepEngine.STEP_FULL).subgraph);
            int shared = 0;
            int dequantize = 0;
            for (TfliteModel.Operator a : step.subgraph.operators) {
                if (a.builtinCode != BuiltinOperator.DEQUANTIZE) continue;
                dequantize++;
                TfliteModel.Tensor in = step.subgraph.tensors.get(a.inputs[0]);
                assertTrue(name + " " + in.name, m.hasData(in.buffer));
                assertEquals(name + " " + in.name + " is not kept", null, step.constant(a.inputs[0]));
                assertEquals(name + " " + in.name + " gets no buffer per call", null, step.newValues()[a.inputs[0]]);
                for (TfliteModel.Operator b : full.subgraph.operators) {
                    if (b.builtinCode == BuiltinOperator.DEQUANTIZE && full.subgraph.tensors.get(b.inputs[0]).buffer == in.buffer) {
                        Object x = step.constant(a.outputs[0]);
                        assertTrue(name + " " + in.name, x instanceof float[] && x == full.constant(b.outputs[0]));
                        shared++;
                    }
                }
            }
            assertTrue(name + ": " + dequantize + " DEQUANTIZE", dequantize >= 2);
            assertEquals(name + ": every dequantized weight is shared", dequantize, shared);
        }
    }

    @Test
    public void packedInt8DotProductsEqualInt32DotProducts() {
        java.util.Random r = new java.util.Random(7);
        for (int units : new int[] {1, 2, 3, 7, 10, 31}) {
            for (int depth : new int[] {1, 62, 63, 64, 127, 200, 766}) {
                for (int fill = 0; fill < 4; fill++) {
                    byte[] w = new byte[units * depth];
                    int[] q = new int[depth];
                    for (int i = 0; i < w.length; i++) {
                        // random, then the extremes that stress a lane most: -128 * -128 and -128 * 127
                        w[i] = (byte) (fill == 0 ? r.nextInt(256) - 128 : fill == 1 ? -128 : fill == 2 ? 127 : (i % 2 == 0 ? -128 : 127));
                    }
                    for (int d = 0; d < depth; d++) q[d] = fill == 0 ? r.nextInt(256) - 128 : fill == 2 ? 127 : -128;
                    int[] dots = new int[units];
                    FullyConnected.dotPacked(FullyConnected.pack(w, units, depth), units, depth, q, dots);
                    for (int u = 0; u < units; u++) {
                        int expected = 0;
                        for (int d = 0; d < depth; d++) expected += w[u * depth + d] * q[d];
                        assertEquals(units + "x" + depth + " fill " + fill + " unit " + u, expected, dots[u]);
                    }
                }
            }
        }
    }

    @Test
    public void tanhMatchesTheJdkFunction() {
        java.util.Random r = new java.util.Random(11);
        for (int i = 0; i < 200000; i++) {
            float f = (float) ((r.nextDouble() * 2 - 1) * Math.pow(10, r.nextDouble() * 6 - 5));
            assertEquals("tanh(" + f + ")", (float) Math.tanh(f), ElementwiseKernels.tanh(f), 0f);
        }
        assertEquals(1f, ElementwiseKernels.tanh(30f), 0f);
        assertEquals(-1f, ElementwiseKernels.tanh(-30f), 0f);
        assertEquals(-0f, ElementwiseKernels.tanh(-0f), 0f);
        assertTrue(Float.isNaN(ElementwiseKernels.tanh(Float.NaN)));
    }

    @Test
    public void reusedValueArraysNeverLeakIntoReturnedResults() throws Exception {
        for (String name : new String[] {DYNAMIC, WEIGHT_ONLY}) {
            JavaStepEngine e = JavaStepEngine.fromBytes(name, bytes(name));
            StepEngine.FullStep a = e.stepFull(5, e.initialState());
            float[] aLogProbs = a.logProbs.clone();
            float[] aState = a.state.clone();
            StepEngine.TopStep top = e.step(7, a.state);
            int[] topIds = top.ids.clone();
            StepEngine.FullStep b = e.stepFull(9, a.state);  // reuses the value array of the first call
            e.step(11, b.state);
            assertArrayEquals(name, aLogProbs, a.logProbs, 0f);
            assertArrayEquals(name, aState, a.state, 0f);
            assertArrayEquals(name, topIds, top.ids);
            assertTrue(name, !Arrays.equals(a.logProbs, b.logProbs));
            StepEngine.FullStep again = e.stepFull(9, a.state);
            assertArrayEquals(name, b.logProbs, again.logProbs, 0f);
            assertArrayEquals(name, b.state, again.state, 0f);
        }
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
