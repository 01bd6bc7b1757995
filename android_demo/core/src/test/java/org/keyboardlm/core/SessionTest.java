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
 * order, bad input, and the user history's mixture (its share per previous word and the
 * weight's precedence). Real numbers come from a golden model; the rules a model cannot show
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
    public void recycledResultsKeepEveryRewindAndCommitExact() throws Exception {
        Predictor p = golden();
        List<String> words = new ArrayList<String>(p.vocab.tokens().subList(Vocabulary.SPECIAL_TOKENS.size(), 60));
        java.util.Random r = new java.util.Random(3);
        Session s = p.session(4);
        List<String> typed = new ArrayList<String>();  // words in effect: commits not rewound
        List<Integer> rewindable = new ArrayList<Integer>();
        for (int op = 0; op < 400; op++) {
            int what = r.nextInt(10);
            if (what < 3 && s.rewind()) {
                typed.remove(typed.size() - 1);
            } else if (what == 3) {
                s.reset();
                typed.clear();
            } else {
                String w = words.get(r.nextInt(words.size()));
                s.commitWord(w);
                typed.add(w);
            }
            Session fresh = p.session();
            for (String w : typed) fresh.commitWord(w);
            assertArrayEquals("after " + typed, fresh.logProbs(), s.logProbs(), 0f);
            rewindable.add(s.rewindable());
        }
        assertTrue(rewindable.contains(4));
    }

    @Test
    public void aSentenceStartCopiesOneBosStepPerPredictor() throws Exception {
        FakeEngine engine = new FakeEngine(8);
        ModelFile m = new ModelFile("fake.tflite", FakeEngine.model(20, "a", "b", "c", "d").vocab, engine, 20, "");
        Predictor p = new Predictor(m, null);
        Session s = p.session();
        s.commit("a b. c. d! a");
        p.session().reset();
        assertEquals("one <bos> step for the predictor, then one step per word", 1 + 5, engine.calls);
        assertEquals(1, s.wordsInSentence());
        Predictor g = golden();
        Session t = g.session();
        t.commit("how are you. ");
        assertArrayEquals(g.model.engine.stepFull(Vocabulary.BOS, g.model.engine.initialState()).logProbs, t.logProbs(), 0f);
        t.commit("i am");
        Session fresh = g.session();
        fresh.commit("i am");
        assertArrayEquals(fresh.logProbs(), t.logProbs(), 0f);
        assertTrue(t.rewind());
        assertTrue(t.rewind());
        assertArrayEquals(g.model.engine.stepFull(Vocabulary.BOS, g.model.engine.initialState()).logProbs, t.logProbs(), 0f);
    }

    @Test
    public void typingStepsIntoRecycledResultsOnceTheRewindHistoryIsFull() throws Exception {
        final FakeEngine fake = new FakeEngine(8);
        final int[] fresh = {0};
        StepEngine counting = new StepEngine() {
            public int stateSize() { return fake.stateSize(); }
            public int vocabSize() { return fake.vocabSize(); }
            public int topK() { return fake.topK(); }
            public float[] initialState() { return fake.initialState(); }
            public TopStep step(int token, float[] state) { return fake.step(token, state); }
            public FullStep stepFull(int token, float[] state) { return stepFull(token, state, null); }
            public FullStep stepFull(int token, float[] state, FullStep into) {
                if (into == null) fresh[0]++;
                return fake.stepFull(token, state, into);
            }
        };
        ModelFile m = new ModelFile("fake.tflite", FakeEngine.model(20, "a", "b", "c", "d").vocab, counting, 20, "");
        Session s = new Predictor(m, null).session(3);
        for (int i = 0; i < 200; i++) s.commitWord(i % 2 == 0 ? "a" : "b");
        // The session's result, 3 remembered commits and 1 result in flight: no more are ever allocated.
        assertTrue("new results: " + fresh[0], fresh[0] <= 5);
        assertEquals(201, fake.calls);
        int before = fresh[0];
        for (int i = 0; i < 50; i++) {
            s.rewind();
            s.commitWord("c");
            s.commitWord("d");
        }
        assertEquals(before, fresh[0]);
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

    /** Python's Session._with_history: each suggestion's score and the order of the list. */
    static void isTheMixture(String where, Session s, List<Suggestion> got, String prefix) {
        UserHistory h = s.userHistory();
        double n = h.contextCount(s.previousWord());
        double a = s.historyWeight() * n / (n + Session.HISTORY_CONTEXT_K);
        assertEquals(where + " share", a, s.effectiveHistoryWeight(), 0.0);
        assertTrue(where + " share " + a, a > 0);
        for (int i = 0; i < got.size(); i++) {
            Suggestion x = got.get(i);
            assertTrue(where + " " + x, x.word.startsWith(prefix));
            double pModel = x.id < 0 ? 0.0 : (float) Math.exp(x.logProb);
            assertEquals(where + " " + x, (1 - a) * pModel + a * h.probability(x.word, s.previousWord()), x.score, 1e-15);
            if (i > 0) assertTrue(where + " sorted " + got, got.get(i - 1).score >= x.score);
        }
    }

    @Test
    public void aHistorySuggestsAWordOutsideTheVocabularyTypedRepeatedlyAfterTheSamePreviousWord() throws Exception {
        Predictor p = golden();
        String word = "zorblaxen";
        assertFalse(p.vocab.contains(word));
        UserHistory h = new UserHistory();
        Session s = p.session(h, true);
        for (int i = 0; i < 4; i++) s.commit("see you at the " + word + ". ");
        assertEquals(20, h.clock());
        assertEquals(4.0, h.count(word, "the"), 0.05);
        s.commit("see you at the");
        assertEquals("the", s.previousWord());
        List<Suggestion> next = s.suggestions(3);
        assertTrue(next.toString(), words(next).contains(word));
        Suggestion z = next.get(words(next).indexOf(word));
        assertEquals(-1, z.id);
        assertEquals(Float.NEGATIVE_INFINITY, z.logProb, 0f);
        double n = h.contextCount("the");
        assertEquals(4.0, n, 0.05);  // four words typed after "the", barely decayed
        assertEquals(0.3 * n / (n + 4.0) * h.probability(word, "the"), z.score, 1e-15);
        isTheMixture("suggestions", s, next, "");
        List<Suggestion> completing = s.complete("Zo", 3);
        assertEquals(word, completing.get(0).word);
        isTheMixture("completion", s, completing, "zo");
        // The same model without the history never suggests it; a weight of 0 ranks by the model alone.
        Session plain = p.session();
        plain.commit("see you at the");
        assertFalse(words(plain.suggestions(100)).contains(word));
        s.setHistoryWeight(0);
        PredictorGoldenTest.sameSuggestions("weight 0", plain.suggestions(3), s.suggestions(3));
    }

    @Test
    public void theHistoryLearnsCommittedWordsButNotInALearnFalseSessionNorSpecialOrBlockedWords() throws Exception {
        Predictor p = golden("secret", "How");
        UserHistory h = new UserHistory();
        Session quiet = p.session(h, false);
        quiet.commit("my password is hunter2. ");
        assertEquals(0, h.clock());
        assertTrue("the history is still read", quiet.userHistory() == h);
        Session s = p.session(h, true);
        s.commitWord("<oov>");
        s.commitWord("<bos>");
        s.commit("how is the secret plan");
        assertEquals("the previous word follows every committed word", "plan", s.previousWord());
        assertEquals(Arrays.asList("is", "plan", "the"), sorted(h.topWords(10)));
        assertEquals("the learnt pair skips nothing in between", 1.0, h.count("the", "is"), 0.01);
        assertEquals(1.0, h.count("plan", "secret"), 0.0);  // never learnt: secret; but plan after it
        assertEquals(0.0, h.count("secret"), 0.0);
        s.commit(". ");
        assertEquals(null, s.previousWord());
        s.commit("is");
        assertEquals(1.0, h.count("is", UserHistory.START), 0.01);
        // A rewind restores the previous word (it does not unlearn).
        s.commitWord("done");
        assertTrue(s.rewind());
        assertEquals("is", s.previousWord());
        assertEquals(1.0, h.count("done", "is"), 0.01);
        s.reset();
        assertEquals(null, s.previousWord());
        // Blocked words are never suggested from the history either.
        for (int i = 0; i < 5; i++) h.learnWord("the", "secret");
        s.commit("the");
        assertFalse(words(s.suggestions(100)).contains("secret"));
        assertFalse(words(s.complete("se", 100)).contains("secret"));
        try {
            s.setHistoryWeight(1.5);
            fail("a weight above 1 must be refused");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage().startsWith("history weight must be in [0, 1]"));
        }
    }

    @Test
    public void afterAPreviousWordTheUserNeverTypedTheModelAloneSuggests() throws Exception {
        Predictor p = golden();
        UserHistory h = new UserHistory();
        for (int i = 0; i < 6; i++) h.learn(Arrays.asList("see", "you", "at", "the", "zorblaxen"));
        Session with = p.session(h, false);
        Session without = p.session();
        for (Session s : new Session[] {with, without}) s.commit("what a lovely ");
        assertEquals("lovely", with.previousWord());
        assertEquals(0.0, h.contextCount("lovely"), 0.0);
        assertEquals(0.0, with.effectiveHistoryWeight(), 0.0);
        assertEquals("the weight is still there", Session.HISTORY_WEIGHT, with.historyWeight(), 0.0);
        List<Suggestion> want = without.suggestions(3);
        List<Suggestion> got = with.suggestions(3);
        PredictorGoldenTest.sameSuggestions("never typed after", want, got);
        for (int i = 0; i < want.size(); i++) assertEquals(want.get(i).score, got.get(i).score, 0.0);
        PredictorGoldenTest.sameSuggestions("completion never typed after", without.complete("a", 5), with.complete("a", 5));
        // A history word is not even a candidate there, though the history knows it well.
        assertFalse(words(with.suggestions(100)).contains("zorblaxen"));
        assertTrue(with.complete("zorb", 3).isEmpty());
        // After a previous word typed often, the history takes nearly all of its weight, and its word enters.
        with.reset();
        with.commit("see you at the ");
        double n = h.contextCount("the");
        assertTrue("n = " + n, n > 5);
        assertEquals(Session.HISTORY_WEIGHT * n / (n + Session.HISTORY_CONTEXT_K), with.effectiveHistoryWeight(), 0.0);
        List<Suggestion> next = with.suggestions(3);
        assertEquals(next.toString(), "zorblaxen", next.get(0).word);
        isTheMixture("often typed after", with, next, "");
        // A sentence start is the context <s>: typed after six times.
        with.reset();
        assertEquals(h.contextCount(UserHistory.START), h.contextCount(null), 0.0);
        assertTrue(with.effectiveHistoryWeight() > 0);
        assertEquals(0.0, p.session().effectiveHistoryWeight(), 0.0);  // no history: no share
    }

    @Test
    public void theSessionsWeightWinsOverTheUsersWhichWinsOverTheDefault() throws Exception {
        Predictor p = golden();
        UserHistory h = new UserHistory();
        h.learn(Arrays.asList("hello", "there"));
        Session s = p.session(h, true);
        assertEquals(null, h.weight());
        assertEquals(Session.HISTORY_WEIGHT, s.historyWeight(), 0.0);
        h.setWeight(0.1);  // as Python's personalize chose it, saved with the history
        assertEquals("the history's weight when the session has none", 0.1, s.historyWeight(), 0.0);
        s.commit("hello");
        double n = h.contextCount("hello");
        assertEquals(0.1 * n / (n + Session.HISTORY_CONTEXT_K), s.effectiveHistoryWeight(), 0.0);
        s.setHistoryWeight(0.5);
        assertEquals("the session's own setting wins", 0.5, s.historyWeight(), 0.0);
        assertEquals(0.5 * n / (n + Session.HISTORY_CONTEXT_K), s.effectiveHistoryWeight(), 0.0);
        Session other = p.session(h, true);
        assertEquals("another session of the user", 0.1, other.historyWeight(), 0.0);
        UserHistory back = UserHistory.fromJson(h.toJson(), "me.history");
        assertEquals(Double.valueOf(0.1), back.weight());
        assertEquals(0.1, p.session(back, true).historyWeight(), 0.0);
        h.clear();
        assertEquals("clear() forgets the user's weight", null, h.weight());
        assertEquals(Session.HISTORY_WEIGHT, other.historyWeight(), 0.0);
        assertEquals(0.5, s.historyWeight(), 0.0);
        s.setHistoryWeight(0);
        assertEquals(0.0, s.historyWeight(), 0.0);
        for (double bad : new double[] {-0.1, 1.5, Double.NaN}) {
            try {
                h.setWeight(bad);
                fail("weight " + bad + " must be refused");
            } catch (IllegalArgumentException e) {
                assertTrue(e.getMessage(), e.getMessage().startsWith("weight must be a number in [0, 1]"));
            }
        }
        assertEquals(null, h.weight());
    }

    static List<String> sorted(List<String> l) {
        List<String> out = new ArrayList<String>(l);
        Collections.sort(out);
        return out;
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
