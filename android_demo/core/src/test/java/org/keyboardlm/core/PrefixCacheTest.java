package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.Test;

/**
 * The stateless predictor's prefix cache (tests/test_prefix_cache.py in Python): cached answers
 * equal uncached ones over random edits of real text, what a call costs in model steps, eviction
 * at the bound, and threads sharing one cache.
 *
 * <p>Real text: the golden files the other Java tests read (tests/golden/): the predictor
 * fixture's contexts, the user-history vectors' sentences and the text-spec vectors' inputs (URLs,
 * numbers, emoji, apostrophes, scripts), plus the golden models' vocabularies, which were built
 * from the embedded corpus. The models are the committed golden models.
 */
public class PrefixCacheTest {

    /** The real engine of a golden model, counting its stepFull calls. */
    static final class CountingEngine implements StepEngine {
        final StepEngine inner;
        final AtomicInteger fullSteps = new AtomicInteger();

        CountingEngine(StepEngine inner) {
            this.inner = inner;
        }

        @Override
        public int stateSize() {
            return inner.stateSize();
        }

        @Override
        public int vocabSize() {
            return inner.vocabSize();
        }

        @Override
        public int topK() {
            return inner.topK();
        }

        @Override
        public float[] initialState() {
            return inner.initialState();
        }

        @Override
        public TopStep step(int token, float[] state) {
            throw new UnsupportedOperationException("the predictor ranks full distributions");
        }

        @Override
        public FullStep stepFull(int token, float[] state) {
            fullSteps.incrementAndGet();
            return inner.stepFull(token, state);
        }

        @Override
        public FullStep stepFull(int token, float[] state, FullStep into) {
            fullSteps.incrementAndGet();
            return inner.stepFull(token, state, into);
        }
    }

    static ModelFile golden(String name) throws Exception {
        return ModelFile.load(StepEngineGoldenTest.modelFile(name).getPath());
    }

    static Predictor predictor(ModelFile m, int cacheSize) {
        return new Predictor(m, Collections.<String>emptyList(), cacheSize);
    }

    /** A predictor over a golden model whose engine counts steps. */
    static Predictor counting(String name, int cacheSize) throws Exception {
        ModelFile m = golden(name);
        ModelFile counted = new ModelFile(m.path, m.vocab, new CountingEngine(m.engine), m.seqLen, m.metadataJson);
        return predictor(counted, cacheSize);
    }

    static int steps(Predictor p) {
        return ((CountingEngine) p.model.engine).fullSteps.get();
    }

    /** Equal word, id, log-prob bits and score. */
    static void same(String where, List<Suggestion> want, List<Suggestion> got) {
        assertEquals(where, want.size(), got.size());
        for (int i = 0; i < want.size(); i++) {
            Suggestion a = want.get(i);
            Suggestion b = got.get(i);
            assertEquals(where + " word " + i, a.word, b.word);
            assertEquals(where + " id " + i, a.id, b.id);
            assertEquals(where + " log-prob " + i, Float.floatToIntBits(a.logProb), Float.floatToIntBits(b.logProb));
            assertEquals(where + " score " + i, Double.doubleToLongBits(a.score), Double.doubleToLongBits(b.score));
        }
    }

    /** The words of the golden files' real text, as typed, and the vocabulary's words. */
    static List<String> realWords(Vocabulary vocab) throws Exception {
        Set<String> words = new LinkedHashSet<String>();
        Map<String, Object> fixture = GoldenJson.object(GoldenJson.read(StepEngineGoldenTest.fixturePath()));
        for (Object model : GoldenJson.object(fixture.get("models")).values()) {
            for (Object c : GoldenJson.array(GoldenJson.object(model).get("contexts"))) {
                for (String w : ((String) GoldenJson.object(c).get("context")).split(" ")) if (!w.isEmpty()) words.add(w);
            }
        }
        File golden = new File(StepEngineGoldenTest.fixturePath()).getParentFile();
        Map<String, Object> history = GoldenJson.object(GoldenJson.read(new File(golden, "user_history_vectors.json").getPath()));
        for (Object sentence : GoldenJson.array(history.get("sentences"))) {
            for (Object w : GoldenJson.array(sentence)) words.add((String) w);
        }
        for (int id = Vocabulary.SPECIAL_TOKENS.size(); id < vocab.size(); id++) words.add(vocab.tokenOf(id));
        assertTrue("real words: " + words.size(), words.size() > 300);
        return new ArrayList<String>(words);
    }

