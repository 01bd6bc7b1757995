package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.Test;

/**
 * The Java step engine reproduces the Python predictor on every committed golden model
 * (tests/golden/predictor_fixture.json, written by tests/golden/make_fixtures.py): the
 * top-3 ids exactly and the raw log-probs to 1e-4, for every context and prefix completion.
 * tests/test_android_core.py passes the fixture's path as the system property kblm.fixture;
 * the models are read from models/ beside it.
 *
 * Contexts are replayed as keyboard_lm/inference/predictor.py's Session does: a sentence
 * starts with step_full(&lt;bos&gt;) from the zero state, each word is one step_full, a
 * terminator run starts a new sentence, and the state restarts from zeros after seq_len
 * inputs in a sentence (&lt;bos&gt; counts).
 */
public class StepEngineGoldenTest {
    static final double TOLERANCE = 1e-4;
    static final int BOS = 1;
    static final int OOV = 3;
    static final int FIRST_WORD = 4;  // ids 0..3 are the special tokens, never suggested

    static String fixturePath() {
        String path = System.getProperty("kblm.fixture");
        assertTrue("system property kblm.fixture names tests/golden/predictor_fixture.json", path != null);
        return path;
    }

    static File modelFile(String name) {
        return new File(new File(fixturePath()).getParentFile(), "models" + File.separator + name);
    }

    /** The Python Session, reduced to what the fixture needs: the log-probs after committed text. */
    static final class Replay {
        final StepEngine engine;
        final Map<String, Integer> ids = new HashMap<String, Integer>();
        final int seqLen;
        float[] logProbs;
        float[] state;
        float[] stateBefore;
        int lastToken;
        int inputsInChunk;

        Replay(StepEngine engine, ModelArchive archive) {
            this.engine = engine;
            this.seqLen = archive.seqLen;
            for (int i = 0; i < archive.vocab.size(); i++) ids.put(archive.vocab.get(i), i);
            reset();
        }

        void advance(int token, float[] from) {
            stateBefore = from;
            lastToken = token;
            StepEngine.FullStep s = engine.stepFull(token, from);
            logProbs = s.logProbs;
            state = s.state;
        }

        void reset() {
            advance(BOS, engine.initialState());
            inputsInChunk = 1;
        }

        void commitWord(String word) {
            if (inputsInChunk == seqLen) {
                state = engine.initialState();
                inputsInChunk = 0;
            }
            Integer id = ids.get(word);
            advance(id == null ? OOV : id, state);
            inputsInChunk++;
        }

        void commit(String text) {
            for (TextSpec.Item item : TextSpec.scan(text)) {
                if (item.end) reset();
                else commitWord(item.text);
            }
        }
    }

    /** Ids by log-prob descending, ties by id ascending. */
    static List<Integer> top(final float[] logProbs, List<Integer> candidates, int k) {
        List<Integer> order = new ArrayList<Integer>(candidates);
        Collections.sort(order, new Comparator<Integer>() {
            @Override
            public int compare(Integer a, Integer b) {
                int c = Float.compare(logProbs[b], logProbs[a]);
                return c != 0 ? c : Integer.compare(a, b);
            }
        });
        return order.subList(0, Math.min(k, order.size()));
    }

    static String strip(String s) {
        int a = 0;
        int b = s.length();
        while (a < b && Character.isWhitespace(s.charAt(a))) a++;
        while (b > a && Character.isWhitespace(s.charAt(b - 1))) b--;
        return s.substring(a, b);
    }

    /** Compares one fixture item; returns the largest |log-prob difference|. */
    static double check(String where, Map<String, Object> item, float[] logProbs, List<Integer> candidates) {
        List<Object> wantIds = GoldenJson.array(item.get("top_ids"));
        List<Object> wantLogProbs = GoldenJson.array(item.get("top_log_probs"));
        List<Integer> got = top(logProbs, candidates, wantIds.size());
        List<Integer> want = new ArrayList<Integer>();
        for (Object o : wantIds) want.add(((Double) o).intValue());
        double worst = 0;
        StringBuilder detail = new StringBuilder();
        for (int i = 0; i < want.size(); i++) {
            double w = (Double) wantLogProbs.get(i);
            detail.append(String.format(" %d:%.6f/%.6f", want.get(i), w, logProbs[want.get(i)]));
            worst = Math.max(worst, Math.abs(logProbs[want.get(i)] - w));
        }
        assertEquals(where + " top ids (python/java log-probs:" + detail + ")", want, got);
        assertTrue(where + " log-probs differ by " + worst + " (python/java:" + detail + ")", worst <= TOLERANCE);
        return worst;
    }

