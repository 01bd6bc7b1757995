package org.keyboardlm.core;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileNotFoundException;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.math.BigDecimal;
import java.math.MathContext;
import java.math.RoundingMode;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What one user has typed, remembered on the device: decayed counts of words and word pairs
 * (keyboard_lm/inference/user_history.py, rule by rule, in double precision).
 *
 * <p>Every learnt word adds one to its count and to the count of the pair (previous word,
 * word); older counts decay by half every {@code halfLife} learnt words. The next-word
 * distribution is the pair counts after the previous word, smoothed towards the unigram
 * counts: {@code p(w | prev) = (c(prev, w) + beta c(w) / C) / (c(prev, .) + beta)}, where
 * {@code C} is the decayed total of all words. A sentence's first word has the previous word
 * {@link #START}.
 *
 * <p>Bounded: at most {@code maxWords} words and {@code maxPairs} pairs; when a bound is
 * passed, the entries with the smallest decayed counts (then the least recently seen) are
 * evicted down to 90% of it. An evicted word takes the pairs that end in it with it.
 *
 * <p>The state is stored as the JSON of Python's {@code to_dict()} (format
 * {@value #FORMAT}, version 1), so a file saved by either language loads in the other. The
 * core has no JSON library: a small reader and writer for this format live here.
 *
 * <p>The history also holds the user's mixture weight (Python's {@code UserHistory.weight}:
 * the one {@code Session.personalize} chose on the user's own held-out text), saved with the
 * counts: {@link #weight()} is null while it is unset, and a {@link Session} without a weight
 * of its own uses it ({@link Session#historyWeight()}).
 *
 * <p>Thread-safe: every public method holds the object's lock, so the keyboard's sessions
 * and its settings screen can share one history.
 */
public final class UserHistory {
    public static final String FORMAT = "keyboard_lm.user_history";
    public static final int VERSION = 1;
    /** The previous word of a sentence's first word. */
    public static final String START = "<s>";
    /** How many of the most counted words are always candidates for a suggestion. */
    public static final int TOP_WORDS = 64;
    public static final double DEFAULT_HALF_LIFE = 2000.0;
    public static final int DEFAULT_MAX_WORDS = 2000;
    public static final int DEFAULT_MAX_PAIRS = 10000;
    public static final double DEFAULT_BETA = 2.0;

    /** A decayed count and the clock when it was last counted. */
    private static final class Entry {
        double count;
        long clock;

        Entry(double count, long clock) {
            this.count = count;
            this.clock = clock;
        }
    }

    public final double halfLife;
    public final int maxWords;
    public final int maxPairs;
    public final double beta;

    /** Words learnt so far. */
    private long clock;
    /** Insertion-ordered, as Python's dicts: eviction ties and removal order follow it. */
    private final LinkedHashMap<String, Entry> words = new LinkedHashMap<String, Entry>();
    private final LinkedHashMap<String, LinkedHashMap<String, Entry>> pairs = new LinkedHashMap<String, LinkedHashMap<String, Entry>>();
    /** prev -> decayed count of the pairs after it. */
    private final LinkedHashMap<String, Entry> contexts = new LinkedHashMap<String, Entry>();
    private final Entry total = new Entry(0.0, 0);
    private int numPairs;
    /** topWords(TOP_WORDS), kept up to date as words are learnt once it has been asked for; null until then. */
    private List<String> top;
    /** The user's mixture weight in [0, 1] (Python's {@code weight}); null: unset, the session's default. */
    private Double weight;
    /** Changes of any kind (learning, unlearning, removal, weight, clearing) since this object was made; not saved. */
    private long changes;
    /** Where changes are recorded for the history file's journal ({@link HistoryStore}); null: nowhere. */
    private HistoryJournal.Recorder journal;
    /** Counts {@link #clear()} and {@link #replaceWith} calls: what was learnt before one cannot be unlearnt after it. */
    private long epoch;

    /** A history with the defaults of the Python class. */
    public UserHistory() {
        this(DEFAULT_HALF_LIFE, DEFAULT_MAX_WORDS, DEFAULT_MAX_PAIRS, DEFAULT_BETA);
    }

    public UserHistory(double halfLife, int maxWords, int maxPairs, double beta) {
        if (!(halfLife > 0)) throw new IllegalArgumentException("half_life must be > 0 words, got " + formatDouble(halfLife));
        if (maxWords < 1 || maxPairs < 1) {
            throw new IllegalArgumentException("max_words and max_pairs must be >= 1, got " + maxWords + " and " + maxPairs);
        }
        if (!(beta > 0)) throw new IllegalArgumentException("beta must be > 0, got " + formatDouble(beta));
        this.halfLife = halfLife;
        this.maxWords = maxWords;
        this.maxPairs = maxPairs;
        this.beta = beta;
    }

    // -- counting --------------------------------------------------------------------------

    private double decayed(Entry e) {
        return e.count * Math.pow(0.5, (double) (clock - e.clock) / halfLife);
    }

    private void add(Entry e) {
        e.count = decayed(e) + 1.0;
        e.clock = clock;
    }

    /** Python's max(0.0, x). */
    private static double atLeastZero(double x) {
        return x > 0.0 ? x : 0.0;
    }

    /** Count one sentence (normalized words, as the tokenizer gives them). */
    public synchronized void learn(List<String> sentence) {
        if (sentence == null) throw new IllegalArgumentException("learn() takes a list of words (one sentence), not null");
        String prev = START;
        for (String word : sentence) {
            learnWord(prev, word);
            prev = word;
        }
    }

    /** Count {@code word} typed after {@code prev} (null or {@link #START}: the first word of a sentence). */
    public synchronized void learnWord(String prev, String word) {
        if (word == null || word.isEmpty() || word.equals(START)) {
            throw new IllegalArgumentException("not a word to learn: " + (word == null ? "null" : "'" + word + "'"));
        }
        if (prev == null) prev = START;
        clock++;
        changes++;
        Entry w = words.get(word);
        if (w == null) {
            w = new Entry(0.0, clock);
            words.put(word, w);
        }
        add(w);
        LinkedHashMap<String, Entry> next = pairs.get(prev);
        if (next == null) {
            next = new LinkedHashMap<String, Entry>();
            pairs.put(prev, next);
        }
        Entry pair = next.get(word);
        if (pair == null) {
            pair = new Entry(0.0, clock);
            next.put(word, pair);
            numPairs++;
        }
        add(pair);
        Entry ctx = contexts.get(prev);
        if (ctx == null) {
            ctx = new Entry(0.0, clock);
            contexts.put(prev, ctx);
        }
        add(ctx);
        add(total);
        updateTop(word);
        if (words.size() > maxWords) {
            evictWords();
            top = null;
        }
        if (numPairs > maxPairs) evictPairs();
        if (journal != null) journal.learn(prev, word, clock);
    }

    /**
     * Take back one {@link #learnWord} of {@code word} after {@code prev} (null: a sentence
     * start) made when the clock was {@code learntAt} (the {@link #clock()} right after it): the
     * word's, the pair's, the context's and the total's decayed counts each lose what that one
     * count has decayed to since. An entry left with no count (below 1e-9) is removed, as are the
     * pairs that end in a removed word. The clock does not go back. Returns false (and changes
     * nothing) when the history no longer holds the pair (evicted or removed since). Java only:
     * Python's UserHistory cannot unlearn; the file format is unchanged.
     */
    public synchronized boolean unlearnWord(String prev, String word, long learntAt) {
        if (word == null || word.isEmpty()) throw new IllegalArgumentException("not a word to unlearn: " + (word == null ? "null" : "''"));
        if (learntAt < 1 || learntAt > clock) throw new IllegalArgumentException("learntAt must be in [1, clock], got " + learntAt);
        if (prev == null) prev = START;
        Map<String, Entry> next = pairs.get(prev);
        Entry pair = next == null ? null : next.get(word);
        Entry w = words.get(word);
        if (pair == null || w == null) return false;
        double once = Math.pow(0.5, (double) (clock - learntAt) / halfLife);
        changes++;
        for (Entry e : new Entry[] {w, pair, contexts.get(prev), total}) {
            e.count = atLeastZero(decayed(e) - once);
            e.clock = clock;
        }
        if (pair.count < GONE) removePair(prev, word);
        if (w.count < GONE) forget(word);
        top = null;
        if (journal != null) journal.unlearn(prev, word, learntAt);
        return true;
    }

    /**
     * Remove {@code word} from the history (a user's "remove this suggestion"): its own count
     * (taken off the total), every pair that ends in it, and every pair after it with its
     * context, so it is neither suggested nor a previous word any more. Returns false when the
     * history does not hold it as a word or as a previous word. Java only (Python's UserHistory
     * has no such operation); the file format is unchanged.
     */
    public synchronized boolean removeWord(String word) {
        if (word == null) throw new IllegalArgumentException("word must not be null");
        boolean held = words.containsKey(word) || pairs.containsKey(word);
        if (!held) return false;
        changes++;
        if (words.containsKey(word)) forget(word);
        LinkedHashMap<String, Entry> after = pairs.remove(word);
        if (after != null) {
            numPairs -= after.size();
            contexts.remove(word);
        }
        top = null;
        if (journal != null) journal.remove(word);
        return true;
    }

    /** Counts below this are gone (an unlearnt word's leftover rounding). */
    private static final double GONE = 1e-9;

    /** Drop a word's own entry, its share of the total, and the pairs that end in it (as eviction does). */
    private void forget(String word) {
        Entry e = words.remove(word);
        total.count = atLeastZero(decayed(total) - decayed(e));
        total.clock = clock;
        for (String prev : new ArrayList<String>(pairs.keySet())) {
            if (pairs.get(prev).containsKey(word)) removePair(prev, word);
        }
    }

    /**
     * Changes of any kind since this object was made (learning, unlearning, removing, the
     * weight, clearing): a store saves when it differs from the value at its last save. Not saved.
     */
    public synchronized long changes() {
        return changes;
    }

    public synchronized int numWords() {
        return words.size();
    }

    public synchronized int numPairs() {
        return numPairs;
    }

    /** Words learnt so far (Python's {@code clock}); 0 after {@link #clear()}. */
    public synchronized long clock() {
        return clock;
    }

    private void evictWords() {
        int keep = (int) (maxWords * 0.9);
        List<Map.Entry<String, Entry>> ranked = new ArrayList<Map.Entry<String, Entry>>(words.entrySet());
        final Map<String, Double> now = new java.util.HashMap<String, Double>(ranked.size() * 2);
        for (Map.Entry<String, Entry> e : ranked) now.put(e.getKey(), decayed(e.getValue()));
        // Largest (decayed count, clock) first; the sort is stable, as Python's sorted(reverse=True).
        Collections.sort(ranked, new Comparator<Map.Entry<String, Entry>>() {
            @Override
            public int compare(Map.Entry<String, Entry> a, Map.Entry<String, Entry> b) {
                int c = compareDoubles(now.get(b.getKey()), now.get(a.getKey()));
                return c != 0 ? c : Long.compare(b.getValue().clock, a.getValue().clock);
            }
        });
        for (Map.Entry<String, Entry> e : ranked.subList(Math.min(keep, ranked.size()), ranked.size())) {
            words.remove(e.getKey());
            total.count = atLeastZero(decayed(total) - decayed(e.getValue()));
            total.clock = clock;
        }
        // Pairs that end in an evicted word go with it; their contexts keep their (decayed) totals.
        for (String prev : new ArrayList<String>(pairs.keySet())) {
            List<String> gone = new ArrayList<String>();
            for (String word : pairs.get(prev).keySet()) if (!words.containsKey(word)) gone.add(word);
            for (String word : gone) removePair(prev, word);
        }
    }

    private void evictPairs() {
        int keep = (int) (maxPairs * 0.9);
        final class Ranked {
            final double count;
            final long clock;
            final String prev;
            final String word;

            Ranked(double count, long clock, String prev, String word) {
                this.count = count;
                this.clock = clock;
                this.prev = prev;
                this.word = word;
            }
        }
        List<Ranked> ranked = new ArrayList<Ranked>(numPairs);
        for (Map.Entry<String, LinkedHashMap<String, Entry>> p : pairs.entrySet()) {
            for (Map.Entry<String, Entry> w : p.getValue().entrySet()) {
                ranked.add(new Ranked(decayed(w.getValue()), w.getValue().clock, p.getKey(), w.getKey()));
            }
        }
        // Python sorts the tuples (decayed count, clock, prev, word), largest first.
        Collections.sort(ranked, new Comparator<Ranked>() {
            @Override
            public int compare(Ranked a, Ranked b) {
                int c = compareDoubles(b.count, a.count);
                if (c == 0) c = Long.compare(b.clock, a.clock);
                if (c == 0) c = compareCodePoints(b.prev, a.prev);
                if (c == 0) c = compareCodePoints(b.word, a.word);
                return c;
            }
        });
        for (Ranked r : ranked.subList(Math.min(keep, ranked.size()), ranked.size())) removePair(r.prev, r.word);
    }

    private void removePair(String prev, String word) {
        LinkedHashMap<String, Entry> next = pairs.get(prev);
        Entry entry = next.remove(word);
        numPairs--;
        Entry ctx = contexts.get(prev);
        ctx.count = atLeastZero(decayed(ctx) - decayed(entry));
        ctx.clock = clock;
        if (next.isEmpty()) {
            pairs.remove(prev);
            contexts.remove(prev);
        }
    }

    /** Python's float comparison for sorting: equal values (0.0 and -0.0 too) compare equal. */
    private static int compareDoubles(double a, double b) {
        return a < b ? -1 : a > b ? 1 : 0;
    }

    // -- predicting ------------------------------------------------------------------------

    /** Decayed count of {@code word}. */
    public synchronized double count(String word) {
        Entry e = words.get(word);
        return e != null ? decayed(e) : 0.0;
    }

    /** Decayed count of {@code word} after {@code prev}; a null {@code prev} gives the word's own count, as Python's. */
    public synchronized double count(String word, String prev) {
        if (prev == null) return count(word);
        Map<String, Entry> next = pairs.get(prev);
        Entry e = next == null ? null : next.get(word);
        return e != null ? decayed(e) : 0.0;
    }

    /** Decayed count of the words typed after {@code prev} (null: a sentence start, {@link #START}); 0 when none. */
    public synchronized double contextCount(String prev) {
        Entry e = contexts.get(prev == null ? START : prev);
        return e != null ? decayed(e) : 0.0;
    }

    /** p(word | prev) ({@code prev} null: a sentence's first word); 0 for a word the history does not hold. */
    public synchronized double probability(String word, String prev) {
        double all = decayed(total);
        Entry entry = words.get(word);
        if (all <= 0 || entry == null) return 0.0;
        if (prev == null) prev = START;
        Entry ctxEntry = contexts.get(prev);
        double ctx = ctxEntry != null ? decayed(ctxEntry) : 0.0;
        Map<String, Entry> next = pairs.get(prev);
        Entry pair = next == null ? null : next.get(word);
        return ((pair != null ? decayed(pair) : 0.0) + beta * decayed(entry) / all) / (ctx + beta);
    }

    /** log2 of the word's count at clock 0: decayed counts keep this order whatever the clock. */
    private double key(String word) {
        Entry e = words.get(word);
        return e.count > 0 ? log2(e.count) + e.clock / halfLife : Double.NEGATIVE_INFINITY;
    }

    private static final double LN2 = Math.log(2.0);

    /** log2, exact for powers of two (Python's math.log2 is). */
    static double log2(double x) {
        if (!(x >= Double.MIN_NORMAL) || Double.isInfinite(x)) return Math.log(x) / LN2;
        int e = Math.getExponent(x);
        double m = x / Math.scalb(1.0, e);  // exact, in [1, 2)
        if (m > 1.4142135623730951) {
            m /= 2;  // exact; in (0.707, 1) the logarithm stays small and precise
            e++;
        }
        return e + Math.log(m) / LN2;
    }

    /** The words in Python's order for {@code sorted(words, key=_rank)}: largest key first, then by spelling. */
    private List<String> ranked(Collection<String> ws) {
        final Map<String, Double> keys = new java.util.HashMap<String, Double>(ws.size() * 2);
        for (String w : ws) keys.put(w, key(w));
        List<String> out = new ArrayList<String>(ws);
        Collections.sort(out, new Comparator<String>() {
            @Override
            public int compare(String a, String b) {
                int c = compareDoubles(keys.get(b), keys.get(a));
                return c != 0 ? c : compareCodePoints(a, b);
            }
        });
        return out;
    }

    /** The {@link #TOP_WORDS} words with the largest decayed counts, largest first. */
    public synchronized List<String> topWords() {
        return topWords(TOP_WORDS);
    }

    /** The {@code n} words with the largest decayed counts, largest first (ties by spelling). */
    public synchronized List<String> topWords(int n) {
        if (n < 0) throw new IllegalArgumentException("n must be >= 0, got " + n);
        if (n != TOP_WORDS) {
            List<String> all = ranked(words.keySet());
            return new ArrayList<String>(all.subList(0, Math.min(n, all.size())));
        }
        if (top == null) {
            List<String> all = ranked(words.keySet());
            top = new ArrayList<String>(all.subList(0, Math.min(TOP_WORDS, all.size())));
        }
        return new ArrayList<String>(top);
    }

    /** Learning raises one word's key and no other's: only that word can enter or move in the top list. */
    private void updateTop(String word) {
        if (top == null) return;
        if (top.contains(word) || top.size() < TOP_WORDS || key(word) > key(top.get(top.size() - 1))) {
            Set<String> set = new HashSet<String>(top);
            set.add(word);
            List<String> all = ranked(set);
            top = new ArrayList<String>(all.subList(0, Math.min(TOP_WORDS, all.size())));
        }
    }

    /** The history's words that start with {@code prefix}. */
    public synchronized List<String> wordsWithPrefix(String prefix) {
        List<String> out = new ArrayList<String>();
        for (String w : words.keySet()) if (w.startsWith(prefix)) out.add(w);
        return out;
    }

    /**
     * p(w | prev) of the words most likely after {@code prev}: the ones typed after it, the
     * {@link #TOP_WORDS} most counted, and those of {@code also} the history holds.
     */
    public synchronized Map<String, Double> candidates(String prev, Collection<String> also) {
        return candidates(prev, TOP_WORDS, also);
    }

    /** As {@link #candidates(String, Collection)} with the {@code n} most counted words. */
    public synchronized Map<String, Double> candidates(String prev, int n, Collection<String> also) {
        if (prev == null) prev = START;
        Set<String> ws = new java.util.LinkedHashSet<String>();
        Map<String, Entry> next = pairs.get(prev);
        if (next != null) ws.addAll(next.keySet());
        ws.addAll(topWords(n));
        if (also != null) for (String w : also) if (words.containsKey(w)) ws.add(w);
        Map<String, Double> out = new LinkedHashMap<String, Double>(ws.size() * 2);
        for (String w : ws) out.put(w, probability(w, prev));
        return out;
    }

    /** p(w | prev) for every word in the history (they sum to 1; empty before anything is learnt). */
    public synchronized Map<String, Double> distribution(String prev) {
        Map<String, Double> out = new LinkedHashMap<String, Double>(words.size() * 2);
        for (String w : words.keySet()) out.put(w, probability(w, prev));
        return out;
    }

    /**
     * The user's mixture weight, in [0, 1], chosen by Python's {@code Session.personalize} and
     * saved with the history; null while it is unset (sessions then use their default).
     */
    public synchronized Double weight() {
        return weight;
    }

    /** Set the user's mixture weight (a number in [0, 1]); null unsets it. Saved by {@link #toJson()}. */
    public synchronized void setWeight(Double weight) {
        if (weight != null && !(weight >= 0 && weight <= 1)) {
            throw new IllegalArgumentException("weight must be a number in [0, 1], got " + formatDouble(weight));
        }
        if (weight == null ? this.weight != null : !weight.equals(this.weight)) {
            changes++;
            if (journal != null) journal.weight(weight);
        }
        this.weight = weight;
    }

    /**
     * A deep copy: the same settings, counts, clocks and weight; learning into either never
     * changes the other. Made as Python's {@code UserHistory.from_dict(h.to_dict())} (what its
     * {@code choose_history_weight} copies with): through the saved form, so the copy's entries
     * are in key order, as a loaded history's, and ties between equal counts evict alike on
     * both sides.
     */
    public UserHistory copy() {
        String json = toJson();
        try {
            return fromJson(json, "user history copy");
        } catch (UserHistoryException e) {
            throw new IllegalStateException("a user history does not read back its own state: " + e.getMessage());
        }
    }

    /**
     * Take {@code other}'s counts, clocks and weight in place of this history's, keeping this
     * object (the keyboard's sessions share it): a kept copy restored ({@link HistoryStore#restore}).
     * The settings (half-life, bounds, beta) must be the same, since they are fixed at
     * construction. A journal cannot replay this change, so the store writes a snapshot after it.
     */
    synchronized void replaceWith(UserHistory other) {
        if (other == this) return;
        String mismatch = otherSettings(other);
        if (mismatch != null) throw new IllegalArgumentException(mismatch);
        synchronized (other) {
            changes++;
            epoch++;
            clock = other.clock;
            weight = other.weight;
            copyEntries(other.words, words);
            copyEntries(other.contexts, contexts);
            pairs.clear();
            for (Map.Entry<String, LinkedHashMap<String, Entry>> e : other.pairs.entrySet()) {
                LinkedHashMap<String, Entry> next = new LinkedHashMap<String, Entry>();
                copyEntries(e.getValue(), next);
                pairs.put(e.getKey(), next);
            }
            total.count = other.total.count;
            total.clock = other.total.clock;
            numPairs = other.numPairs;
            top = null;
        }
    }

    /** Null when {@code other} has this history's settings (half-life, bounds, beta); else one line saying how it differs. */
    String otherSettings(UserHistory other) {
        if (other.halfLife == halfLife && other.maxWords == maxWords && other.maxPairs == maxPairs && other.beta == beta) return null;
        return "it was made with other settings (half-life " + formatDouble(other.halfLife) + ", " + other.maxWords + " words, "
                + other.maxPairs + " pairs, beta " + formatDouble(other.beta) + "; this keyboard's: " + formatDouble(halfLife)
                + ", " + maxWords + ", " + maxPairs + ", " + formatDouble(beta) + ")";
    }

    private static void copyEntries(Map<String, Entry> from, Map<String, Entry> to) {
        to.clear();
        for (Map.Entry<String, Entry> e : from.entrySet()) to.put(e.getKey(), new Entry(e.getValue().count, e.getValue().clock));
    }

    /**
     * Changes when the history is cleared or replaced: a word learnt in an earlier epoch is no
     * longer there to unlearn ({@link TextField#unlearn} checks it).
     */
    synchronized long epoch() {
        return epoch;
    }

    /** Forget everything (the keyboard's settings action), the user's weight too; the settings stay. */
    public synchronized void clear() {
        changes++;
        epoch++;
        clock = 0;
        weight = null;
        words.clear();
        pairs.clear();
        contexts.clear();
        total.count = 0.0;
        total.clock = 0;
        numPairs = 0;
        top = null;
        if (journal != null) journal.clear();
    }

    /**
     * Put the entries in the order {@link #fromJson} gives them (code point order, as the file
     * lists them), so that this history and the one read back from {@link #toJson} evict ties and
     * sum decayed counts in the same order, and replaying the same changes on both gives the same
     * bits. {@link HistoryStore} calls it when it writes a snapshot.
     */
    synchronized void sortEntries() {
        reorder(words);
        reorder(contexts);
        LinkedHashMap<String, LinkedHashMap<String, Entry>> byPrev = new LinkedHashMap<String, LinkedHashMap<String, Entry>>();
        for (String prev : sorted(pairs.keySet())) {
            LinkedHashMap<String, Entry> next = pairs.get(prev);
            reorder(next);
            byPrev.put(prev, next);
        }
        pairs.clear();
        pairs.putAll(byPrev);
        top = null;
    }

    private static void reorder(LinkedHashMap<String, Entry> map) {
        LinkedHashMap<String, Entry> byKey = new LinkedHashMap<String, Entry>(map.size() * 2);
        for (String k : sorted(map.keySet())) byKey.put(k, map.get(k));
        map.clear();
        map.putAll(byKey);
    }

    /** Record every change from now on into {@code recorder} (null: stop), for the history file's journal. */
    synchronized void recordChanges(HistoryJournal.Recorder recorder) {
        this.journal = recorder;
    }

    /** The recorder set by {@link #recordChanges}, or null. */
    synchronized HistoryJournal.Recorder recorder() {
        return journal;
    }

    // -- storing ---------------------------------------------------------------------------

    /** The state as Python's {@code json.dumps(to_dict(), ensure_ascii=False, separators=(",", ":"))}. */
    public synchronized String toJson() {
        StringBuilder b = new StringBuilder(64 + 40 * (words.size() + numPairs + contexts.size()));
        b.append("{\"format\":");
        appendString(b, FORMAT);
        b.append(",\"version\":").append(VERSION);
        b.append(",\"half_life\":").append(formatDouble(halfLife));
        b.append(",\"max_words\":").append(maxWords);
        b.append(",\"max_pairs\":").append(maxPairs);
        b.append(",\"beta\":").append(formatDouble(beta));
        b.append(",\"clock\":").append(clock);
        b.append(",\"total\":[").append(formatDouble(total.count)).append(',').append(total.clock).append(']');
        b.append(",\"words\":[");
        appendKeyed(b, words);
        b.append("],\"pairs\":[");
        boolean first = true;
        for (String p : sorted(pairs.keySet())) {
            LinkedHashMap<String, Entry> next = pairs.get(p);
            for (String w : sorted(next.keySet())) {
                if (!first) b.append(',');
                first = false;
                b.append('[');
                appendString(b, p);
                b.append(',');
                appendString(b, w);
                appendEntry(b, next.get(w));
            }
        }
        b.append("],\"contexts\":[");
        appendKeyed(b, contexts);
        b.append(']');
        if (weight != null) b.append(",\"weight\":").append(formatDouble(weight));  // the last key, only when set
        b.append('}');
        return b.toString();
    }

    /** {@code [key,count,clock]} per entry, keys sorted, comma-separated. */
    private static void appendKeyed(StringBuilder b, Map<String, Entry> entries) {
        boolean first = true;
        for (String key : sorted(entries.keySet())) {
            if (!first) b.append(',');
            first = false;
            b.append('[');
            appendString(b, key);
            appendEntry(b, entries.get(key));
        }
    }

    private static void appendEntry(StringBuilder b, Entry e) {
        b.append(',').append(formatDouble(e.count)).append(',').append(e.clock).append(']');
    }

    private static List<String> sorted(Collection<String> keys) {
        List<String> out = new ArrayList<String>(keys);
        Collections.sort(out, CODE_POINT_ORDER);
        return out;
    }

    /** Python's string order: code points (not UTF-16 units), with no allocation. */
    static int compareCodePoints(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int x = a.codePointAt(i);
            int y = b.codePointAt(j);
            if (x != y) return x < y ? -1 : 1;
            i += Character.charCount(x);
            j += Character.charCount(y);
        }
        return i < a.length() ? 1 : j < b.length() ? -1 : 0;
    }

    static final Comparator<String> CODE_POINT_ORDER = new Comparator<String>() {
        @Override
        public int compare(String a, String b) {
            return compareCodePoints(a, b);
        }
    };

    /** A JSON string as Python's json module writes it with ensure_ascii=False (lone surrogates escaped). */
    static void appendString(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                case '\b': b.append("\\b"); break;
                case '\f': b.append("\\f"); break;
                default:
                    boolean pairHigh = Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
                    if (pairHigh) {
                        b.append(c).append(s.charAt(++i));
                    } else if (c < 0x20 || Character.isSurrogate(c)) {
                        b.append("\\u");
                        for (int shift = 12; shift >= 0; shift -= 4) b.append("0123456789abcdef".charAt((c >> shift) & 0xf));
                    } else {
                        b.append(c);
                    }
            }
        }
        b.append('"');
    }

    /**
     * A double as Python's repr (what its json module writes): the shortest digits that read
     * back to the same double, in fixed notation for 1e-4 <= |x| < 1e16, else as 1e-05.
     */
    static String formatDouble(double x) {
        if (Double.isNaN(x)) return "NaN";
        if (Double.isInfinite(x)) return x > 0 ? "Infinity" : "-Infinity";
        if (x == 0) return 1 / x < 0 ? "-0.0" : "0.0";
        String s = Double.toString(x);
        BigDecimal d = Double.parseDouble(s) == x ? new BigDecimal(s) : new BigDecimal(x);
        if (d.precision() >= 16 || Math.abs(x) < Double.MIN_NORMAL) {
            // Some Double.toString versions give a digit more than needed (long or subnormal values):
            // round the exact value to fewer digits while it still reads back to x (the nearest such
            // decimal, as Python's repr).
            BigDecimal exact = new BigDecimal(x);
            for (int digits = d.precision() - 1; digits >= 1; digits--) {
                BigDecimal shorter = exact.round(new MathContext(digits, RoundingMode.HALF_EVEN));
                if (Double.parseDouble(shorter.toString()) != x) break;
                d = shorter;
            }
        }
        d = d.stripTrailingZeros();
        boolean negative = d.signum() < 0;
        String digits = d.unscaledValue().abs().toString();
        int point = digits.length() - d.scale();  // |x| = 0.DIGITS x 10^point
        StringBuilder b = new StringBuilder(24);
        if (negative) b.append('-');
        if (point <= -4 || point > 16) {
            b.append(digits.charAt(0));
            if (digits.length() > 1) b.append('.').append(digits, 1, digits.length());
            int shown = point - 1;
            b.append('e').append(shown < 0 ? '-' : '+');
            if (Math.abs(shown) < 10) b.append('0');
            b.append(Math.abs(shown));
        } else if (point <= 0) {
            b.append("0.");
            for (int i = 0; i < -point; i++) b.append('0');
            b.append(digits);
        } else if (point < digits.length()) {
            b.append(digits, 0, point).append('.').append(digits, point, digits.length());
        } else {
            b.append(digits);
            for (int i = digits.length(); i < point; i++) b.append('0');
            b.append(".0");
        }
        return b.toString();
    }

    /**
     * A history from the JSON of Python's {@code to_dict()}; {@code where} (the file) starts
     * every error message. Refused, in one line: anything but this format ("not a keyboard_lm
     * user history"), another version, and a damaged state ("damaged user history": missing or
     * mistyped fields, negative or non-finite counts, clocks outside [0, clock], bounds passed,
     * a "weight" that is not a number in [0, 1]).
     */
    public static UserHistory fromJson(String text, String where) throws UserHistoryException {
        Object root;
        try {
            root = new Json(text).document();
        } catch (IllegalArgumentException e) {
            throw new UserHistoryException(where + ": not a keyboard_lm user history (" + e.getMessage() + ")");
        }
        if (!(root instanceof Map) || !FORMAT.equals(((Map<?, ?>) root).get("format"))) {
            Object format = root instanceof Map ? ((Map<?, ?>) root).get("format") : null;
            throw new UserHistoryException(where + ": not a keyboard_lm user history (format " + describe(format) + ")");
        }
        Map<?, ?> d = (Map<?, ?>) root;
        Object version = d.get("version");
        if (!(version instanceof Number) || ((Number) version).doubleValue() != VERSION) {
            throw new UserHistoryException(where + ": user history version " + describe(version) + ", this keyboard_lm reads " + VERSION);
        }
        UserHistory h;
        try {
            h = new UserHistory(number(d, "half_life"), (int) integer(d, "max_words", Integer.MIN_VALUE, Integer.MAX_VALUE),
                    (int) integer(d, "max_pairs", Integer.MIN_VALUE, Integer.MAX_VALUE), number(d, "beta"));
            h.clock = integer(field(d, "clock"), "clock");
            List<?> total = row(field(d, "total"), 2, "total");
            h.total.count = number(total.get(0), "total");
            h.total.clock = integer(total.get(1), "total");
            for (Object o : list(field(d, "words"), "words")) {
                List<?> r = row(o, 3, "words");
                h.words.put(string(r.get(0), "words"), new Entry(number(r.get(1), "words"), integer(r.get(2), "words")));
            }
            for (Object o : list(field(d, "pairs"), "pairs")) {
                List<?> r = row(o, 4, "pairs");
                String prev = string(r.get(0), "pairs");
                LinkedHashMap<String, Entry> next = h.pairs.get(prev);
                if (next == null) {
                    next = new LinkedHashMap<String, Entry>();
                    h.pairs.put(prev, next);
                }
                next.put(string(r.get(1), "pairs"), new Entry(number(r.get(2), "pairs"), integer(r.get(3), "pairs")));
            }
            for (Object o : list(field(d, "contexts"), "contexts")) {
                List<?> r = row(o, 3, "contexts");
                h.contexts.put(string(r.get(0), "contexts"), new Entry(number(r.get(1), "contexts"), integer(r.get(2), "contexts")));
            }
            Object weight = d.get("weight");  // optional; null or absent: unset
            if (weight != null) {
                // Python refuses a bool (a JSON true is not a weight), a string, and anything outside [0, 1].
                double w = weight instanceof Number ? ((Number) weight).doubleValue() : Double.NaN;
                if (!(w >= 0 && w <= 1)) throw new IllegalArgumentException("weight: " + describe(weight) + " is not a number in [0, 1]");
                h.weight = w;
            }
        } catch (IllegalArgumentException e) {
            throw new UserHistoryException(where + ": damaged user history (" + e.getMessage() + ")");
        }
        for (Map<String, Entry> next : h.pairs.values()) h.numPairs += next.size();
        boolean bad = !h.valid(h.total);
        for (Entry e : h.words.values()) bad |= !h.valid(e);
        for (Entry e : h.contexts.values()) bad |= !h.valid(e);
        for (Map<String, Entry> next : h.pairs.values()) for (Entry e : next.values()) bad |= !h.valid(e);
        if (bad || !h.pairs.keySet().equals(h.contexts.keySet()) || h.words.size() > h.maxWords || h.numPairs > h.maxPairs) {
            throw new UserHistoryException(where + ": damaged user history (counts, clocks or bounds out of range)");
        }
        return h;
    }

    private boolean valid(Entry e) {
        return !Double.isNaN(e.count) && !Double.isInfinite(e.count) && e.count >= 0 && e.clock >= 0 && e.clock <= clock;
    }

    private static Object field(Map<?, ?> d, String key) {
        if (!d.containsKey(key)) throw new IllegalArgumentException("no field '" + key + "'");
        return d.get(key);
    }

    private static double number(Map<?, ?> d, String key) {
        return number(field(d, key), key);
    }

    private static double number(Object o, String where) {
        if (!(o instanceof Number)) throw new IllegalArgumentException(where + ": " + describe(o) + " is not a number");
        return ((Number) o).doubleValue();
    }

    private static long integer(Map<?, ?> d, String key, long min, long max) {
        return integer(field(d, key), key, min, max);
    }

    private static long integer(Object o, String where) {
        return integer(o, where, Long.MIN_VALUE, Long.MAX_VALUE);
    }

    private static long integer(Object o, String where, long min, long max) {
        if (o instanceof Long) {
            long v = (Long) o;
            if (v >= min && v <= max) return v;
        } else if (o instanceof Double) {
            double v = (Double) o;
            if (v == Math.floor(v) && Math.abs(v) < 9.0e15 && v >= min && v <= max) return (long) v;
        }
        throw new IllegalArgumentException(where + ": " + describe(o) + " is not an integer in range");
    }

    private static String string(Object o, String where) {
        if (!(o instanceof String)) throw new IllegalArgumentException(where + ": " + describe(o) + " is not a string");
        return (String) o;
    }

    private static List<?> list(Object o, String where) {
        if (!(o instanceof List)) throw new IllegalArgumentException(where + ": not a list");
        return (List<?>) o;
    }

    private static List<?> row(Object o, int n, String where) {
        List<?> r = list(o, where);
        if (r.size() != n) throw new IllegalArgumentException(where + ": an entry of " + r.size() + " values, not " + n);
        return r;
    }

    /**
     * A parsed value of a history file, for its messages: a string by its length only, since in a
     * damaged file it may be a learnt word in the wrong place, and these messages reach the log
     * and the screen ({@link UserHistoryFile#notice}); anything else as {@link #repr}.
     */
    private static String describe(Object o) {
        return o instanceof String ? "a string of " + ((String) o).length() + " characters" : repr(o);
    }

    /** A short Python-like repr of a parsed JSON value, for messages (model files' too). */
    static String repr(Object o) {
        if (o == null) return "None";
        if (o instanceof String) {
            String s = (String) o;
            StringBuilder b = new StringBuilder();
            appendString(b, s.length() > 40 ? s.substring(0, 40) + "..." : s);  // escaped: the message stays one line
            return b.toString();
        }
        if (o instanceof Double) return formatDouble((Double) o);
        if (o instanceof Boolean) return ((Boolean) o) ? "True" : "False";
        if (o instanceof Map) return "an object";
        if (o instanceof List) return "a list";
        return String.valueOf(o);
    }

    /** Write the history as JSON, atomically (a crash leaves the previous file): PATH.tmp, then a rename. */
    public void save(String path) throws IOException {
        writeAtomically(path, toJson().getBytes(StandardCharsets.UTF_8));
    }

    /** {@code bytes} to {@code path}: {@code path.tmp}, fsync, rename; a crash leaves the previous file. */
    static void writeAtomically(String path, byte[] bytes) throws IOException {
        File file = new File(path);
        File tmp = new File(path + ".tmp");
        FileOutputStream out = new FileOutputStream(tmp);
        try {
            out.write(bytes);
            out.getFD().sync();
        } finally {
            out.close();
        }
        if (!tmp.renameTo(file)) {
            tmp.delete();
            throw new IOException(path + ": cannot replace the user history file");
        }
    }

    /** Read a file written by {@link #save} (or by Python's save); UserHistoryException names the file. */
    public static UserHistory load(String path) throws UserHistoryException {
        return parse(readAll(path), path);
    }

    /** The whole file at {@code path}; UserHistoryException names the file when it cannot be read. */
    static byte[] readAll(String path) throws UserHistoryException {
        try {
            return readBytes(path);
        } catch (FileNotFoundException e) {
            throw new UserHistoryException(path + ": cannot read the user history (no such file, or not readable)");
        } catch (IOException e) {
            throw new UserHistoryException(path + ": cannot read the user history (" + e.getMessage() + ")");
        }
    }

    /**
     * The whole file at {@code path}. An IOException here is the file system's (the file is not
     * readable now), never the content's: {@link UserHistoryFile} retries it rather than
     * setting the file aside as damaged.
     */
    static byte[] readBytes(String path) throws IOException {
        InputStream in = new FileInputStream(path);
        try {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            byte[] buf = new byte[65536];
            int n;
            while ((n = in.read(buf)) > 0) b.write(buf, 0, n);
            return b.toByteArray();
        } finally {
            in.close();
        }
    }

    /** A history from the bytes of a history file read from {@code path} (named in errors). */
    static UserHistory parse(byte[] bytes, String path) throws UserHistoryException {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes)).toString();
        } catch (CharacterCodingException e) {
            throw new UserHistoryException(path + ": not a keyboard_lm user history (not UTF-8 text)");
        }
        return fromJson(text, path);
    }

    /**
     * A strict JSON reader (RFC 8259, plus the NaN and Infinity literals Python's json module
     * reads): objects become LinkedHashMap (a repeated key keeps its last value, as Python),
     * arrays ArrayList, integers Long (Double when out of range), other numbers Double.
     * IllegalArgumentException says what is wrong and where.
     */
    static final class Json {
        private static final int MAX_DEPTH = 64;
        private final String s;
        private int i;
        private int depth;

        Json(String s) {
            this.s = s;
        }

        Object document() {
            Object v = value();
            space();
            if (i != s.length()) throw fail("extra data");
            return v;
        }

        private IllegalArgumentException fail(String what) {
            return new IllegalArgumentException("not JSON: " + what + " at character " + i);
        }

        private void space() {
            while (i < s.length()) {
                char c = s.charAt(i);
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
                i++;
            }
        }

        private Object value() {
            space();
            if (i >= s.length()) throw fail("unexpected end");
            char c = s.charAt(i);
            if (c == '{') return object();
            if (c == '[') return array();
            if (c == '"') return string();
            if (s.startsWith("true", i)) return literal(4, Boolean.TRUE);
            if (s.startsWith("false", i)) return literal(5, Boolean.FALSE);
            if (s.startsWith("null", i)) return literal(4, null);
            if (s.startsWith("NaN", i)) return literal(3, Double.NaN);
            if (s.startsWith("Infinity", i)) return literal(8, Double.POSITIVE_INFINITY);
            if (s.startsWith("-Infinity", i)) return literal(9, Double.NEGATIVE_INFINITY);
            return number();
        }

        private Object literal(int length, Object v) {
            i += length;
            return v;
        }

        private void enter() {
            if (++depth > MAX_DEPTH) throw fail("nested deeper than " + MAX_DEPTH);
        }

        private Map<String, Object> object() {
            enter();
            i++;
            Map<String, Object> m = new LinkedHashMap<String, Object>();
            space();
            if (i < s.length() && s.charAt(i) == '}') {
                i++;
                depth--;
                return m;
            }
            while (true) {
                space();
                if (i >= s.length() || s.charAt(i) != '"') throw fail("expected a string key");
                String key = string();
                space();
                expect(':');
                m.put(key, value());
                space();
                if (i < s.length() && s.charAt(i) == ',') {
                    i++;
                } else {
                    expect('}');
                    depth--;
                    return m;
                }
            }
        }

        private List<Object> array() {
            enter();
            i++;
            List<Object> a = new ArrayList<Object>();
            space();
            if (i < s.length() && s.charAt(i) == ']') {
                i++;
                depth--;
                return a;
            }
            while (true) {
                a.add(value());
                space();
                if (i < s.length() && s.charAt(i) == ',') {
                    i++;
                } else {
                    expect(']');
                    depth--;
                    return a;
                }
            }
        }

        private void expect(char c) {
            if (i >= s.length() || s.charAt(i) != c) throw fail("expected '" + c + "'");
            i++;
        }

        private boolean digit() {
            return i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9';
        }

        private Object number() {
            int start = i;
            if (i < s.length() && s.charAt(i) == '-') i++;
            if (!digit()) throw fail("unexpected character");
            if (s.charAt(i) == '0') {
                i++;
            } else {
                while (digit()) i++;
            }
            boolean integral = true;
            if (i < s.length() && s.charAt(i) == '.') {
                i++;
                if (!digit()) throw fail("expected a digit");
                while (digit()) i++;
                integral = false;
            }
            if (i < s.length() && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
                i++;
                if (i < s.length() && (s.charAt(i) == '+' || s.charAt(i) == '-')) i++;
                if (!digit()) throw fail("expected a digit");
                while (digit()) i++;
                integral = false;
            }
            String text = s.substring(start, i);
            if (integral) {
                try {
                    return Long.valueOf(text);
                } catch (NumberFormatException e) {
                    // beyond a long: a double, which no integer field accepts
                }
            }
            return Double.valueOf(text);
        }

        private String string() {
            i++;  // the opening quote
            StringBuilder b = new StringBuilder();
            while (true) {
                if (i >= s.length()) throw fail("unterminated string");
                char c = s.charAt(i++);
                if (c == '"') return b.toString();
                if (c < 0x20) throw fail("control character in a string");
                if (c != '\\') {
                    b.append(c);
                    continue;
                }
                if (i >= s.length()) throw fail("unterminated string");
                char e = s.charAt(i++);
                switch (e) {
                    case '"': b.append('"'); break;
                    case '\\': b.append('\\'); break;
                    case '/': b.append('/'); break;
                    case 'b': b.append('\b'); break;
                    case 'f': b.append('\f'); break;
                    case 'n': b.append('\n'); break;
                    case 'r': b.append('\r'); break;
                    case 't': b.append('\t'); break;
                    case 'u':
                        if (i + 4 > s.length()) throw fail("bad \\u escape");
                        int v = 0;
                        for (int k = 0; k < 4; k++) {
                            char h = s.charAt(i + k);
                            int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10
                                    : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                            if (d < 0) throw fail("bad \\u escape");
                            v = v * 16 + d;
                        }
                        b.append((char) v);
                        i += 4;
                        break;
                    default:
                        throw fail("bad escape");
                }
            }
        }
    }
}