    /** Pieces whose tokens depend on what follows them: the text-spec vectors' inputs, split at spaces. */
    static List<String> trickyPieces() throws Exception {
        File golden = new File(StepEngineGoldenTest.fixturePath()).getParentFile();
        Map<String, Object> vectors = GoldenJson.object(GoldenJson.read(new File(golden, "text_spec_vectors.json").getPath()));
        List<String> out = new ArrayList<String>();
        for (Object c : GoldenJson.array(vectors.get("cases"))) {
            for (String piece : ((String) GoldenJson.object(c).get("input")).split(" ")) if (!piece.isEmpty()) out.add(piece);
        }
        assertTrue("tricky pieces: " + out.size(), out.size() > 50);
        return out;
    }

    /** One edit of a text field (a list of typed words): what a user or an app does to it. */
    static void randomEdit(Random r, List<String> field, List<String> words, List<String> tricky) {
        double op = r.nextDouble();
        if (op < 0.05 && !field.isEmpty()) {
            String more = r.nextBoolean() ? tricky.get(r.nextInt(tricky.size())) : String.valueOf("abc.'3".charAt(r.nextInt(6)));
            field.set(field.size() - 1, field.get(field.size() - 1) + more);  // typing inside the last word
        } else if (op < 0.1) {
            field.add(tricky.get(r.nextInt(tricky.size())));
        } else if (op < 0.45 || field.isEmpty()) {
            field.add(words.get(r.nextInt(words.size())));  // typing on
        } else if (op < 0.55) {
            field.remove(field.size() - 1);  // backspace over a word
        } else if (op < 0.7) {
            field.set(r.nextInt(field.size()), words.get(r.nextInt(words.size())));  // correct a word in the middle
        } else if (op < 0.8) {
            field.add(r.nextInt(field.size()), words.get(r.nextInt(words.size())));
        } else if (op < 0.88) {
            field.remove(r.nextInt(field.size()));
        } else if (op < 0.94) {
            int i = r.nextInt(field.size());
            field.set(i, field.get(i) + ".!?,".charAt(r.nextInt(4)));  // a sentence end (or not)
        } else {
            field.subList(r.nextInt(field.size()), field.size()).clear();  // cut the end
        }
        if (field.size() > 70) field.subList(0, 20).clear();
    }

    static String join(List<String> field) {
        StringBuilder b = new StringBuilder();
        for (String w : field) {
            if (b.length() > 0) b.append(' ');
            b.append(w);
        }
        return b.toString();
    }

    /** Returns how many of the fields' last sentences were past their first chunk (no {@code <bos>} replayed). */
    private static int cachedEqualsUncached(String name, int edits, int cacheSize) throws Exception {
        ModelFile m = golden(name);
        Predictor cached = predictor(m, cacheSize);
        Predictor uncached = predictor(m, 0);
        List<String> words = realWords(m.vocab);
        List<String> tricky = trickyPieces();
        Random r = new Random(name.length() + edits);
        List<String> field = new ArrayList<String>();
        int[] ks = {1, 3, 3, 3, 5};
        int longChunks = 0;
        for (int i = 0; i < edits; i++) {
            randomEdit(r, field, words, tricky);
            String context = join(field) + (r.nextBoolean() ? " " : "");
            int k = ks[r.nextInt(ks.length)];
            same(name + " edit " + i + " \"" + context + "\"", uncached.suggest(context, k), cached.suggest(context, k));
            if (i % 5 == 0) {
                String w = words.get(r.nextInt(words.size()));
                String prefix = w.substring(0, Math.min(w.length(), 1 + r.nextInt(3)));
                same(name + " edit " + i + " completing \"" + prefix + "\"", uncached.complete(context, prefix, 3),
                        cached.complete(context, prefix, 3));
            }
            if (cached.prefixCache().chunkInputs(context)[0] != Vocabulary.BOS) longChunks++;
            assertTrue(cached.prefixCache().size() <= cacheSize);
        }
        System.out.println("  PrefixCache: " + name + " cache " + cacheSize + ", " + edits
                + " random edits answered as without the cache (" + longChunks + " past one chunk)");
        return longChunks;
    }

    @Test
    public void cachedAnswersEqualUncachedOnesOverRandomEditsOfRealText() throws Exception {
        int longChunks = cachedEqualsUncached("cifg_dynamic-range.tflite", 3000, PrefixCache.DEFAULT_SIZE)
                + cachedEqualsUncached("gru_weight-only.tflite", 1000, 8)
                + cachedEqualsUncached("si-cifg_dynamic-range.tflite", 500, 1);
        assertTrue("fields past one chunk: " + longChunks, longChunks > 45);  // both kinds of chunk were answered
    }

