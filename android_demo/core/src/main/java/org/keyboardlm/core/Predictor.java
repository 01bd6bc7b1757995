package org.keyboardlm.core;

import java.io.Closeable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * Next-word suggestions and word completion from one model file, following
 * keyboard_lm/inference/predictor.py rule by rule. Special tokens (including OOV) and
 * blocklisted words are never suggested. Thread-safe: sessions share it.
 *
 * <p>Ranking: log-prob descending, ties by id ascending (the golden fixture's order).
 *
 * <p>Completion candidates: the suggestable words w with {@code prefix <= w < prefix + U+10FFFF}
 * in Unicode code point order ({@link TextSpec#compareCodePoints}), the range Python's
 * {@code bisect} over {@code sorted(words)} takes; in effect, the words that start with the
 * normalized prefix. Java's {@code String.compareTo} orders UTF-16 units, which differs for
 * characters outside the Basic Multilingual Plane: U+10FFFF is the surrogate pair
 * D8FF DFFF, below U+E000..U+FFFF, so a UTF-16 range would lose e.g. "x\uFF5E".
 *
 * <p>User history: a session may hold a {@link UserHistory} (see {@link Session}); the
 * blocklist's tokens, in the vocabulary or not, are never learnt nor suggested from it.
 *
 * <p>Stateless calls ({@link #suggest}, {@link #complete}) keep the model's results after the
 * most recently used token prefixes in a {@link PrefixCache} (64 by default), so a call whose
 * context extends a recent one by a word costs one model step. A prefix cache size of 0 turns it
 * off: each call then replays its context's chunk. The answers are the same either way.
 *
 * <p>{@link #close} closes the model (see {@link ModelFile#close}) and drops the prefix
 * cache; calls after it, this predictor's and its sessions', throw IllegalStateException.
 */
public final class Predictor implements Closeable {
    public final ModelFile model;
    public final Vocabulary vocab;
    private final boolean[] never;
    private final int[] suggestable;
    /** Suggestable words in code point order, as code point arrays, and their ids. */
    private final int[][] sortedWords;
    private final int[] sortedIds;
    private final List<String> ignoredBlocklist;
    /** Every token of every blocklist entry, in the vocabulary or not (Python's _blocked_spellings). */
    private final Set<String> blockedSpellings;
    /** The model after {@code <bos>} from the zero state, the same for every sentence; computed on first use, never written. */
    private volatile StepEngine.FullStep sentenceStart;
    /** Null when the cache is off (size 0) or the predictor is closed. */
    private volatile PrefixCache prefixCache;
    private volatile boolean closed;

    /**
     * @param blocklist words never to suggest; each entry is tokenized by the text spec and
     *     every token found in the vocabulary is blocked; entries with no such token are kept
     *     in {@link #ignoredBlocklistWords()} (Python ignores them silently). Every token, in the
     *     vocabulary or not, is also kept out of the user history ({@link #isBlocked}).
     */
    public Predictor(ModelFile model, Iterable<String> blocklist) {
        this(model, blocklist, PrefixCache.DEFAULT_SIZE);
    }

    /**
     * As {@link #Predictor(ModelFile, Iterable)}, keeping {@code prefixCacheSize} token prefixes
     * for the stateless calls (see {@link PrefixCache}); 0 turns the cache off.
     */
    public Predictor(ModelFile model, Iterable<String> blocklist, int prefixCacheSize) {
        if (prefixCacheSize < 0) {
            throw new IllegalArgumentException("prefixCacheSize must be >= 0 (0 turns the cache off), got " + prefixCacheSize);
        }
        this.model = model;
        this.vocab = model.vocab;
        int v = vocab.size();
        never = new boolean[v];
        for (int i = 0; i < Vocabulary.SPECIAL_TOKENS.size(); i++) never[i] = true;
        List<String> ignored = new ArrayList<String>();
        Set<String> blocked = new HashSet<String>();
        if (blocklist != null) {
            for (String word : blocklist) {
                if (word == null) throw new IllegalArgumentException("blocklist entry is null");
                boolean found = false;
                for (String token : TextSpec.tokenize(word)) {
                    blocked.add(token);
                    if (vocab.contains(token)) {
                        never[vocab.idOf(token)] = true;
                        found = true;
                    }
                }
                if (!found) ignored.add(word);
            }
        }
        ignoredBlocklist = Collections.unmodifiableList(ignored);
        blockedSpellings = blocked;
        int n = 0;
        for (boolean b : never) if (!b) n++;
        suggestable = new int[n];
        final int[][] cps = new int[v][];
        Integer[] order = new Integer[n];
        for (int i = 0, k = 0; i < v; i++) {
            if (!never[i]) {
                suggestable[k] = i;
                order[k++] = i;
                cps[i] = TextSpec.codePoints(vocab.tokenOf(i));
            }
        }
        Arrays.sort(order, new Comparator<Integer>() {
            @Override
            public int compare(Integer a, Integer b) {
                int c = Predictor.compare(cps[a], cps[b]);
                return c != 0 ? c : Integer.compare(a, b);
            }
        });
        sortedWords = new int[n][];
        sortedIds = new int[n];
        for (int k = 0; k < n; k++) {
            sortedIds[k] = order[k];
            sortedWords[k] = cps[order[k]];
        }
        prefixCache = prefixCacheSize == 0 ? null : new PrefixCache(this, prefixCacheSize);
    }

    /** Load a .tflite exported by keyboard-lm export; ModelFileException names the file. */
    public static Predictor load(String path, Iterable<String> blocklist) throws ModelFileException {
        return new Predictor(ModelFile.load(path), blocklist);
    }

    /** As {@link #load(String, Iterable)}, with {@code prefixCacheSize} token prefixes cached (0: none). */
    public static Predictor load(String path, Iterable<String> blocklist, int prefixCacheSize) throws ModelFileException {
        return new Predictor(ModelFile.load(path), blocklist, prefixCacheSize);
    }

    /** The stateless calls' cache; null when it is off (or the predictor is closed). */
    public PrefixCache prefixCache() {
        return prefixCache;
    }

    /**
     * Closes the model (idempotent) and drops the prefix cache and the sentence start: the
     * memory goes even while something still holds this predictor. A {@link ModelFile} shared
     * by several predictors is closed for all of them.
     */
    @Override
    public void close() {
        closed = true;
        prefixCache = null;
        sentenceStart = null;
        model.close();
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException(model.path + ": the predictor is closed");
    }

    /** Blocklist entries none of whose tokens is in the vocabulary (they block no model word, only history words). */
    public List<String> ignoredBlocklistWords() {
        return ignoredBlocklist;
    }

    /** True when {@code token} is a token of a blocklist entry: never suggested, never learnt. */
    public boolean isBlocked(String token) {
        return blockedSpellings.contains(token);
    }

    public Session session() {
        return new Session(this, model.seqLen, null, false);
    }

    /** A session that can rewind {@code rewindDepth} commits (see {@link Session#rewind}). */
    public Session session(int rewindDepth) {
        return new Session(this, rewindDepth, null, false);
    }

    /**
     * A new text field with the user's history ({@code history}, shared by the user's sessions;
     * null for none); {@code learn} false: a field never learnt from (a password field).
     */
    public Session session(UserHistory history, boolean learn) {
        return new Session(this, model.seqLen, history, learn);
    }

    /** As {@link #session(UserHistory, boolean)}, rewinding at most {@code rewindDepth} commits. */
    public Session session(int rewindDepth, UserHistory history, boolean learn) {
        return new Session(this, rewindDepth, history, learn);
    }

    /**
     * The k most likely next words after {@code context}, most likely first (the strip's center):
     * what a session that committed {@code context} suggests. The prefix cache makes a call whose
     * context extends a recent one cost only the new words' steps.
     */
    public List<Suggestion> suggest(String context, int k) {
        checkOpen();
        PrefixCache cache = prefixCache;
        if (cache == null) {
            Session s = session();
            s.commit(context, true);
            return s.suggestions(k);
        }
        return top(cachedLogProbs(cache, context), suggestable, k);
    }

    /** The k most probable vocabulary words starting with {@code prefix} after {@code context}. */
    public List<Suggestion> complete(String context, String prefix, int k) {
        checkOpen();
        PrefixCache cache = prefixCache;
        if (cache == null) {
            Session s = session();
            s.commit(context, true);
            return s.complete(prefix, k);
        }
        float[] logProbs = cachedLogProbs(cache, context);
        // As Session.complete without a history.
        if (prefix == null) throw new IllegalArgumentException("prefix must not be null");
        String normalized = Session.strip(TextSpec.normalize(prefix));
        return normalized.isEmpty() ? top(logProbs, suggestable, k) : topWithPrefix(logProbs, normalized, k);
    }

    /** The log-probs after {@code context} from the prefix cache (read, never written). */
    private static float[] cachedLogProbs(PrefixCache cache, String context) {
        if (context == null) throw new IllegalArgumentException("text must not be null");
        return cache.position(context).logProbs;
    }

    // -- shared by sessions ---------------------------------------------------------------

    static int compare(int[] x, int[] y) {
        for (int k = 0; k < Math.min(x.length, y.length); k++) {
            if (x[k] != y[k]) return x[k] < y[k] ? -1 : 1;
        }
        return Integer.compare(x.length, y.length);
    }

    /**
     * The step every sentence starts with ({@code <bos>} from the zero state), computed once:
     * an engine's answer depends only on its inputs. Callers copy it and never write into it.
     */
    StepEngine.FullStep sentenceStart() {
        StepEngine.FullStep s = sentenceStart;
        if (s == null) {
            checkOpen();
            s = model.engine.stepFull(Vocabulary.BOS, model.engine.initialState());
            sentenceStart = s;
        }
        return s;
    }

    /** True for the ids never suggested: special tokens and blocklisted words. */
    boolean neverSuggested(int id) {
        return never[id];
    }

    /** Ids allowed in suggestions, ascending. */
    int[] suggestableIds() {
        return suggestable;
    }

    /** Completion candidates for a normalized, stripped prefix (see the class comment). */
    int[] prefixIds(String prefix) {
        int[] lo = TextSpec.codePoints(prefix);
        int[] hi = Arrays.copyOf(lo, lo.length + 1);
        hi[lo.length] = Character.MAX_CODE_POINT;
        int a = bisectLeft(lo);
        int b = bisectLeft(hi);
        return Arrays.copyOfRange(sortedIds, a, Math.max(a, b));
    }

    /**
     * {@code top(logProbs, prefixIds(prefix), k)} without the copy of the ids (a typed letter
     * would otherwise copy up to a vocabulary's worth of them): the same ids, in the same order.
     */
    List<Suggestion> topWithPrefix(float[] logProbs, String prefix, int k) {
        int[] lo = TextSpec.codePoints(prefix);
        int[] hi = Arrays.copyOf(lo, lo.length + 1);
        hi[lo.length] = Character.MAX_CODE_POINT;
        int a = bisectLeft(lo);
        int b = bisectLeft(hi);
        return top(logProbs, sortedIds, a, Math.max(a, b), k);
    }

    private int bisectLeft(int[] key) {
        int a = 0;
        int b = sortedWords.length;
        while (a < b) {
            int mid = (a + b) >>> 1;
            if (compare(sortedWords[mid], key) < 0) a = mid + 1;
            else b = mid;
        }
        return a;
    }

    /** The k best of {@code ids} by log-prob descending, ties by id ascending; NaN ranks last. */
    List<Suggestion> top(float[] logProbs, int[] ids, int k) {
        return top(logProbs, ids, 0, ids.length, k);
    }

    /** {@link #top(float[], int[], int)} of {@code ids[from..to)}. */
    private List<Suggestion> top(float[] logProbs, int[] ids, int from, int to, int k) {
        if (k < 1) throw new IllegalArgumentException("k must be >= 1, got " + k);
        int[] best = new int[Math.min(k, to - from)];
        if (best.length == 0) return new ArrayList<Suggestion>();
        int n = 0;
        for (int i = from; i < to; i++) {
            int id = ids[i];
            if (n == best.length && !before(logProbs, id, best[n - 1])) continue;
            int j = n < best.length ? n++ : n - 1;
            while (j > 0 && before(logProbs, id, best[j - 1])) {
                best[j] = best[j - 1];
                j--;
            }
            best[j] = id;
        }
        List<Suggestion> out = new ArrayList<Suggestion>(n);
        for (int i = 0; i < n; i++) out.add(new Suggestion(vocab.tokenOf(best[i]), best[i], logProbs[best[i]]));
        return out;
    }

    private static boolean before(float[] logProbs, int a, int b) {
        float x = logProbs[a];
        float y = logProbs[b];
        if (x != y) {
            if (Float.isNaN(x)) return false;
            if (Float.isNaN(y)) return true;
            return x > y;
        }
        return a < b;
    }
}
