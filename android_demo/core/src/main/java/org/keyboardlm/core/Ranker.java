package org.keyboardlm.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The one place where suggestion sources are merged: the model, the phrase table and the user
 * history (keyboard_lm/inference/ranker.py {@code Ranker}, which holds every source behind one
 * interface as LatinIME's {@code DictionaryFacilitator} does). It knows which words may ever be
 * suggested (special tokens and blocklisted words never are), the vocabulary's words sorted for
 * completion, and the phrase table with its gate; sessions and the predictor's stateless calls
 * ask it for the k best words at a position and never reach into a source's tables. Immutable,
 * shared by a predictor's sessions.
 *
 * <p>The merge at a position, as Python's:
 * <ol>
 * <li>the model's probabilities p_m;</li>
 * <li>the phrase table: the longest stored context ending the chunk's inputs gives q(w | c) for a
 * few words, weighted by {@code lam = gate.weight(n, users(c))}: {@code p = (1 - lam) p_m + lam q}
 * (no match, or a weight of 0: lam = 0);</li>
 * <li>the user history h(w | previous word) with its share a: {@code score = (1 - a) p + a h}.</li>
 * </ol>
 * Candidates are the model's top k, the table's words (never-suggestable ones skipped, and with a
 * prefix only those that start with it) and the history's candidates; any other word scores at
 * most {@code (1 - a)(1 - lam) p_k}, below the model's k-th. Where only the model ranks, the order
 * is log-prob descending, ties by id ascending (the graph's top-k order); a merged strip is ordered
 * by score descending, ties by spelling in code point order.
 *
 * <p>Completion candidates: the suggestable words w with {@code prefix <= w < prefix + U+10FFFF}
 * in Unicode code point order ({@link TextSpec#compareCodePoints}), the range Python's
 * {@code bisect} over {@code sorted(words)} takes; in effect, the words that start with the
 * normalized prefix. Java's {@code String.compareTo} orders UTF-16 units, which differs for
 * characters outside the Basic Multilingual Plane: U+10FFFF is the surrogate pair
 * D8FF DFFF, below U+E000..U+FFFF, so a UTF-16 range would lose e.g. "x\uFF5E".
 *
 * <p>Typo correction (Python's {@code Ranker.completion}): with a {@link TypoModel}, a completion
 * also ranks the words that start with a typo prefix one slip away from the letters typed
 * ({@link TypoIndex}); each candidate's score is multiplied by its channel factor f (1 for the
 * letters as typed, the largest slip's otherwise), and the model alone ranks by
 * {@code ln p_m + ln f} in double precision, ties by id ascending. Typo prefixes are the
 * vocabulary's, so a word only the user history knows joins by its prefix alone. When a correction reaches the
 * strip, the letters as typed keep its last place ({@link #keepTyped}), as LatinIME keeps the
 * typed word; nothing is corrected on a space.
 */
final class Ranker {
    /** The table's entry at a position and its weight lambda (Python's {@code PhraseMatch}); lambda is above 0. */
    static final class PhraseMatch {
        final PhraseTable.Entry entry;
        final double weight;

        PhraseMatch(PhraseTable.Entry entry, double weight) {
            this.entry = entry;
            this.weight = weight;
        }
    }

    final Vocabulary vocab;
    private final PhraseTable phrases;
    private final PhraseGate gate;
    private final boolean[] never;
    private final int[] suggestable;
    /** Suggestable words in code point order, as code point arrays, and their ids. */
    private final int[][] sortedWords;
    private final int[] sortedIds;
    /** Each id's place in {@link #sortedIds}, -1 for the ids never suggested. */
    private final int[] sortedPosition;
    private final List<String> ignoredBlocklist;
    /** Every token of every blocklist entry, in the vocabulary or not. */
    private final Set<String> blockedSpellings;
    /** The channel of typo correction, or null: completions match the letters as typed only. */
    final TypoModel typos;
    /** The suggestable words' prefixes and their deletion neighbourhood; null without {@link #typos}. */
    private final TypoIndex typoIndex;
    /** Typed letters -> their completion, the last {@link #TYPED_CACHE_SIZE} used (Python's TYPED_CACHE_SIZE). */
    private final LinkedHashMap<String, Completion> typedCache = new LinkedHashMap<String, Completion>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Completion> eldest) {
            return size() > TYPED_CACHE_SIZE;
        }
    };
    /** Typed letters whose completions a ranker keeps: the letters of common words are typed again and again. */
    static final int TYPED_CACHE_SIZE = 256;

    /**
     * @param blocklist words never to suggest, each tokenized by the text spec (see {@link Predictor});
     * @param phrases the model's phrase table, or null (then {@code gate} is ignored)
     */
    Ranker(Vocabulary vocab, Iterable<String> blocklist, PhraseTable phrases, PhraseGate gate) {
        this(vocab, blocklist, phrases, gate, null);
    }

    /** As {@link #Ranker(Vocabulary, Iterable, PhraseTable, PhraseGate)}; {@code typos}: correct typos in completions (null: not). */
    Ranker(Vocabulary vocab, Iterable<String> blocklist, PhraseTable phrases, PhraseGate gate, TypoModel typos) {
        this.vocab = vocab;
        this.typos = typos;
        this.phrases = phrases;
        this.gate = gate;
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
                int c = Ranker.compare(cps[a], cps[b]);
                return c != 0 ? c : Integer.compare(a, b);
            }
        });
        sortedWords = new int[n][];
        sortedIds = new int[n];
        sortedPosition = new int[v];
        Arrays.fill(sortedPosition, -1);
        for (int k = 0; k < n; k++) {
            sortedIds[k] = order[k];
            sortedWords[k] = cps[order[k]];
            sortedPosition[order[k]] = k;
        }
        typoIndex = typos == null ? null : new TypoIndex(sortedWords, typos);
    }

    // -- what may be suggested ---------------------------------------------------------------

    /** Blocklist entries none of whose tokens is in the vocabulary. */
    List<String> ignoredBlocklistWords() {
        return ignoredBlocklist;
    }

    /** True when {@code token} is a token of a blocklist entry: never suggested, never learnt. */
    boolean blocked(String token) {
        return blockedSpellings.contains(token);
    }

    /** True for the ids never suggested: special tokens and blocklisted words. */
    boolean neverSuggested(int id) {
        return never[id];
    }

    /** Ids allowed in suggestions, ascending (shared: never write into it). */
    int[] suggestableIds() {
        return suggestable;
    }

    static int compare(int[] x, int[] y) {
        for (int k = 0; k < Math.min(x.length, y.length); k++) {
            if (x[k] != y[k]) return x[k] < y[k] ? -1 : 1;
        }
        return Integer.compare(x.length, y.length);
    }

    /** Completion candidates for a normalized, stripped prefix (see the class comment). */
    int[] prefixIds(String prefix) {
        int[] range = prefixRange(prefix);
        return Arrays.copyOfRange(sortedIds, range[0], range[1]);
    }

    private int[] prefixRange(String prefix) {
        int[] lo = TextSpec.codePoints(prefix);
        int[] hi = Arrays.copyOf(lo, lo.length + 1);
        hi[lo.length] = Character.MAX_CODE_POINT;
        int a = bisectLeft(lo);
        return new int[] {a, Math.max(a, bisectLeft(hi))};
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

    // -- the model alone -------------------------------------------------------------------------

    /** The k best of {@code ids} by log-prob descending, ties by id ascending; NaN ranks last. */
    List<Suggestion> top(float[] logProbs, int[] ids, int k) {
        return top(logProbs, ids, 0, ids.length, k);
    }

    /**
     * {@code top(logProbs, prefixIds(prefix), k)} without the copy of the ids (a typed letter
     * would otherwise copy up to a vocabulary's worth of them): the same ids, in the same order.
     */
    List<Suggestion> topWithPrefix(float[] logProbs, String prefix, int k) {
        int[] range = prefixRange(prefix);
        return top(logProbs, sortedIds, range[0], range[1], k);
    }

    // -- completion and typos ------------------------------------------------------------------

    /** The candidates of a completion of {@code prefix} (normalized, stripped): with its typo prefixes when the ranker corrects typos. */
    Completion completion(String prefix) {
        if (typos == null) return new Completion(prefix);
        int[] typed = TextSpec.codePoints(prefix);
        if (typed.length < typos.minLetters) return new Completion(prefix);
        synchronized (typedCache) {
            Completion c = typedCache.get(prefix);
            if (c != null) return c;
        }
        Completion c = new Completion(prefix, typed, typoIndex.candidates(typed, typos), typoIndex, sortedPosition);
        synchronized (typedCache) {
            typedCache.put(prefix, c);
        }
        return c;
    }

    /** Forgets the completions of the letters typed so far (a benchmark's pass starts from none; the index stays). */
    void forgetTyped() {
        synchronized (typedCache) {
            typedCache.clear();
        }
    }

    /** The letters of a typo prefix. */
    String typoText(TypoIndex.Prefix p) {
        return typoIndex.text(p);
    }

    /**
     * The k best words being typed as {@code prefix} (normalized, stripped, not empty), merged with
     * the phrase table's entry and the history as {@link #merge} does, with the letters as typed
     * kept beside a correction ({@link #keepTyped}): Python's {@code Session.complete}.
     */
    List<Suggestion> complete(float[] logProbs, String prefix, int k, PhraseMatch phrase, UserHistory history, double a,
                              String previousWord) {
        Completion c = completion(prefix);
        if (c.typos.isEmpty()) return merge(topWithPrefix(logProbs, prefix, k), k, prefix, phrase, history, a, previousWord, logProbs);
        List<Suggestion> top = topWeighted(logProbs, c, k);
        return keepTyped(merge(top, k, c, phrase, history, a, previousWord, logProbs), c, k, logProbs);
    }

    /**
     * The k best candidates of {@code c} by {@code ln p_m + ln f} (double precision; ties by id
     * ascending), each scored {@code f * p_m} (Python's {@code top_weighted}).
     */
    List<Suggestion> topWeighted(float[] logProbs, Completion c, int k) {
        if (k < 1) throw new IllegalArgumentException("k must be >= 1, got " + k);
        TypoCover cover = c.cover();
        int[] best = new int[k];
        double[] keys = new double[k];
        double[] bestFactor = new double[k];
        int n = 0;
        for (int s = 0; s < cover.size; s++) {
            double f = cover.factor[s];
            n = scan(logProbs, sortedIds, cover.lo[s], cover.hi[s], typos.log(f), f, n, best, keys, bestFactor);
        }
        List<Suggestion> out = new ArrayList<Suggestion>(n);
        for (int i = 0; i < n; i++) {
            float logProb = logProbs[best[i]];
            out.add(new Suggestion(vocab.tokenOf(best[i]), best[i], logProb, bestFactor[i] * modelProbability(logProb)));
        }
        return out;
    }

    /**
     * Keeps in {@code best[0, n)} the best ids of {@code ids[from, to)} and those already there, by
     * {@code key = ln p_m + logF} descending in double precision (ties by id ascending, NaN last),
     * with their keys and factor f; returns the new count, at most {@code best.length}. The one
     * scan every completion and suggestion runs (a float log-prob plus 0 is the same double, in the
     * same order), so that the JIT compiles it once for all of them.
     */
    private static int scan(float[] logProbs, int[] ids, int from, int to, double logF, double f, int n, int[] best,
                            double[] keys, double[] factors) {
        int k = best.length;
        for (int i = from; i < to; i++) {
            int id = ids[i];
            double key = (double) logProbs[id] + logF;
            if (n == k && !before(key, id, keys[n - 1], best[n - 1])) continue;
            int j = n < k ? n++ : n - 1;
            while (j > 0 && before(key, id, keys[j - 1], best[j - 1])) {
                best[j] = best[j - 1];
                keys[j] = keys[j - 1];
                factors[j] = factors[j - 1];
                j--;
            }
            best[j] = id;
            keys[j] = key;
            factors[j] = f;
        }
        return n;
    }

    private static boolean before(double x, int a, double y, int b) {
        if (x != y) {
            if (Double.isNaN(x)) return false;
            if (Double.isNaN(y)) return true;
            return x > y;
        }
        return a < b;
    }

    /**
     * {@code strip} with the letters as typed in its last place when it shows a correction and not
     * them (Python's {@code keep_typed}): a tap commits them as they are. Their score is the model's
     * probability (0 outside the vocabulary). Not for a one-word strip, nor for letters that may
     * never be suggested (a special token, a blocklisted word).
     */
    List<Suggestion> keepTyped(List<Suggestion> strip, Completion c, int k, float[] logProbs) {
        String typed = c.prefix;
        if (k < 2 || c.typos.isEmpty() || Vocabulary.SPECIAL_TOKENS.contains(typed) || blocked(typed)) return strip;
        boolean corrected = false;
        for (Suggestion s : strip) {
            if (s.word.equals(typed)) return strip;
            if (!s.word.startsWith(typed)) corrected = true;
        }
        if (!corrected) return strip;
        List<Suggestion> out = new ArrayList<Suggestion>(strip.subList(0, Math.min(k - 1, strip.size())));
        int id = vocab.contains(typed) ? vocab.idOf(typed) : -1;
        float logProb = id >= 0 ? logProbs[id] : Float.NEGATIVE_INFINITY;
        out.add(Suggestion.typed(typed, id, logProb, id >= 0 ? modelProbability(logProb) : 0.0));
        return out;
    }

    private List<Suggestion> top(float[] logProbs, int[] ids, int from, int to, int k) {
        if (k < 1) throw new IllegalArgumentException("k must be >= 1, got " + k);
        int m = Math.min(k, to - from);
        if (m <= 0) return new ArrayList<Suggestion>();
        int[] best = new int[m];
        int n = scan(logProbs, ids, from, to, 0.0, 1.0, 0, best, new double[m], new double[m]);
        List<Suggestion> out = new ArrayList<Suggestion>(n);
        for (int i = 0; i < n; i++) out.add(new Suggestion(vocab.tokenOf(best[i]), best[i], logProbs[best[i]]));
        return out;
    }

    // -- the phrase table ---------------------------------------------------------------------------

    /** True when the model file carries a phrase table. */
    boolean hasPhrases() {
        return phrases != null && gate != null;
    }

    /**
     * The table's entry for the chunk's inputs {@code context[0..length)} (ids, {@code <bos>}
     * first at a sentence start), or null: no table, no stored context, or a gate weight of 0 there.
     */
    PhraseMatch phraseMatch(int[] context, int length) {
        if (!hasPhrases()) return null;
        PhraseTable.Entry found = phrases.lookup(context, length);
        if (found == null) return null;
        double weight = gate.weight(found.n, found.users);
        return weight > 0 ? new PhraseMatch(found, weight) : null;
    }

    // -- the merge -------------------------------------------------------------------------------

    /**
     * The k best of the merged scores (class comment), given the model's own k best {@code top}
     * over the candidates of {@code prefix} ("" for next-word suggestions) and the log-probs they
     * came from. {@code phrase}: the table's match here or null; {@code history}: the user's, with
     * share {@code a} after {@code previousWord} (null at a sentence start), or null. With neither
     * a match nor a positive share, {@code top} unchanged.
     */
    List<Suggestion> merge(List<Suggestion> top, int k, String prefix, PhraseMatch phrase, UserHistory history, double a,
                           String previousWord, float[] logProbs) {
        if (history == null) a = 0.0;
        if (phrase == null && a <= 0) return top;
        return merge(top, k, new Completion(prefix), phrase, history, a, previousWord, logProbs);
    }

    /**
     * As {@link #merge(List, int, String, PhraseMatch, UserHistory, double, String, float[])} over
     * the candidates of {@code c}, each score multiplied by its word's channel factor f
     * ({@link Completion#weight}; {@code top} then holds {@code f * p_m}).
     */
    List<Suggestion> merge(List<Suggestion> top, int k, Completion c, PhraseMatch phrase, UserHistory history, double a,
                           String previousWord, float[] logProbs) {
        if (history == null) a = 0.0;
        if (phrase == null && a <= 0) return top;
        String prefix = c.prefix;
        double lam = phrase != null ? phrase.weight : 0.0;
        double scale = (1.0 - a) * (1.0 - lam);
        Map<String, Suggestion> scores = new LinkedHashMap<String, Suggestion>();
        for (Suggestion s : top) {
            double f = c.weight(s.word, s.id);
            scores.put(s.word, new Suggestion(s.word, s.id, s.logProb, scale * (f * modelProbability(s.logProb))));
        }
        if (phrase != null) {
            PhraseTable.Entry e = phrase.entry;
            for (int i = 0; i < e.size(); i++) {
                int id = e.id(i);
                String word = vocab.tokenOf(id);
                double f = never[id] ? 0.0 : c.weight(word, id);
                if (f == 0.0) continue;
                Suggestion had = scores.get(word);
                // f p_m as Python reads it: back from the model's top score, else from the distribution
                double fp = had != null && scale > 0 ? had.score / scale : f * modelProbability(logProbs[id]);
                scores.put(word, new Suggestion(word, id, logProbs[id], (1.0 - a) * ((1.0 - lam) * fp + lam * f * e.q(i))));
            }
        }
        if (a > 0) {
            List<String> also = new ArrayList<String>(scores.keySet());
            if (!prefix.isEmpty()) for (String p : c.prefixes()) also.addAll(history.wordsWithPrefix(p));
            Map<String, Double> hist = history.candidates(previousWord, also);
            for (Map.Entry<String, Suggestion> s : scores.entrySet()) {
                Double h = hist.get(s.getKey());
                Suggestion x = s.getValue();
                s.setValue(new Suggestion(x.word, x.id, x.logProb, x.score + a * c.weight(x.word, x.id) * (h == null ? 0.0 : h)));
            }
            // Every history candidate not yet scored: Python takes them by h while they can still reach the k
            // best; scoring all of them gives the same k best.
            for (Map.Entry<String, Double> h : hist.entrySet()) {
                String word = h.getKey();
                if (scores.containsKey(word) || blocked(word)) continue;
                int id = -1;
                float logProb = Float.NEGATIVE_INFINITY;
                double pModel = 0.0;
                double f = word.startsWith(prefix) ? 1.0 : 0.0;  // a word only the history knows: by its prefix
                if (vocab.contains(word)) {
                    id = vocab.idOf(word);
                    if (never[id]) continue;
                    logProb = logProbs[id];
                    pModel = modelProbability(logProb);
                    f = c.weight(word, id);
                }
                if (f == 0.0) continue;
                scores.put(word, new Suggestion(word, id, logProb, scale * f * pModel + a * f * h.getValue()));
            }
        }
        List<Suggestion> ranked = new ArrayList<Suggestion>(scores.values());
        Collections.sort(ranked, BY_SCORE);
        return new ArrayList<Suggestion>(ranked.subList(0, Math.min(k, ranked.size())));
    }

    /** exp of a float32 log-prob, rounded to float32 as Python's {@code float(np.exp(log_probs[i]))}. */
    static double modelProbability(float logProb) {
        return (float) Math.exp(logProb);
    }

    /** Score descending (NaN last), then the word in code point order. */
    static final Comparator<Suggestion> BY_SCORE = new Comparator<Suggestion>() {
        @Override
        public int compare(Suggestion x, Suggestion y) {
            if (x.score != y.score) {
                if (Double.isNaN(x.score)) return 1;
                if (Double.isNaN(y.score)) return -1;
                return x.score > y.score ? -1 : 1;
            }
            return UserHistory.compareCodePoints(x.word, y.word);
        }
    };
}
