package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.Test;

/**
 * A model file with a phrase table ranks in Java as the Python predictor ranks it: for every case
 * of tests/golden/phrase_fixture.json (written by tests/golden/make_phrase_fixture.py over
 * tests/golden/phrases/cifg_phrases.tflite), the same words in the same order and probabilities
 * within {@link #TOLERANCE}, through a streaming {@link Session} (with the case's blocklist and
 * user history), the stateless {@link Predictor#suggest}/{@link Predictor#complete} (with and
 * without the prefix cache) and the keyboard's {@link TextField}; the table's entry at each
 * position is Python's. The same cases over the golden model without a table give Python's
 * strips without it. The fixture is found beside kblm.fixture (tests/golden/).
 */
public class PhraseParityGoldenTest {
    /** Largest |probability difference| allowed: the engines' log-probs agree to about 1e-6. */
    static final double TOLERANCE = 1e-5;

    static File golden(String relative) {
        return new File(new File(StepEngineGoldenTest.fixturePath()).getParentFile(), relative);
    }

    static Map<String, Object> fixture() throws Exception {
        return GoldenJson.object(GoldenJson.read(golden("phrase_fixture.json").getPath()));
    }

    static List<String> strings(Object o) {
        List<String> out = new ArrayList<String>();
        if (o != null) for (Object x : GoldenJson.array(o)) out.add((String) x);
        return out;
    }

    /** The user history the case learnt: each sentence from its start, word after word. */
    static UserHistory history(Map<String, Object> c) {
        if (c.get("history") == null) return null;
        UserHistory h = new UserHistory();
        for (Object sentence : GoldenJson.array(c.get("history"))) {
            String prev = null;
            for (String word : strings(sentence)) {
                h.learnWord(prev, word);
                prev = word;
            }
        }
        return h;
    }

    static int k(Map<String, Object> c) {
        return ((Double) c.get("k")).intValue();
    }

    /** The case's strip from a fresh session of {@code p} that committed its context. */
    static Session sessionAt(Predictor p, Map<String, Object> c) {
        Session s = p.session(history(c), false);
        s.commit((String) c.get("context"));
        return s;
    }

    static List<Suggestion> strip(Session s, Map<String, Object> c) {
        String prefix = (String) c.get("prefix");
        return prefix == null ? s.suggestions(k(c)) : s.complete(prefix, k(c));
    }

    /** Asserts the words and probabilities of {@code want} (fixture lists); returns the largest |difference|. */
    static double same(String where, Object wantWords, Object wantProbabilities, List<Suggestion> got) {
        List<String> words = new ArrayList<String>();
        for (Suggestion s : got) words.add(s.word);
        assertEquals(where + " words " + got, strings(wantWords), words);
        List<Object> probabilities = GoldenJson.array(wantProbabilities);
        double worst = 0;
        for (int i = 0; i < got.size(); i++) {
            worst = Math.max(worst, Math.abs(got.get(i).probability() - (Double) probabilities.get(i)));
        }
        assertTrue(where + " probabilities differ by " + worst + ": " + got, worst <= TOLERANCE);
        return worst;
    }

    private static Predictor predictor(Map<String, Predictor> cache, File model, List<String> blocklist, int prefixCache)
            throws ModelFileException {
        String key = model.getName() + " " + blocklist + " " + prefixCache;
        Predictor p = cache.get(key);
        if (p == null) {
            p = Predictor.load(model.getPath(), blocklist, prefixCache);
            cache.put(key, p);
        }
        return p;
    }

