package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.junit.Test;

/**
 * The Java Predictor and Session reproduce the Python predictor on every committed golden
 * model (tests/golden/predictor_fixture.json): for every context and prefix completion, the
 * top-3 ids and words exactly and the log-probs to 1e-4, through the public API itself
 * ({@link Session#commit}, {@link Session#suggestions}, {@link Session#complete}); the
 * stateless {@link Predictor#suggest}/{@link Predictor#complete} and the keyboard's
 * {@link TextField} give the same answers.
 */
public class PredictorGoldenTest {
    static final double TOLERANCE = 1e-4;

    /** Compares one fixture item with the Java result; returns the largest |log-prob difference|. */
    static double check(String where, Map<String, Object> item, List<Suggestion> got) {
        List<Object> ids = GoldenJson.array(item.get("top_ids"));
        List<Object> words = GoldenJson.array(item.get("top_words"));
        List<Object> logProbs = GoldenJson.array(item.get("top_log_probs"));
        List<Integer> wantIds = new ArrayList<Integer>();
        for (Object o : ids) wantIds.add(((Double) o).intValue());
        List<Integer> gotIds = new ArrayList<Integer>();
        for (Suggestion s : got) gotIds.add(s.id);
        assertEquals(where + " top ids " + got, wantIds, gotIds);
        double worst = 0;
        for (int i = 0; i < got.size(); i++) {
            assertEquals(where + " word " + i, words.get(i), got.get(i).word);
            worst = Math.max(worst, Math.abs(got.get(i).logProb - (Double) logProbs.get(i)));
        }
        assertTrue(where + " log-probs differ by " + worst + ": " + got, worst <= TOLERANCE);
        return worst;
    }

    static void sameSuggestions(String where, List<Suggestion> want, List<Suggestion> got) {
        assertEquals(where, want.size(), got.size());
        for (int i = 0; i < want.size(); i++) {
            assertEquals(where + " id " + i, want.get(i).id, got.get(i).id);
            assertEquals(where + " log-prob " + i, want.get(i).logProb, got.get(i).logProb, 0f);
        }
    }

    @Test
    public void sessionReproducesThePythonPredictorOnEveryCommittedModel() throws Exception {
        Map<String, Object> fixture = GoldenJson.object(GoldenJson.read(StepEngineGoldenTest.fixturePath()));
        int k = ((Double) fixture.get("k")).intValue();
        Map<String, Object> models = GoldenJson.object(fixture.get("models"));
        assertTrue("the fixture lists models", models.size() >= 8);
        StringBuilder report = new StringBuilder();
        for (Map.Entry<String, Object> e : models.entrySet()) {
            String path = StepEngineGoldenTest.modelFile(e.getKey()).getPath();
            Map<String, Object> entry = GoldenJson.object(e.getValue());
            Predictor p = Predictor.load(path, Collections.<String>emptyList());
            assertEquals(path, ((Double) entry.get("seq_len")).intValue(), p.model.seqLen);
            double worst = 0;
            int items = 0;
            for (Object o : GoldenJson.array(entry.get("contexts"))) {
                Map<String, Object> item = GoldenJson.object(o);
                String context = (String) item.get("context");
                String where = e.getKey() + " context \"" + context + "\"";
                Session s = p.session();
                s.commit(context);
                List<Suggestion> got = s.suggestions(k);
                worst = Math.max(worst, check(where, item, got));
                sameSuggestions(where + " Predictor.suggest", got, p.suggest(context, k));
                TextField field = new TextField(p);
                sameSuggestions(where + " TextField", got, field.update(context + " ").ranked);
                items++;
            }
            for (Object o : GoldenJson.array(entry.get("completions"))) {
                Map<String, Object> item = GoldenJson.object(o);
                String context = (String) item.get("context");
                String prefix = (String) item.get("prefix");
                String where = e.getKey() + " completion \"" + context + "\" + \"" + prefix + "\"";
                Session s = p.session();
                s.commit(context);
                List<Suggestion> got = s.complete(prefix, k);
                worst = Math.max(worst, check(where, item, got));
                sameSuggestions(where + " Predictor.complete", got, p.complete(context, prefix, k));
                TextField field = new TextField(p);
                TextField.Strip strip = field.update(context + " " + prefix);
                assertTrue(where, strip.completing);
                sameSuggestions(where + " TextField", got, strip.ranked);
                items++;
            }
            report.append(String.format("%n  %-30s %2d items, top-3 ids exact, max |log-prob diff| %.2e", e.getKey(), items, worst));
        }
        System.out.println("Session vs Python predictor fixture:" + report);
    }
}