    @Test
    public void reproducesThePythonPredictorsTop3IdsAndLogProbsOnEveryCommittedModel() throws Exception {
        Map<String, Object> fixture = GoldenJson.object(GoldenJson.read(fixturePath()));
        Map<String, Object> models = GoldenJson.object(fixture.get("models"));
        assertTrue("the fixture lists models", models.size() >= 8);
        StringBuilder report = new StringBuilder();
        for (Map.Entry<String, Object> e : models.entrySet()) {
            String path = modelFile(e.getKey()).getPath();
            Map<String, Object> entry = GoldenJson.object(e.getValue());
            ModelArchive archive = ModelArchive.load(path);
            JavaStepEngine engine = JavaStepEngine.load(path);
            assertEquals(path, ((Double) entry.get("vocab_size")).intValue(), engine.vocabSize());
            assertEquals(path, ((Double) entry.get("seq_len")).intValue(), archive.seqLen);
            List<Integer> words = new ArrayList<Integer>();
            for (int i = FIRST_WORD; i < engine.vocabSize(); i++) words.add(i);
            double worst = 0;
            int items = 0;
            for (Object o : GoldenJson.array(entry.get("contexts"))) {
                Map<String, Object> item = GoldenJson.object(o);
                Replay r = new Replay(engine, archive);
                r.commit((String) item.get("context"));
                worst = Math.max(worst, check(e.getKey() + " context \"" + item.get("context") + "\"", item, r.logProbs, words));
                items++;
            }
            for (Object o : GoldenJson.array(entry.get("completions"))) {
                Map<String, Object> item = GoldenJson.object(o);
                Replay r = new Replay(engine, archive);
                r.commit((String) item.get("context"));
                String prefix = strip(TextSpec.normalize((String) item.get("prefix")));
                List<Integer> candidates = new ArrayList<Integer>();
                for (int i : words) {
                    if (archive.vocab.get(i).startsWith(prefix)) candidates.add(i);
                }
                worst = Math.max(worst, check(e.getKey() + " completion \"" + item.get("context") + "\" + \""
                        + item.get("prefix") + "\"", item, r.logProbs, candidates));
                items++;
            }
            report.append(String.format("%n  %-30s %2d items, top-3 ids exact, max |log-prob diff| %.2e", e.getKey(), items, worst));
        }
        System.out.println("StepEngine vs Python predictor fixture:" + report);
    }

    @Test
    public void stepSignatureAgreesWithTheTop3OfTheFullDistribution() throws Exception {
        Map<String, Object> models = GoldenJson.object(GoldenJson.object(GoldenJson.read(fixturePath())).get("models"));
        for (String name : models.keySet()) {
            String path = modelFile(name).getPath();
            JavaStepEngine engine = JavaStepEngine.load(path);
            Replay r = new Replay(engine, ModelArchive.load(path));
            r.commit("i think that you are a very good friend and i would like to know what you do");
            StepEngine.TopStep s = engine.step(r.lastToken, r.stateBefore);
            List<Integer> words = new ArrayList<Integer>();
            for (int i = FIRST_WORD; i < engine.vocabSize(); i++) words.add(i);
            List<Integer> want = top(r.logProbs, words, engine.topK());
            assertEquals(name, engine.topK(), s.ids.length);
            for (int i = 0; i < want.size(); i++) {
                assertEquals(name + " rank " + i, (int) want.get(i), s.ids[i]);
                assertEquals(name + " rank " + i, r.logProbs[want.get(i)], s.logProbs[i], 0f);
            }
            assertArrayEquals(name + " state", r.state, s.state, 0f);
        }
    }

    @Test
    public void stateSizeMatchesTheModelMetadata() throws Exception {
        Map<String, Object> models = GoldenJson.object(GoldenJson.object(GoldenJson.read(fixturePath())).get("models"));
        for (String name : models.keySet()) {
            String path = modelFile(name).getPath();
            ModelArchive archive = ModelArchive.load(path);
            JavaStepEngine engine = JavaStepEngine.load(path);
            assertEquals(name, (int) ModelArchive.intField(archive.metadataJson, "state_size"), engine.stateSize());
            assertEquals(name, archive.vocab.size(), engine.vocabSize());
            assertEquals(name, (int) ModelArchive.intField(archive.metadataJson, "top_k"), engine.topK());
        }
    }
}
