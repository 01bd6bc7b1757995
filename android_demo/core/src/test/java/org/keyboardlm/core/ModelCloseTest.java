package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;

import org.junit.Test;

/**
 * Closing a model or a predictor: its memory goes, it can be closed twice, and every later
 * call (stateless, session or engine) throws IllegalStateException naming the model, while
 * a step that was running when it closed finishes.
 */
public class ModelCloseTest {
    private static String path() {
        return StepEngineGoldenTest.modelFile("cifg_dynamic-range.tflite").getPath();
    }

    private static void closedError(Runnable call, String expected) {
        try {
            call.run();
            fail("a call after close must fail");
        } catch (IllegalStateException e) {
            assertEquals(expected, e.getMessage());
        }
    }

    @Test
    public void aClosedPredictorAndItsSessionsSayTheModelIsClosed() throws Exception {
        final String path = path();
        final Predictor p;
        final Session s;
        try (Predictor open = new Predictor(ModelFile.load(path), Collections.<String>emptyList())) {
            p = open;
            List<Suggestion> before = p.suggest("how are", 3);
            assertEquals(3, before.size());
            s = p.session();
            s.commit("how are ");
            assertEquals(before.get(0).word, s.suggestions(3).get(0).word);
        }
        assertNull("the prefix cache is dropped", p.prefixCache());
        p.close();  // twice: nothing happens
        closedError(new Runnable() {
            @Override
            public void run() {
                p.suggest("how are", 3);
            }
        }, path + ": the predictor is closed");
        closedError(new Runnable() {
            @Override
            public void run() {
                p.complete("how are", "y", 3);
            }
        }, path + ": the predictor is closed");
        closedError(new Runnable() {
            @Override
            public void run() {
                s.commit("you ");
            }
        }, path + ": the model is closed");
        closedError(new Runnable() {
            @Override
            public void run() {
                p.session().commit("hello ");
            }
        }, path + ": the predictor is closed");
    }

    @Test
    public void closingTheModelClosesItsEngineButKeepsTheVocabulary() throws Exception {
        final ModelFile m = ModelFile.load(path());
        m.close();
        m.close();
        assertTrue(m.vocab.contains("you"));
        closedError(new Runnable() {
            @Override
            public void run() {
                m.engine.stepFull(Vocabulary.BOS, m.engine.initialState());
            }
        }, path() + ": the model is closed");
        closedError(new Runnable() {
            @Override
            public void run() {
                m.engine.step(Vocabulary.BOS, m.engine.initialState());
            }
        }, path() + ": the model is closed");
    }

    /** Steps running on other threads when the model closes finish with the model's answer; later ones fail. */
    @Test
    public void stepsRunningWhenTheModelClosesFinish() throws Exception {
        final ModelFile m = ModelFile.load(path());
        final float[] expected = m.engine.stepFull(Vocabulary.BOS, m.engine.initialState()).logProbs;
        final AtomicIntegerArray finished = new AtomicIntegerArray(4);
        final AtomicIntegerArray refused = new AtomicIntegerArray(4);
        final AtomicReferenceArray<Throwable> errors = new AtomicReferenceArray<Throwable>(4);
        Thread[] threads = new Thread[4];
        for (int t = 0; t < threads.length; t++) {
            final int id = t;
            threads[t] = new Thread(new Runnable() {
                @Override
                public void run() {
                    try {
                        while (true) {
                            float[] got = m.engine.stepFull(Vocabulary.BOS, m.engine.initialState()).logProbs;
                            if (!java.util.Arrays.equals(expected, got)) throw new AssertionError("a step gave other log-probs");
                            finished.incrementAndGet(id);
                        }
                    } catch (IllegalStateException e) {
                        refused.incrementAndGet(id);
                    } catch (Throwable e) {
                        errors.set(id, e);
                    }
                }
            });
            threads[t].start();
        }
        long deadline = System.currentTimeMillis() + 10000;
        for (int t = 0; t < threads.length; t++) {
            while (finished.get(t) == 0 && errors.get(t) == null && System.currentTimeMillis() < deadline) Thread.sleep(1);
        }
        m.close();
        for (Thread t : threads) t.join(10000);
        for (int t = 0; t < threads.length; t++) {
            if (errors.get(t) != null) throw new AssertionError("thread " + t + ": " + errors.get(t), errors.get(t));
            assertEquals("thread " + t + " stopped at the close", 1, refused.get(t));
            assertTrue("thread " + t + " stepped before the close", finished.get(t) > 0);
        }
    }

    @Test
    public void anEngineThatIsNotCloseableIsLeftAsItIs() throws Exception {
        ModelFile m = FakeEngine.model(20, "a", "b");
        m.close();
        assertEquals(m.vocab.size(), m.engine.stepFull(Vocabulary.BOS, m.engine.initialState()).logProbs.length);
    }
}
