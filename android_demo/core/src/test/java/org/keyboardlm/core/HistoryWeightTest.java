package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.junit.Test;

/**
 * {@link Session#chooseHistoryWeight} and {@link UserHistory#copy()}: the user's history is
 * not changed by a choice but for its weight (byte for byte), nor the session; a copy is
 * independent of its original; equal hit counts go to the smaller weight whatever the order
 * of the weights; bad arguments are refused in one line, changing nothing. The agreement with
 * Python is {@link HistoryWeightGoldenTest}'s.
 */
public class HistoryWeightTest {
    static List<String> words(String text) {
        return Arrays.asList(text.split(" "));
    }

    static List<List<String>> sentences(String... texts) {
        List<List<String>> out = new ArrayList<List<String>>();
        for (String t : texts) out.add(words(t));
        return out;
    }

    static final List<List<String>> HISTORY = sentences("my printer is not working", "the zorblaxen is not connected",
            "is the zorblaxen plugged in", "turn the zorblaxen on", "i think the zorblaxen is broken", "my zorblaxen has no sound");
    static final List<List<String>> HELD_OUT = sentences("my zorblaxen is not working", "turn the zorblaxen on",
            "check the zorblaxen cable");

    /** A small history (half-life 8, at most 12 words, 16 pairs): learning into its copy decays and evicts. */
    static UserHistory small() {
        UserHistory h = new UserHistory(8.0, 12, 16, 2.0);
        for (List<String> s : HISTORY) h.learn(s);
        return h;
    }

    /** The JSON {@code before} (no weight) with {@code weight} set: the weight is the last key. */
    static String withWeight(String before, double weight) {
        assertFalse(before.contains("\"weight\""));
        return before.substring(0, before.length() - 1) + ",\"weight\":" + UserHistory.formatDouble(weight) + "}";
    }

    @Test
    public void aCopyIsTheSameHistoryAndLearningIntoEitherNeverChangesTheOther() throws Exception {
        UserHistory h = small();
        h.setWeight(0.4);
        String before = h.toJson();
        UserHistory c = h.copy();
        assertNotSame(h, c);
        assertEquals("the same state, settings and weight", before, c.toJson());
        assertEquals(h.maxWords, c.maxWords);
        assertEquals(h.halfLife, c.halfLife, 0.0);
        assertEquals(h.topWords(), c.topWords());
        assertEquals(h.distribution("the"), c.distribution("the"));
        for (int i = 0; i < 40; i++) c.learn(words("the zorblaxen w" + (i % 9) + " again"));  // evictions in the copy
        c.setWeight(0.1);
        assertEquals("learning into the copy leaves the original", before, h.toJson());
        String copied = c.toJson();
        h.learn(words("the printer is fine"));
        h.clear();
        assertEquals("learning into (and clearing) the original leaves the copy", copied, c.toJson());
        assertEquals(0, h.copy().numWords());
        assertEquals(null, h.copy().weight());
    }

    @Test
    public void choosingChangesTheHistoryOnlyByItsWeightAndNotTheSession() throws Exception {
        Predictor p = SessionTest.golden();
        UserHistory h = small();
        Session s = p.session(h, true);
        s.commit("turn the");
        String before = h.toJson();
        float[] logProbs = s.logProbs();
        int steps = s.steps();
        List<Suggestion> strip = s.suggestions(3);
        Session.HistoryWeightChoice choice = s.chooseHistoryWeight(HELD_OUT);
        assertEquals("byte for byte the history it was, with the chosen weight", withWeight(before, choice.weight), h.toJson());
        assertEquals(Double.valueOf(choice.weight), h.weight());
        assertEquals("the session uses the user's new weight", choice.weight, s.historyWeight(), 0.0);
        assertEquals("the", s.previousWord());
        assertEquals(steps, s.steps());
        assertArrayEquals(logProbs, s.logProbs(), 0f);
        assertEquals(5 + 4 + 4, choice.words);
        s.setHistoryWeight(Session.HISTORY_WEIGHT);
        PredictorGoldenTest.sameSuggestions("the strip after choosing", strip, s.suggestions(3));
        // Chosen again, with the weight now set: the same hits, and again only the weight differs.
        String set = h.toJson();
        Session.HistoryWeightChoice again = p.session(h, false).chooseHistoryWeight(HELD_OUT);  // a non-learning session may choose
        assertArrayEquals(choice.hits(), again.hits());
        assertEquals(set, h.toJson());
        assertEquals("a weight the session sets still wins in that session", Session.HISTORY_WEIGHT, s.historyWeight(), 0.0);
        double[] emr3 = choice.emr3();
        for (int i = 0; i < emr3.length; i++) assertEquals((double) choice.hits()[i] / choice.words, emr3[i], 0.0);
    }

