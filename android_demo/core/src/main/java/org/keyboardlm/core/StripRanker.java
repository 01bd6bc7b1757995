package org.keyboardlm.core;

import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.concurrent.Executor;

/**
 * The keyboard's ranking thread: one {@link TextField} per field, fed the texts
 * {@link InputLogic} sends, with the strips sent back through a {@link Listener}. All work runs
 * on one single-threaded {@link Executor} (the keyboard's ranking thread); the methods may be
 * called from any thread (the keyboard calls them from its UI thread).
 *
 * <ul>
 * <li>Bursts coalesce: a text not yet ranked is replaced by a newer one, so only the newest
 * is ranked, and its strip carries the sequence number {@link InputLogic} gave that text.</li>
 * <li>Fields: a text is ranked only in the field it was read from. {@link #startField}
 * drops a text queued from the previous field and resets the TextField (learning, lock state)
 * before any text of the new field is ranked.</li>
 * <li>Before the model is loaded ({@link #loaded}), or after it failed ({@link #loadFailed}),
 * a text gets {@link Listener#onMessage} instead of a strip; the field's settings are kept
 * for the TextField the load makes.</li>
 * <li>A reverted suggestion ({@link #unlearn}) is unlearnt only if the text it was tapped into
 * was ranked, and so learnt from; a removed word ({@link #removeWord}) leaves the history and
 * the strip is ranked again.</li>
 * </ul>
 */
public final class StripRanker {
    /** Where results go (called on the ranking thread; the keyboard posts them to its UI thread). */
    public interface Listener {
        /** The strip for the text numbered {@code seq}: slot words left to right (null where empty). */
        void onStrip(int seq, String[] slots, boolean completing);

        /** A one-line message for the strip instead of suggestions: why there are none; null while the model loads. */
        void onMessage(int seq, String message);
    }

    /** Texts whose learnt words are remembered for {@link #unlearn}. */
    static final int REMEMBERED_TEXTS = 8;

    private final Executor executor;
    private final Listener listener;
    private final Object lock = new Object();
    // Guarded by lock: the newest text not yet ranked.
    private String pendingText;
    private boolean pendingByKeyboard;
    private int pendingField;
    private int pendingSeq;
    /** Guarded by lock: the field the TextField was last reset for (ranking thread writes it). */
    private int currentField;

    // Ranking thread only.
    private TextField field;
    private RecentSentences recent;
    private boolean learn;
    private boolean locked = true;
    private String loadError;
    private final LinkedHashMap<Integer, List<TextField.Learnt>> learntBySeq = new LinkedHashMap<Integer, List<TextField.Learnt>>();
    private String lastText;
    private int lastSeq;
    private volatile boolean ready;

    public StripRanker(Executor executor, Listener listener) {
        if (executor == null || listener == null) throw new IllegalArgumentException("executor and listener must not be null");
        this.executor = executor;
        this.listener = listener;
    }

    /** Ranking thread: the model is loaded; the field's settings so far apply. */
    public void loaded(Predictor predictor, UserHistory history, RecentSentences recent) {
        this.field = new TextField(predictor, history);
        this.recent = recent;
        field.reset(learn);
        field.setDeviceLocked(locked);
        loadError = null;
        ready = true;
    }

    /** Ranking thread: the model could not be loaded; every text gets {@code message}. */
    public void loadFailed(String message) {
        loadError = message;
    }

    /** True once a model is loaded (any thread): the keyboard then has no "loading" to show. */
    public boolean ready() {
        return ready;
    }

    /** A new field (number {@code fieldNumber}, increasing): a queued text of the previous one is dropped. */
    public void startField(final int fieldNumber, final boolean learn, final boolean locked) {
        synchronized (lock) {
            pendingText = null;
        }
        executor.execute(new Runnable() {
            @Override
            public void run() {
                StripRanker.this.learn = learn;
                StripRanker.this.locked = locked;
                synchronized (lock) {
                    currentField = fieldNumber;
                }
                lastText = null;
                learntBySeq.clear();
                if (field == null) return;
                field.reset(learn);
                field.setDeviceLocked(locked);
            }
        });
    }