    @Test
    public void aCallCostsTheStepsAfterTheLongestCachedPrefix() throws Exception {
        Predictor p = counting("cifg_dynamic-range.tflite", PrefixCache.DEFAULT_SIZE);
        int seqLen = p.model.seqLen;
        assertEquals(1, cost(p, ""));  // the <bos> step, once per predictor
        String field = "i think that you are a very good friend and";
        assertEquals(10, cost(p, field));
        assertEquals(1, cost(p, field + " i"));  // one more word: one step
        assertEquals(0, cost(p, field + " i "));  // the same field again
        assertEquals(0, cost(p, field));  // a backspace over a word
        assertEquals(8, cost(p, "i think that we are a very good friend and i"));  // from the edit on
        assertEquals(1, cost(p, "i like it. you"));  // a new sentence starts at <bos>
        int before = steps(p);
        assertTrue(!p.complete(field, "y", 3).isEmpty());
        assertEquals("a completion reads the cached distribution", before, steps(p));
        // Across a chunk boundary the new chunk starts from zeros: still one step per new word.
        List<String> words = new ArrayList<String>();
        for (int id = Vocabulary.SPECIAL_TOKENS.size(); words.size() < 3 * seqLen; id++) {
            String w = p.vocab.tokenOf(id);
            if (w.matches("[a-z]+")) words.add(w);
        }
        Predictor uncached = counting("cifg_dynamic-range.tflite", 0);
        assertNull(uncached.prefixCache());
        for (int n = 1; n < 3 * seqLen; n++) {
            String context = join(words.subList(0, n));
            assertEquals("field of " + n + " words", 1, cost(p, context));
            same("field of " + n + " words", uncached.suggest(context, 3), p.suggest(context, 3));
        }
        // Without the cache, the same field one word longer replays its chunk.
        assertEquals(10, cost(uncached, field));
        assertEquals(11, cost(uncached, field + " i"));
        assertEquals(seqLen, cost(uncached, join(words.subList(0, 2 * seqLen - 1))));  // a whole chunk, from zeros
    }

    private static int cost(Predictor p, String context) {
        int before = steps(p);
        p.suggest(context, 3);
        return steps(p) - before;
    }

    @Test
    public void theCacheIsBoundedAndEvictsTheLeastRecentlyUsed() throws Exception {
        Predictor p = counting("cifg_dynamic-range.tflite", 6);
        assertEquals(6, p.prefixCache().capacity());
        assertEquals(1 + 3, cost(p, "how are you"));  // <bos> (once per predictor), how, are, you
        assertEquals(4, p.prefixCache().size());
        assertEquals(4, cost(p, "what is your name"));  // uses <bos> (now the newest), adds 4: "how" and "how are" go
        assertEquals(6, p.prefixCache().size());
        assertEquals(0, cost(p, "how are you"));
        assertEquals(0, cost(p, "what is your name"));  // both still cached
        assertEquals(2, cost(p, "how are"));  // evicted: stepped again from <bos>
        assertEquals(6, p.prefixCache().size());
        // A call with more new inputs than the bound keeps its last ones.
        Predictor one = counting("cifg_dynamic-range.tflite", 1);
        assertEquals(1 + 4, cost(one, "what is your name"));
        assertEquals(1, one.prefixCache().size());
        assertEquals(0, cost(one, "what is your name"));
        assertEquals(3, cost(one, "what is your"));
    }

    @Test
    public void threadsSharingOneCacheGetTheUncachedAnswers() throws Exception {
        ModelFile m = golden("gru_dynamic-range.tflite");
        final Predictor cached = predictor(m, 16);
        Predictor uncached = predictor(m, 0);
        List<String> words = realWords(m.vocab);
        final List<String> contexts = new ArrayList<String>();
        for (int i = 0; i + 25 <= words.size() && i < 600; i += 7) {
            for (int n : new int[] {3, 4, 12, 25}) contexts.add(join(words.subList(i, i + n)));
        }
        final List<List<Suggestion>> want = new ArrayList<List<Suggestion>>();
        for (String c : contexts) want.add(uncached.suggest(c, 3));
        ExecutorService pool = Executors.newFixedThreadPool(6);
        try {
            List<Future<Integer>> done = new ArrayList<Future<Integer>>();
            for (int t = 0; t < 6; t++) {
                final int offset = t * 37;
                done.add(pool.submit(new Callable<Integer>() {
                    @Override
                    public Integer call() {
                        for (int j = 0; j < 3 * contexts.size(); j++) {
                            int i = (offset + j) % contexts.size();
                            same("thread context " + i, want.get(i), cached.suggest(contexts.get(i), 3));
                        }
                        return 3 * contexts.size();
                    }
                }));
            }
            int calls = 0;
            for (Future<Integer> f : done) calls += f.get();
            assertEquals(6 * 3 * contexts.size(), calls);
        } finally {
            pool.shutdownNow();
        }
        assertTrue(cached.prefixCache().size() <= 16);
    }

    @Test
    public void aNegativeCacheSizeIsRefused() throws Exception {
        try {
            predictor(golden("cifg_dynamic-range.tflite"), -1);
            fail("a negative size was accepted");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("prefixCacheSize must be >= 0"));
        }
    }
}
