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
    private final List<String> ignoredBlocklist;
    /** Every token of every blocklist entry, in the vocabulary or not. */
    private final Set<String> blockedSpellings;

    /**
     * @param blocklist words never to suggest, each tokenized by the text spec (see {@link Predictor});
     * @param phrases the model's phrase table, or null (then {@code gate} is ignored)
     */
    Ranker(Vocabulary vocab, Iterable<String> blocklist, PhraseTable phrases, PhraseGate gate) {
        this.vocab = vocab;
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
        for (int k = 0; k < n; k++) {
            sortedIds[k] = order[k];
            sortedWords[k] = cps[order[k]];
        }
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
        double lam = phrase != null ? phrase.weight : 0.0;
        double scale = (1.0 - a) * (1.0 - lam);
        Map<String, Suggestion> scores = new LinkedHashMap<String, Suggestion>();
        for (Suggestion s : top) scores.put(s.word, new Suggestion(s.word, s.id, s.logProb, scale * modelProbability(s.logProb)));
        if (phrase != null) {
            PhraseTable.Entry e = phrase.entry;
            for (int i = 0; i < e.size(); i++) {
                int id = e.id(i);
                String word = vocab.tokenOf(id);
                if (never[id] || !word.startsWith(prefix)) continue;
                Suggestion had = scores.get(word);
                // p_m as Python reads it: back from the model's top score, else from the distribution
                double pModel = had != null && scale > 0 ? had.score / scale : modelProbability(logProbs[id]);
                scores.put(word, new Suggestion(word, id, logProbs[id], (1.0 - a) * ((1.0 - lam) * pModel + lam * e.q(i))));
            }
        }
        if (a > 0) {
            List<String> also = new ArrayList<String>(scores.keySet());
            if (!prefix.isEmpty()) also.addAll(history.wordsWithPrefix(prefix));
            Map<String, Double> hist = history.candidates(previousWord, also);
            for (Map.Entry<String, Suggestion> s : scores.entrySet()) {
                Double h = hist.get(s.getKey());
                Suggestion x = s.getValue();
                s.setValue(new Suggestion(x.word, x.id, x.logProb, x.score + a * (h == null ? 0.0 : h)));
            }
            // Every history candidate not yet scored: Python takes them by h while they can still reach the k
            // best; scoring all of them gives the same k best.
            for (Map.Entry<String, Double> h : hist.entrySet()) {
                String word = h.getKey();
                if (scores.containsKey(word) || !word.startsWith(prefix) || blocked(word)) continue;
                int id = -1;
                float logProb = Float.NEGATIVE_INFINITY;
                double pModel = 0.0;
                if (vocab.contains(word)) {
                    id = vocab.idOf(word);
                    if (never[id]) continue;
                    logProb = logProbs[id];
                    pModel = modelProbability(logProb);
                }
                scores.put(word, new Suggestion(word, id, logProb, scale * pModel + a * h.getValue()));
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
