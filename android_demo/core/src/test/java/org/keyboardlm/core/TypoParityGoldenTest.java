package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.junit.BeforeClass;
import org.junit.Test;

/**
 * Words typed with typos complete in Java as the Python predictor completes them: for every case of
 * tests/golden/typo_fixture.json (written by tests/golden/make_typo_fixture.py over the demo
 * keyboard's model), the same typo prefixes with the same factors, and the same strip (words in
 * order, scores within {@link PhraseParityGoldenTest#TOLERANCE}) from a {@link Session} with the
 * case's blocklist and user history, from the stateless {@link Predictor#complete} with and without
 * the prefix cache, and from the keyboard's {@link TextField}. The QWERTY neighbours and the
 * channel's log factors are Python's exactly (a tie between two candidates is broken the same way).
 */
public class TypoParityGoldenTest {
    private static Map<String, Object> fixture;
    private static ModelFile model;

    @BeforeClass
    public static void load() throws Exception {
        fixture = GoldenJson.object(GoldenJson.read(PhraseParityGoldenTest.golden("typo_fixture.json").getPath()));
        File path = PhraseParityGoldenTest.golden((String) fixture.get("model"));
        assertTrue(path + " (the demo keyboard's model) exists", path.isFile());
        model = ModelFile.load(path.getPath());
    }

    private static final Map<String, Predictor> PREDICTORS = new HashMap<String, Predictor>();

    private static Predictor predictor(List<String> blocklist, int prefixCache) {
        String key = blocklist + " " + prefixCache;
        Predictor p = PREDICTORS.get(key);
        if (p == null) {
            p = new Predictor(model, blocklist, prefixCache, TypoModel.DEFAULT);
            PREDICTORS.put(key, p);
        }
        return p;
    }

    @Test
    public void theNeighboursAndTheChannelAreThePythonOnes() {
        Map<String, Object> neighbours = GoldenJson.object(fixture.get("neighbours"));
        assertEquals(26, neighbours.size());
        for (Map.Entry<String, Object> e : neighbours.entrySet()) {
            StringBuilder near = new StringBuilder();
            for (char b = 'a'; b <= 'z'; b++) if (TypoIndex.neighbours(e.getKey().charAt(0), b)) near.append(b);
            assertEquals("neighbours of " + e.getKey(), e.getValue(), near.toString());
        }
        Map<String, Object> m = GoldenJson.object(fixture.get("typo_model"));
        TypoModel d = TypoModel.DEFAULT;
        double[] java = {d.nearSubstitution, d.farSubstitution, d.transposition, d.omission, d.nearInsertion, d.farInsertion};
        String[] names = {"near_substitution", "far_substitution", "transposition", "omission", "near_insertion", "far_insertion"};
        Map<String, Object> logs = GoldenJson.object(m.get("logs"));
        for (int i = 0; i < names.length; i++) {
            assertEquals(names[i], (Double) m.get(names[i]), java[i], 0.0);
            assertEquals("ln " + names[i], (Double) logs.get(names[i]), Math.log(java[i]), 0.0);
        }
        assertEquals(((Double) m.get("min_letters")).intValue(), d.minLetters);
        assertEquals(((Double) m.get("far_min_letters")).intValue(), d.farMinLetters);
    }

    private static UserHistory history(Map<String, Object> c) {
        return PhraseParityGoldenTest.history(c);
    }

    @Test
    public void wordsTypedWithTyposCompleteAsInThePythonSession() {
        List<Object> cases = GoldenJson.array(fixture.get("cases"));
        assertTrue("the fixture has cases", cases.size() >= 20);
        double worst = 0;
        int stateless = 0;
        for (Object o : cases) {
            Map<String, Object> c = GoldenJson.object(o);
            String where = "\"" + c.get("name") + "\"";
            List<String> blocklist = PhraseParityGoldenTest.strings(c.get("blocklist"));
            String context = (String) c.get("context");
            String typed = (String) c.get("typed");
            int k = PhraseParityGoldenTest.k(c);
            Predictor p = predictor(blocklist, PrefixCache.DEFAULT_SIZE);

            Completion completion = p.ranker.completion(Session.strip(TextSpec.normalize(typed)));
            List<Object> want = GoldenJson.array(c.get("typos"));
            assertEquals(where + " typo prefixes " + describe(p, completion), want.size(), completion.typos.size());
            for (int i = 0; i < want.size(); i++) {
                List<Object> pair = GoldenJson.array(want.get(i));
                TypoIndex.Prefix got = completion.typos.get(i);
                assertEquals(where + " typo prefix " + i, pair.get(0), p.ranker.typoText(got));
                assertEquals(where + " factor of " + pair.get(0), (Double) pair.get(1), got.factor, 0.0);
            }

            Session s = p.session(history(c), false);
            s.commit(context);
            worst = Math.max(worst, PhraseParityGoldenTest.same(where, c.get("words"), c.get("probabilities"), s.complete(typed, k)));
            if (c.get("history") != null) continue;
            for (int cache : new int[] {PrefixCache.DEFAULT_SIZE, 0}) {
                List<Suggestion> call = predictor(blocklist, cache).complete(context, typed, k);
                worst = Math.max(worst, PhraseParityGoldenTest.same(where + " stateless, cache " + cache, c.get("words"),
                        c.get("probabilities"), call));
            }
            if (k == TextField.SLOTS && typed.trim().equals(typed)) {
                String text = context.isEmpty() || context.endsWith(" ") ? context + typed : context + " " + typed;
                TextField.Strip field = new TextField(p).update(text);
                worst = Math.max(worst, PhraseParityGoldenTest.same(where + " TextField", c.get("words"), c.get("probabilities"),
                        field.ranked));
            }
            stateless++;
        }
        System.out.println(String.format("Session with typos vs Python fixture: %d cases (%d also stateless and in a TextField), "
                + "words exact, max |probability diff| %.2e", cases.size(), stateless, worst));
    }

