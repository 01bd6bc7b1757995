package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

import org.junit.Test;

/**
 * {@link Session#chooseHistoryWeight} reproduces Python's {@code Session.choose_history_weight}
 * (tests/golden/history_weight_vectors.json, written by
 * tests/golden/make_history_weight_vectors.py, handed over as -Dkblm.historyweight): on the
 * golden model, a history that learnt the case's sentences and the case's held-out sentences
 * give every weight the same number of hits, the same number of words and the same chosen
 * weight, which is set on the history. On a difference, the message names the first word and
 * weight where the suggestions differ from Python's (the file's trace).
 */
public class HistoryWeightGoldenTest {
    static Map<String, Object> golden() throws Exception {
        String path = System.getProperty("kblm.historyweight");
        assertTrue("system property kblm.historyweight names tests/golden/history_weight_vectors.json", path != null);
        return GoldenJson.object(GoldenJson.read(path));
    }

    static List<List<String>> sentences(Object o) {
        List<List<String>> out = new ArrayList<List<String>>();
        for (Object sentence : GoldenJson.array(o)) {
            List<String> words = new ArrayList<String>();
            for (Object w : GoldenJson.array(sentence)) words.add((String) w);
            out.add(words);
        }
        return out;
    }

    /** A default history that learnt {@code sentences} in order (as the generator's). */
    static UserHistory learnt(List<List<String>> sentences) {
        UserHistory h = new UserHistory();
        for (List<String> s : sentences) h.learn(s);
        return h;
    }

    /** Where the Java suggestions first differ from the trace Python wrote: "" when they never do. */
    static String firstDifference(Predictor p, List<List<String>> history, List<List<String>> heldOut, Map<String, Object> c) {
        List<Object> trace = GoldenJson.array(c.get("trace"));
        Session s = p.session(0, learnt(history), true);
        int i = 0;
        for (List<String> sentence : heldOut) {
            s.reset();
            for (String word : sentence) {
                Map<String, Object> step = GoldenJson.object(trace.get(i));
                Map<String, Object> top3 = GoldenJson.object(step.get("top3"));
                for (double w : Session.HISTORY_WEIGHTS) {
                    s.setHistoryWeight(w);
                    List<String> got = new ArrayList<String>();
                    for (Suggestion x : s.suggestions(Session.HISTORY_WEIGHT_K)) got.add(x.word);
                    Object want = top3.get(UserHistory.formatDouble(w));
                    if (!got.equals(want)) {
                        return "word " + i + " '" + word + "' at weight " + w + ": Python " + want + ", Java " + got;
                    }
                }
                s.commitWord(word);
                i++;
            }
        }
        return "";
    }

    @Test
    public void theJavaChoiceCountsThePythonHitsAndChoosesThePythonWeight() throws Exception {
        Map<String, Object> g = golden();
        assertEquals("the same weights as Python's HISTORY_WEIGHTS", GoldenJson.array(g.get("weights")).size(), Session.HISTORY_WEIGHTS.length);
        for (int i = 0; i < Session.HISTORY_WEIGHTS.length; i++) {
            assertEquals("weight " + i, (Double) GoldenJson.array(g.get("weights")).get(i), Session.HISTORY_WEIGHTS[i], 0.0);
        }
        assertEquals(Session.HISTORY_WEIGHT_K, ((Double) g.get("k")).intValue());
        Predictor p = Predictor.load(StepEngineGoldenTest.modelFile((String) g.get("model")).getPath(), Collections.<String>emptyList());
        int cases = 0;
        StringBuilder report = new StringBuilder();
        for (Object o : GoldenJson.array(g.get("cases"))) {
            Map<String, Object> c = GoldenJson.object(o);
            String where = (String) c.get("name");
            List<List<String>> history = sentences(c.get("history"));
            List<List<String>> heldOut = sentences(c.get("held_out"));
            UserHistory h = learnt(history);
            Session s = p.session(h, true);
            Session.HistoryWeightChoice choice = s.chooseHistoryWeight(heldOut);
            List<Object> wantHits = GoldenJson.array(c.get("hits"));
            int[] want = new int[wantHits.size()];
            for (int i = 0; i < want.length; i++) want[i] = ((Double) wantHits.get(i)).intValue();
            String diff = "";
            if (!java.util.Arrays.equals(want, choice.hits())) diff = firstDifference(p, history, heldOut, c);
            assertArrayEquals(where + ": hits per weight (" + choice + "); " + diff, want, choice.hits());
            assertEquals(where + " words", ((Double) c.get("words")).intValue(), choice.words);
            assertEquals(where + " chosen weight", (Double) c.get("weight"), choice.weight, 0.0);
            assertEquals(where + ": the weight is set on the history", (Double) c.get("weight"), h.weight());
            assertEquals(where + ": the history learnt nothing", learnt(history).clock(), h.clock());
            report.append(String.format("%n  %-10s %s", where, choice));
            cases++;
        }
        assertTrue("the golden file has cases", cases >= 2);
        System.out.println("Session.chooseHistoryWeight vs Python:" + report);
    }
}