    /** The device was locked or unlocked (see {@link TextField#setDeviceLocked}). */
    public void setDeviceLocked(final boolean locked) {
        executor.execute(new Runnable() {
            @Override
            public void run() {
                StripRanker.this.locked = locked;
                if (field != null) field.setDeviceLocked(locked);
            }
        });
    }

    /**
     * Rank {@code text} (the text before the cursor) of field {@code fieldNumber}, numbered
     * {@code seq}; {@code byKeyboard}: only the keyboard's own keys and taps changed it since
     * the previous text (see {@link TextField#update(String, boolean)}). Coalesces with a text
     * not yet ranked; then the result is learnt from only if both were the keyboard's.
     */
    public void request(int fieldNumber, int seq, String text, boolean byKeyboard) {
        if (text == null) throw new IllegalArgumentException("text must not be null");
        boolean post;
        synchronized (lock) {
            post = pendingText == null;
            pendingByKeyboard = (post || pendingByKeyboard) && byKeyboard;
            pendingText = text;
            pendingField = fieldNumber;
            pendingSeq = seq;
        }
        if (post) {
            executor.execute(new Runnable() {
                @Override
                public void run() {
                    rankPending();
                }
            });
        }
    }

    /**
     * Take back the suggestion {@code word} tapped into the text numbered {@code seq} (the user
     * reverted it): unlearnt if ranking that text learnt it; nothing happens if that text was
     * never ranked (a newer one replaced it) or learnt nothing.
     */
    public void unlearn(final int seq, final String word) {
        executor.execute(new Runnable() {
            @Override
            public void run() {
                List<TextField.Learnt> learnt = learntBySeq.remove(seq);
                if (learnt == null || field == null) return;
                for (TextField.Learnt l : learnt) if (l.word.equals(word)) field.unlearn(l);
            }
        });
    }

    /**
     * Remove {@code word} from the user history (a long press on it in the strip), then rank
     * the field's last text again, numbered {@code seq}, unless a newer text is queued.
     */
    public void removeWord(final String word, final int seq) {
        executor.execute(new Runnable() {
            @Override
            public void run() {
                if (field == null || field.session().userHistory() == null) return;
                field.session().userHistory().removeWord(word);
                synchronized (lock) {
                    if (pendingText != null) return;  // its own rank follows and sees the removal
                }
                if (lastText != null) rank(lastText, true, seq);
            }
        });
    }

    private void rankPending() {
        String text;
        boolean byKeyboard;
        int seq;
        synchronized (lock) {
            // A text of a field not yet reset for waits for the rank posted after that reset.
            if (pendingText == null || pendingField != currentField) return;
            text = pendingText;
            byKeyboard = pendingByKeyboard;
            seq = pendingSeq;
            pendingText = null;
        }
        rank(text, byKeyboard, seq);
    }

    private void rank(String text, boolean byKeyboard, int seq) {
        if (field == null) {
            listener.onMessage(seq, loadError);
            return;
        }
        try {
            TextField.Strip strip = field.update(text, byKeyboard);
            lastText = text;
            lastSeq = seq;
            List<TextField.Learnt> learnt = field.learntByLastUpdate();
            if (!learnt.isEmpty()) {
                learntBySeq.put(seq, learnt);
                if (learntBySeq.size() > REMEMBERED_TEXTS) {
                    Iterator<Integer> oldest = learntBySeq.keySet().iterator();
                    oldest.next();
                    oldest.remove();
                }
            }
            if (recent != null) for (List<String> sentence : field.takeFinishedSentences()) recent.add(sentence);
            listener.onStrip(seq, strip.slots(), strip.completing);
        } catch (RuntimeException | OutOfMemoryError e) {
            field.reset();
            lastText = null;
            listener.onMessage(seq, "suggestions failed: " + e);
        }
    }

    /** Ranking thread (tests): the words the text numbered {@code seq} taught the history. */
    List<TextField.Learnt> learntFor(int seq) {
        List<TextField.Learnt> l = learntBySeq.get(seq);
        return l == null ? Collections.<TextField.Learnt>emptyList() : l;
    }

    /** Ranking thread (tests): the number of the last text ranked. */
    int lastSeq() {
        return lastSeq;
    }
}