    @Test
    public void equalHitCountsGoToTheSmallerWeightWhateverTheOrder() throws Exception {
        Predictor p = SessionTest.golden();
        // One word into an empty history: nothing mixes in yet, every weight scores the same.
        double[] descending = {0.5, 0.4, 0.3};
        Session.HistoryWeightChoice tie = p.session(new UserHistory(), true).chooseHistoryWeight(sentences("the"), descending);
        assertEquals(tie.hits()[0], tie.hits()[1]);
        assertEquals(tie.hits()[0], tie.hits()[2]);
        assertEquals(0.3, tie.weight, 0.0);
        assertArrayEquals(descending, tie.weights(), 0.0);
        // Real differences (the golden case where three weights share the most hits): the most hits
        // win, equal counts the smaller weight, in any order of the weights.
        java.util.Map<String, Object> same = GoldenJson.object(GoldenJson.array(HistoryWeightGoldenTest.golden().get("cases")).get(0));
        List<List<String>> history = HistoryWeightGoldenTest.sentences(same.get("history"));
        List<List<String>> heldOut = HistoryWeightGoldenTest.sentences(same.get("held_out"));
        Session.HistoryWeightChoice up = p.session(HistoryWeightGoldenTest.learnt(history), true).chooseHistoryWeight(heldOut);
        double[] down = Session.HISTORY_WEIGHTS.clone();
        for (int i = 0; i < down.length / 2; i++) {
            double t = down[i];
            down[i] = down[down.length - 1 - i];
            down[down.length - 1 - i] = t;
        }
        UserHistory h = HistoryWeightGoldenTest.learnt(history);
        Session.HistoryWeightChoice reversed = p.session(h, true).chooseHistoryWeight(heldOut, down);
        int most = 0;
        for (int x : up.hits()) most = Math.max(most, x);
        double smallest = 2;
        int best = 0;
        for (int i = 0; i < up.hits().length; i++) {
            assertEquals(up.hits()[i], reversed.hits()[up.hits().length - 1 - i]);
            if (up.hits()[i] == most) {
                best++;
                smallest = Math.min(smallest, Session.HISTORY_WEIGHTS[i]);
            }
        }
        assertEquals(smallest, up.weight, 0.0);
        assertEquals(smallest, reversed.weight, 0.0);
        assertEquals(Double.valueOf(smallest), h.weight());
        assertTrue("several weights share the most hits: " + up, best >= 2 && smallest > 0);
    }

    static void refused(String where, Class<? extends RuntimeException> type, String message, Runnable call) {
        try {
            call.run();
            fail(where + ": must be refused");
        } catch (RuntimeException e) {
            assertEquals(where + ": " + e, type, e.getClass());
            assertTrue(where + ": " + e.getMessage(), e.getMessage().startsWith(message));
            assertFalse(where + ": one line", e.getMessage().contains("\n"));
        }
    }

    @Test
    public void badArgumentsAreRefusedInOneLineChangingNothing() throws Exception {
        Predictor p = SessionTest.golden();
        final Session none = p.session();
        refused("no history", IllegalStateException.class, "chooseHistoryWeight needs a user history", new Runnable() {
            public void run() {
                none.chooseHistoryWeight(HELD_OUT);
            }
        });
        final UserHistory h = small();
        final String before = h.toJson();
        final Session s = p.session(h, true);
        String range = "history weights must be numbers in [0, 1], got ";
        final double[][] badWeights = {{}, null, {0.1, 1.5}, {-0.1}, {Double.NaN}};
        String[] shown = {"[]", "[]", "[0.1, 1.5]", "[-0.1]", "[NaN]"};
        for (int i = 0; i < badWeights.length; i++) {
            final double[] ws = badWeights[i];
            refused("weights " + shown[i], IllegalArgumentException.class, range + shown[i], new Runnable() {
                public void run() {
                    s.chooseHistoryWeight(HELD_OUT, ws);
                }
            });
        }
        refused("a weight twice", IllegalArgumentException.class, "history weights must differ, got [0.1, 0.2, 0.1]", new Runnable() {
            public void run() {
                s.chooseHistoryWeight(HELD_OUT, new double[] {0.1, 0.2, 0.1});
            }
        });
        final List<List<List<String>>> noWords = Arrays.asList(Collections.<List<String>>emptyList(),
                Arrays.asList(Collections.<String>emptyList(), Collections.<String>emptyList()));
        for (final List<List<String>> held : noWords) {
            refused("no word in " + held, IllegalArgumentException.class,
                    "chooseHistoryWeight needs held-out text with at least one word", new Runnable() {
                        public void run() {
                            s.chooseHistoryWeight(held);
                        }
                    });
        }
        refused("null sentences", IllegalArgumentException.class, "sentences must not be null", new Runnable() {
            public void run() {
                s.chooseHistoryWeight(null);
            }
        });
        refused("a null sentence", IllegalArgumentException.class, "sentence 1 is null", new Runnable() {
            public void run() {
                s.chooseHistoryWeight(Arrays.asList(words("hello"), null));
            }
        });
        refused("a null word", IllegalArgumentException.class, "sentence 0 holds a null word", new Runnable() {
            public void run() {
                s.chooseHistoryWeight(Arrays.asList(Arrays.asList("hello", null)));
            }
        });
        assertEquals("nothing changed", before, h.toJson());
        assertEquals(null, h.weight());
        assertEquals(6, Session.HISTORY_WEIGHTS.length);
        assertEquals(0.5, Session.HISTORY_WEIGHTS[5], 0.0);
    }
}