    private static String describe(Predictor p, Completion c) {
        List<String> out = new ArrayList<String>();
        for (TypoIndex.Prefix x : c.typos) out.add(p.ranker.typoText(x) + "=" + x.factor);
        return out.toString();
    }

    /** The demo keyboard's strip (a TextField, as the app ranks it) puts the intended word beside the letters typed. */
    @Test
    public void theDemoStripCorrectsTheTyposUsersMet() {
        Predictor p = predictor(new ArrayList<String>(), PrefixCache.DEFAULT_SIZE);
        String[][] examples = {{"see you at the weke", "week", "weeks"}, {"i think teh", "the", "the"},
                {"going to the sotre", "store", "store"}};
        for (String[] e : examples) {
            TextField field = new TextField(p, new UserHistory());
            String[] slots = field.update(e[0]).slots();
            List<String> shown = Arrays.asList(slots);
            assertTrue(e[0] + " -> " + shown, shown.contains(e[1]) || shown.contains(e[2]));
            String typed = e[0].substring(e[0].lastIndexOf(' ') + 1);
            assertTrue(e[0] + ": the letters as typed stay in the strip " + shown, shown.contains(typed));
        }
        Predictor off = new Predictor(model, new ArrayList<String>(), PrefixCache.DEFAULT_SIZE, null);
        String[] slots = new TextField(off).update("going to the sotre").slots();
        assertArrayEquals("without typos the strip matches the letters as typed only", new String[3], slots);
    }

    /** A kept typed word outside the vocabulary is the user's, not a history word: the history's showing rule does not hide it. */
    @Test
    public void theLettersAsTypedShowBesideACorrectionInAFieldWithAHistory() {
        Predictor p = predictor(new ArrayList<String>(), PrefixCache.DEFAULT_SIZE);
        UserHistory h = new UserHistory();
        h.learnWord(null, "zorblax");  // typed once: a history word the field does not show yet
        TextField field = new TextField(p, h);
        List<Suggestion> ranked = field.update("going to the sotre").ranked;
        assertEquals("sotre", ranked.get(ranked.size() - 1).word);
        assertTrue(ranked.get(ranked.size() - 1).typed);
        assertFalse(ranked.get(0).typed);
    }

    @Test
    public void aTypoModelRefusesFactorsOutOfRange() {
        double[][] bad = {{0, 0.1, 0.1, 0.1, 0.1, 0.1}, {0.1, 1, 0.1, 0.1, 0.1, 0.1}, {0.1, 0.1, Double.NaN, 0.1, 0.1, 0.1},
                {0.1, 0.1, 0.1, -0.1, 0.1, 0.1}};
        for (double[] f : bad) {
            try {
                new TypoModel(f[0], f[1], f[2], f[3], f[4], f[5], 3, 5);
                fail("accepted " + Arrays.toString(f));
            } catch (IllegalArgumentException expected) {
                assertTrue(expected.getMessage(), expected.getMessage().startsWith("typo model "));
            }
        }
        for (int letters : new int[] {1, TypoIndex.MAX_LETTERS + 1}) {
            try {
                new TypoModel(0.02, 0.002, 0.02, 0.01, 0.01, 0.005, letters, 5);
                fail("accepted minLetters " + letters);
            } catch (IllegalArgumentException expected) {
                assertTrue(expected.getMessage().contains("minLetters"));
            }
        }
        for (int letters : new int[] {1, TypoIndex.MAX_LETTERS + 2}) {
            try {
                new TypoModel(0.02, 0.002, 0.02, 0.01, 0.01, 0.005, 3, letters);
                fail("accepted farMinLetters " + letters);
            } catch (IllegalArgumentException expected) {
                assertTrue(expected.getMessage().contains("farMinLetters"));
            }
        }
    }
}