    @Test
    public void aModelWithAPhraseTableRanksAsThePythonPredictor() throws Exception {
        Map<String, Object> fixture = fixture();
        File model = golden((String) fixture.get("model"));
        Map<String, Predictor> predictors = new HashMap<String, Predictor>();
        List<Object> cases = GoldenJson.array(fixture.get("cases"));
        assertTrue("the fixture has cases", cases.size() >= 20);
        double worst = 0;
        int matched = 0;
        int stateless = 0;
        for (Object o : cases) {
            Map<String, Object> c = GoldenJson.object(o);
            String where = "\"" + c.get("name") + "\"";
            List<String> blocklist = strings(c.get("blocklist"));
            Predictor p = predictor(predictors, model, blocklist, PrefixCache.DEFAULT_SIZE);
            Session s = sessionAt(p, c);
            List<Suggestion> got = strip(s, c);
            worst = Math.max(worst, same(where, c.get("words"), c.get("probabilities"), got));

            Ranker.PhraseMatch match = s.phraseMatch();
            double weight = (Double) c.get("weight");
            if (weight == 0) {
                assertNull(where + " has no table entry with a say", match);
            } else {
                Map<String, Object> stored = GoldenJson.object(c.get("stored"));
                assertNotNull(where + " matches a stored context", match);
                assertEquals(where + " context length", ((Double) stored.get("n")).intValue(), match.entry.n);
                assertEquals(where + " users", ((Double) stored.get("users")).intValue(), match.entry.users);
                assertEquals(where + " weight", weight, match.weight, 0.0);
                matched++;
            }
            if (c.get("history") != null) continue;
            String context = (String) c.get("context");
            String prefix = (String) c.get("prefix");
            for (int cache : new int[] {PrefixCache.DEFAULT_SIZE, 0}) {
                Predictor q = predictor(predictors, model, blocklist, cache);
                List<Suggestion> call = prefix == null ? q.suggest(context, k(c)) : q.complete(context, prefix, k(c));
                worst = Math.max(worst, same(where + " stateless, cache " + cache, c.get("words"), c.get("probabilities"), call));
            }
            if (k(c) == TextField.SLOTS) {
                TextField.Strip field = new TextField(p).update(context + " " + (prefix == null ? "" : prefix));
                worst = Math.max(worst, same(where + " TextField", c.get("words"), c.get("probabilities"), field.ranked));
            }
            stateless++;
        }
        assertTrue("most cases match a stored context", matched > cases.size() / 2);
        System.out.println(String.format("Session with a phrase table vs Python fixture: %d cases (%d with a table match, "
                + "%d also stateless and in a TextField), words exact, max |probability diff| %.2e", cases.size(), matched,
                stateless, worst));
    }

    @Test
    public void theSameModelWithoutATableRanksAsThePythonPredictorWithoutOne() throws Exception {
        Map<String, Object> fixture = fixture();
        File base = golden((String) fixture.get("base_model"));
        Map<String, Predictor> predictors = new HashMap<String, Predictor>();
        double worst = 0;
        for (Object o : GoldenJson.array(fixture.get("cases"))) {
            Map<String, Object> c = GoldenJson.object(o);
            Predictor p = predictor(predictors, base, strings(c.get("blocklist")), PrefixCache.DEFAULT_SIZE);
            assertNull(base + " carries no table", p.model.phrases);
            Session s = sessionAt(p, c);
            assertNull(s.phraseMatch());
            Map<String, Object> plain = GoldenJson.object(c.get("without_table"));
            worst = Math.max(worst, same("\"" + c.get("name") + "\" without a table", plain.get("words"),
                    plain.get("probabilities"), strip(s, c)));
        }
        System.out.println(String.format("Session without the table vs Python fixture: words exact, max |probability diff| %.2e", worst));
    }

    @Test
    public void aRewindRestoresThePhraseContext() throws Exception {
        Predictor p = Predictor.load(golden((String) fixture().get("model")).getPath(), Collections.<String>emptyList());
        Session s = p.session(4);
        s.commit("what is");
        List<Suggestion> before = s.suggestions(3);
        assertNotNull("\"what is\" matches a stored context", s.phraseMatch());
        s.commitWord("zorblaxian");
        s.endSentence();
        s.commitWord("printer");
        assertTrue(s.rewind() && s.rewind() && s.rewind());
        List<Suggestion> again = s.suggestions(3);
        assertEquals(before.size(), again.size());
        for (int i = 0; i < before.size(); i++) {
            assertEquals(before.get(i).word, again.get(i).word);
            assertEquals(before.get(i).score, again.get(i).score, 0.0);
        }
        assertEquals(3, s.phraseMatch().entry.n);
    }
}
