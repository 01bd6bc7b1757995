package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.junit.Test;

/**
 * Session and Predictor behaviour: the state machine (commit word, sentence end, reset,
 * rewind, restart every seq_len inputs), ranking, blocklist, special tokens, completion
 * order, and bad input. Real numbers come from a golden model; the rules a model cannot show
 * (specials ranked first, ties, code point order) from {@link FakeEngine}.
 */
public class SessionTest {
    static Predictor golden(String... blocklist) throws Exception {
        return Predictor.load(StepEngineGoldenTest.modelFile("cifg_dynamic-range.tflite").getPath(), Arrays.asList(blocklist));
    }

    static List<Integer> ids(List<Suggestion> s) {
        List<Integer> out = new ArrayList<Integer>();
        for (Suggestion x : s) out.add(x.id);
        return out;
    }

    static List<String> words(List<Suggestion> s) {
        List<String> out = new ArrayList<String>();
        for (Suggestion x : s) out.add(x.word);
        return out;
    }

    @Test
    public void rewindRestoresTheSessionBeforeTheLastWordExactly() throws Exception {
        Predictor p = golden();
        Session s = p.session();
        s.commit("how are");
        float[] before = s.logProbs();
        int steps = s.steps();
        s.commitWord("you");
        assertTrue(s.rewind());
        assertArrayEquals(before, s.logProbs(), 0f);
        assertEquals(steps, s.steps());
        assertEquals(2, s.wordsInSentence());
        s.commitWord("you");
        Session fresh = p.session();
        fresh.commit("how are you");
        assertArrayEquals(fresh.logProbs(), s.logProbs(), 0f);
    }

    @Test
    public void rewindUndoesASentenceEndAndReportsWhenNothingIsLeft() throws Exception {
        Session s = golden().session();
        assertFalse("a fresh session has nothing to rewind", s.rewind());
        s.commit("thank you");
        float[] before = s.logProbs();
        s.commit(".");
        assertEquals(0, s.wordsInSentence());
        assertTrue(s.rewind());
        assertArrayEquals(before, s.logProbs(), 0f);
        assertEquals(2, s.wordsInSentence());
        assertTrue(s.rewind());
        assertTrue(s.rewind());
        assertFalse(s.rewind());
        s.reset();
        assertEquals(0, s.rewindable());
    }

    @Test
    public void rewindCostsNoModelStepAndKeepsAtMostItsDepth() throws Exception {
        FakeEngine engine = new FakeEngine(8);
        ModelFile m = new ModelFile("fake.tflite", FakeEngine.model(20, "a", "b", "c", "d").vocab, engine, 20, "");
        Session s = new Predictor(m, null).session(3);
        s.commit("a b c d a b");
        assertEquals(3, s.rewindable());
        int calls = engine.calls;
        assertTrue(s.rewind());
        assertEquals(calls, engine.calls);
        assertTrue(s.rewind());
        assertTrue(s.rewind());
        assertFalse(s.rewind());
        assertEquals(3, s.wordsInSentence());
    }

    @Test
    public void stateRestartsEverySeqLenInputsAsInTraining() throws Exception {
        Predictor p = golden();
        int seqLen = p.model.seqLen;
        StringBuilder words = new StringBuilder();
        for (int i = 0; i < 2 * seqLen + 5; i++) words.append(i % 2 == 0 ? "you " : "are ");
        Session s = p.session();
        s.commit(words.toString());
        // <bos> + 2*seqLen+5 words = 2 full chunks + 6 inputs: the last chunk holds the last 6 words.
        assertEquals(6, s.inputsInChunk());
        assertEquals(2 * seqLen + 5, s.wordsInSentence());
        Session tail = p.session();
        tail.commit(words.toString(), true);
        assertArrayEquals(s.logProbs(), tail.logProbs(), 0f);
        assertTrue("the replay steps only the last chunk", tail.steps() <= seqLen);
    }

    @Test
    public void specialTokensAreNeverSuggestedEvenWhenMostLikely() throws Exception {
        ModelFile m = FakeEngine.model(20, "a", "b", "c", "d");
        FakeEngine engine = (FakeEngine) m.engine;
        Arrays.fill(engine.table, 0, 4, 0f);  // <pad> <bos> <eos> <oov> most likely
        engine.table[6] = -0.5f;  // "c"
        Predictor p = new Predictor(m, null);
        List<Suggestion> top = p.session().suggestions(10);
        assertEquals(Arrays.asList("c", "a", "b", "d"), words(top));  // then ties by id
        assertEquals(Arrays.asList(6, 4, 5, 7), ids(top));
    }

