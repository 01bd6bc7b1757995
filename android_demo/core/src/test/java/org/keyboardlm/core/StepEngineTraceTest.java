package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

import org.junit.Assume;
import org.junit.Test;

/**
 * Beyond the fixture's top 3: every log-prob of the vocabulary and every state value agree
 * with the TFLite runtime over hundreds of steps. tests/test_android_core.py writes, with the
 * Python ModelFile (TFLite runtime), one trace per golden model and passes a line file
 * "model-path trace-path" as kblm.traces; absent (no TFLite runtime), the test is skipped.
 *
 * Trace format, little-endian: int32 steps, V, S; per step int32 token, float32[V]
 * log-probs, float32[S] new state. A &lt;bos&gt; token starts from the zero state, as a
 * session does every seq_len inputs.
 *
 * Each step is run twice: from the runtime's previous state (every model: within 1e-4)
 * and from the engine's own (weight-only models: within 1e-4). LOGISTIC and TANH differ
 * from TFLite's approximations by an ulp or two; float arithmetic carries that along
 * harmlessly, but a hybrid kernel rounds its input to int8, and a value within an ulp of a
 * rounding boundary can land one step apart, after which the two runs differ until the
 * state restarts. The free-running difference of dynamic-range models is only reported.
 */
public class StepEngineTraceTest {
    @Test
    public void everyLogProbAndStateValueMatchesTheTfliteRuntimeStepByStep() throws Exception {
        String lines = System.getProperty("kblm.traces");
        Assume.assumeTrue("kblm.traces not given (no Python TFLite runtime)", lines != null);
        List<String> cases = Files.readAllLines(Paths.get(lines), StandardCharsets.UTF_8);
        assertTrue(cases.size() >= 8);
        StringBuilder report = new StringBuilder();
        for (String line : cases) {
            String[] f = line.split(" ");
            String name = Paths.get(f[0]).getFileName().toString();
            JavaStepEngine e = JavaStepEngine.load(f[0]);
            String mode = ModelArchive.stringField(ModelArchive.load(f[0]).metadataJson, "quantization");
            ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(Paths.get(f[1]))).order(ByteOrder.LITTLE_ENDIAN);
            int steps = b.getInt();
            assertEquals(name, e.vocabSize(), b.getInt());
            assertEquals(name, e.stateSize(), b.getInt());
            float[] runtimeState = e.initialState();
            float[] ownState = e.initialState();
            double stepwise = 0;
            double free = 0;
            int freeSteps = 0;  // steps where the free-running engine is off by more than the tolerance
            for (int t = 0; t < steps; t++) {
                int token = b.getInt();
                if (token == StepEngineGoldenTest.BOS) {
                    runtimeState = e.initialState();
                    ownState = e.initialState();
                }
                StepEngine.FullStep fromRuntime = e.stepFull(token, runtimeState);
                StepEngine.FullStep own = e.stepFull(token, ownState);
                float[] want = new float[e.vocabSize() + e.stateSize()];
                for (int i = 0; i < want.length; i++) want[i] = b.getFloat();
                double d1 = 0;
                double d2 = 0;
                for (int i = 0; i < want.length; i++) {
                    boolean lp = i < e.vocabSize();
                    float got1 = lp ? fromRuntime.logProbs[i] : fromRuntime.state[i - e.vocabSize()];
                    float got2 = lp ? own.logProbs[i] : own.state[i - e.vocabSize()];
                    d1 = Math.max(d1, Math.abs(want[i] - got1));
                    d2 = Math.max(d2, Math.abs(want[i] - got2));
                }
                assertTrue(name + " step " + t + " (token " + token + ") from the runtime's state differs by " + d1,
                        d1 <= StepEngineGoldenTest.TOLERANCE);
                stepwise = Math.max(stepwise, d1);
                free = Math.max(free, d2);
                if (d2 > StepEngineGoldenTest.TOLERANCE) freeSteps++;
                runtimeState = new float[e.stateSize()];
                System.arraycopy(want, e.vocabSize(), runtimeState, 0, e.stateSize());
                ownState = own.state;
            }
            if (!"dynamic-range".equals(mode)) {
                assertTrue(name + ": free-running, the engine drifts from the runtime by " + free,
                        free <= StepEngineGoldenTest.TOLERANCE);
            }
            report.append(String.format("%n  %-30s %d steps x (%d log-probs + %d state): max |diff| %.2e step by step, "
                    + "%.2e free-running (%d steps > 1e-4)", name, steps, e.vocabSize(), e.stateSize(), stepwise, free, freeSteps));
        }
        System.out.println("StepEngine vs TFLite runtime, every log-prob and state value:" + report);
    }
}
