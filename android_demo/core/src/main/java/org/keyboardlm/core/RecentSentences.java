package org.keyboardlm.core;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The user's newest sentences, kept in memory only, on which the keyboard chooses the user's
 * history weight itself ({@link Session#chooseHistoryWeight}), as Python's
 * {@code Session.personalize} does on the user's newest text.
 *
 * <p>The keyboard learns each word as it is typed, so by the time a sentence is here the
 * history has learnt it, and a history predicts text it has learnt too well: chosen on that
 * history, the weight would reward it for recalling text, not for predicting it. So this
 * object also holds a copy of the history as it was when the sentences began (when it was
 * made, or at the last choice), and the choice streams the sentences over that copy, which
 * learns them one by one as the keyboard did. The copy misses what the keyboard learnt
 * outside these sentences meanwhile (text no terminator ended, dropped sentences), so the
 * choice leans, if anything, against the history.
 *
 * <p>{@link #chooseIfDue} runs once at least {@code minSentences} sentences arrived since the
 * last choice: it chooses on them, sets the weight on the user's history (saved with it), and
 * forgets them. Bounds: at most {@code capacity} sentences and {@code maxWords} words (the
 * oldest go first), and one copy of the history (itself bounded by its word and pair
 * limits). A choice costs one model step and {@code HISTORY_WEIGHTS.length} rankings per
 * word: run it off the UI thread. Nothing here is written anywhere.
 *
 * <p>Thread-safe: the sentences and the copy are guarded by this object's lock, which the
 * choice does not hold while it runs the model.
 */
public final class RecentSentences {
    /** Sentences kept at most (the newest). */
    public static final int CAPACITY = 200;
    /** Sentences since the last choice needed for the next one. */
    public static final int MIN_SENTENCES = 50;
    /** Words kept at most, over all sentences: the choice's work is bounded by them. */
    public static final int MAX_WORDS = 4000;

    private final UserHistory live;
    private final int capacity;
    private final int minSentences;
    private final int maxWords;
    private final ArrayDeque<List<String>> sentences = new ArrayDeque<List<String>>();
    private int words;
    /** The user's history as it was before the kept sentences were learnt. */
    private UserHistory base;
    /** Counts {@link #clearHistory()} calls: a choice started before one sets no weight. */
    private long generation;

    /** For the user's {@code history} (learning on as the keyboard types), with the default bounds. */
    public RecentSentences(UserHistory history) {
        this(history, CAPACITY, MIN_SENTENCES, MAX_WORDS);
    }

    public RecentSentences(UserHistory history, int capacity, int minSentences, int maxWords) {
        if (history == null) throw new IllegalArgumentException("history must not be null");
        if (minSentences < 1 || capacity < minSentences || maxWords < 1) {
            throw new IllegalArgumentException("need 1 <= minSentences <= capacity and maxWords >= 1, got minSentences "
                    + minSentences + ", capacity " + capacity + ", maxWords " + maxWords);
        }
        this.live = history;
        this.capacity = capacity;
        this.minSentences = minSentences;
        this.maxWords = maxWords;
        this.base = history.copy();
    }

    /** A finished sentence of a field that learns (normalized words); an empty one is ignored. */
    public synchronized void add(List<String> sentence) {
        if (sentence == null) throw new IllegalArgumentException("sentence must not be null");
        if (sentence.isEmpty()) return;
        for (String word : sentence) if (word == null) throw new IllegalArgumentException("a sentence holds a null word");
        sentences.addLast(new ArrayList<String>(sentence));
        words += sentence.size();
        while (!sentences.isEmpty() && (sentences.size() > capacity || words > maxWords)) words -= sentences.removeFirst().size();
    }

    /** Sentences kept (all since the last choice). */
    public synchronized int size() {
        return sentences.size();
    }

    /** Words in the kept sentences. */
    public synchronized int words() {
        return words;
    }

    /** True when the next {@link #chooseIfDue} chooses. */
    public synchronized boolean due() {
        return sentences.size() >= minSentences;
    }

    /**
     * When {@link #due()}: choose the user's history weight on the kept sentences, streamed over
     * the copy of the history from before them, set it on the user's history (unless
     * {@link #clearHistory()} ran meanwhile), forget the sentences and copy the history anew.
     * Returns the choice, or null when not due (or cleared meanwhile). Runs the model.
     */
    public Session.HistoryWeightChoice chooseIfDue(Predictor predictor) {
        if (predictor == null) throw new IllegalArgumentException("predictor must not be null");
        UserHistory before;
        List<List<String>> held;
        long started;
        synchronized (this) {
            if (!due()) return null;
            before = base;
            held = new ArrayList<List<String>>(sentences);
            started = generation;
            sentences.clear();
            words = 0;
            base = live.copy();  // the history now holds them all: the next sentences start from here
        }
        Session.HistoryWeightChoice choice = predictor.session(0, before, false).chooseHistoryWeight(held);
        synchronized (this) {
            if (started != generation) return null;
            live.setWeight(choice.weight);
        }
        return choice;
    }

    /**
     * Forget what the keyboard learnt: the user's history (its weight too, {@link UserHistory#clear()}),
     * the kept sentences and the copy; a choice under way then sets no weight.
     */
    public synchronized void clearHistory() {
        restarted();
        live.clear();
        base = live.copy();
    }

    /**
     * The user's history was replaced (a kept copy restored, {@link HistoryStore#restore}): the
     * kept sentences and the copy belong to the one before it, so they are forgotten, and a
     * choice under way sets no weight.
     */
    synchronized void restarted() {
        generation++;
        sentences.clear();
        words = 0;
        base = live.copy();
    }
}