    @Test
    public void blocklistedWordsAreNeverSuggestedAndUnknownOnesAreReported() throws Exception {
        Predictor plain = golden();
        List<Suggestion> before = plain.suggest("how are", 3);
        String first = before.get(0).word;
        Predictor p = golden(first.toUpperCase(java.util.Locale.ROOT), "zzzqqq", "", "   ", "!!!");
        assertEquals(Arrays.asList("zzzqqq", "", "   ", "!!!"), p.ignoredBlocklistWords());
        List<Suggestion> after = p.suggest("how are", 3);
        assertFalse(words(after).contains(first));
        assertEquals(before.get(1).id, after.get(0).id);
        assertTrue(ids(p.complete("how are", first.substring(0, 1), 100)).indexOf(before.get(0).id) < 0);
        try {
            new Predictor(plain.model, Arrays.asList("ok", null));
            fail("a null blocklist entry must be refused");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage().contains("null"));
        }
    }

    @Test
    public void blocklistEntriesAreTokenizedAsPythonDoes() throws Exception {
        Predictor p = golden("How are?");  // two tokens: both blocked
        List<String> all = words(p.session().suggestions(1000));
        assertFalse(all.contains("how"));
        assertFalse(all.contains("are"));
        assertTrue(p.ignoredBlocklistWords().isEmpty());
    }

    @Test
    public void completionRangeFollowsCodePointOrderNotUtf16() throws Exception {
        // U+FE0F (variation selector 16, after an emoji) is above the surrogates in UTF-16,
        // so a UTF-16 range [prefix, prefix + U+10FFFF) would drop "\u2764\uFE0F".
        String heart = "\u2764";
        String heartVs16 = "\u2764\uFE0F";
        String faceBlowing = "\uD83D\uDE18";  // U+1F618
        ModelFile m = FakeEngine.model(20, "x\uD83D\uDE00", heartVs16, heart, "xa", faceBlowing, "y");
        Predictor p = new Predictor(m, null);
        assertTrue("the example must differ between the two orders",
                (heart + "\uDBFF\uDFFF").compareTo(heartVs16) < 0);
        assertEquals(Arrays.asList(heartVs16, heart), words(p.session().complete(heart, 10)));  // ties by id
        assertEquals(Arrays.asList("x\uD83D\uDE00", "xa"), words(p.session().complete("X", 10)));
        assertEquals(Collections.singletonList(faceBlowing), words(p.session().complete(faceBlowing, 10)));
        assertTrue(p.session().complete("q", 10).isEmpty());
    }

    @Test
    public void emptyAndWhitespacePrefixesGiveNextWordSuggestions() throws Exception {
        Session s = golden().session();
        s.commit("what is your");
        List<Integer> next = ids(s.suggestions(3));
        assertEquals(next, ids(s.complete("", 3)));
        assertEquals(next, ids(s.complete(" \t\u00a0 ", 3)));
        assertEquals(3, s.complete("y", 3).size());
    }

    @Test
    public void emptyOrPunctuationOnlyInputSuggestsSentenceStarts() throws Exception {
        Predictor p = golden();
        List<Integer> start = ids(p.suggest("", 3));
        assertEquals(3, start.size());
        assertEquals(start, ids(p.suggest("...!?  \n\t", 3)));
        assertEquals(start, ids(p.suggest("\u0000\u0001\uFFFF\uD800", 3)));  // controls, a noncharacter, a lone surrogate
        Session s = p.session();
        s.commit("");
        assertEquals(1, s.steps());
    }

    @Test
    public void hugeInputCostsAtMostSeqLenStepsStatelessly() throws Exception {
        Predictor p = golden();
        StringBuilder b = new StringBuilder();
        String[] words = {"i", "think", "that", "you", "are", "a", "very", "good", "friend", "and"};
        for (int i = 0; i < 200000; i++) b.append(words[i % words.length]).append(i % 97 == 0 ? "\uD83D\uDE00 " : " ");
        String huge = b.toString();
        long t0 = System.nanoTime();
        List<Suggestion> got = p.suggest(huge, 3);
        long ms = (System.nanoTime() - t0) / 1000000;
        assertEquals(3, got.size());
        Session s = p.session();
        s.commit(huge, true);
        assertTrue(s.steps() <= p.model.seqLen);
        assertTrue("200,000 words took " + ms + " ms", ms < 20000);
    }

    @Test
    public void badArgumentsAreRefusedWithClearMessages() throws Exception {
        Session s = golden().session();
        String[] expected = {"k must be >= 1", "text must not be null", "prefix must not be null", "word must not be null"};
        for (int i = 0; i < expected.length; i++) {
            try {
                switch (i) {
                    case 0: s.suggestions(0); break;
                    case 1: s.commit(null); break;
                    case 2: s.complete(null, 3); break;
                    default: s.commitWord(null);
                }
                fail(expected[i]);
            } catch (IllegalArgumentException e) {
                assertTrue(e.getMessage(), e.getMessage().startsWith(expected[i]));
            }
        }
        assertEquals(1, s.steps());
    }

    @Test
    public void unknownWordsStepAsOov() throws Exception {
        Predictor p = golden();
        Session a = p.session();
        a.commitWord("qqqzzzxxx");
        Session b = p.session();
        b.commitWord("<oov>");
        assertArrayEquals(a.logProbs(), b.logProbs(), 0f);
    }
}
