package org.keyboardlm.core;

import java.util.ArrayDeque;
import java.util.List;

/**
 * One text field being typed (keyboard_lm/inference/predictor.py Session): the recurrent
 * state carried across keystrokes, so committing a word costs one model step and never a
 * re-read of the context. Not for use by two threads at once.
 *
 * <p>State rule (the one the model was trained on): a sentence is {@code <bos> w1 .. wn}; after
 * {@code seqLen} model inputs in a sentence ({@code <bos>} counts) the state restarts from
 * zeros before the next word, as training cut sentences into chunks of seqLen inputs. A
 * terminator run (text spec) starts a new sentence from {@code <bos>}.
 *
 * <p>Rewind (backspace), which Python's Session lacks: each commit (a word or a sentence end)
 * first remembers the session as it was; {@link #rewind()} returns to it without a model step.
 * At most {@code rewindDepth} commits are remembered (each holds a log-prob array of the
 * vocabulary's size); {@link #reset()}, a new field, forgets them.
 */
public final class Session {
    private final Predictor predictor;
    private final StepEngine engine;
    private final int seqLen;
    private final int rewindDepth;
    private final int[] allIds;

    private float[] logProbs;
    private float[] state;
    private int wordsInSentence;
    private int steps;
    private int inputsInChunk;
    private final ArrayDeque<Snapshot> history = new ArrayDeque<Snapshot>();
    /** Set by a replay's skip: the session before the next word never existed, so it is not remembered. */
    private boolean forgetNext;

    /** Arrays are shared, never copied: the engine returns new arrays and never changes its inputs. */
    private static final class Snapshot {
        final float[] logProbs;
        final float[] state;
        final int wordsInSentence;
        final int steps;
        final int inputsInChunk;

        Snapshot(Session s) {
            logProbs = s.logProbs;
            state = s.state;
            wordsInSentence = s.wordsInSentence;
            steps = s.steps;
            inputsInChunk = s.inputsInChunk;
        }
    }

    Session(Predictor predictor, int rewindDepth) {
        if (rewindDepth < 0) throw new IllegalArgumentException("rewindDepth must be >= 0, got " + rewindDepth);
        this.predictor = predictor;
        this.engine = predictor.model.engine;
        this.seqLen = predictor.model.seqLen;
        this.rewindDepth = rewindDepth;
        this.allIds = predictor.suggestableIds();
        reset();
    }

    /** Start a new field: the state after {@code <bos>}; forgets the rewind history. */
    public void reset() {
        history.clear();
        forgetNext = false;
        startSentence();
    }

    private void startSentence() {
        StepEngine.FullStep s = engine.stepFull(Vocabulary.BOS, engine.initialState());
        logProbs = s.logProbs;
        state = s.state;
        wordsInSentence = 0;
        steps = 1;
        inputsInChunk = 1;  // <bos> is the first input of the first chunk
    }

    private void remember() {
        if (forgetNext) {
            forgetNext = false;
            return;
        }
        if (rewindDepth == 0) return;
        if (history.size() == rewindDepth) history.removeFirst();
        history.addLast(new Snapshot(this));
    }

    /** A sentence end (a terminator): the state after {@code <bos>}, as reset(), but rewindable. */
    public void endSentence() {
        remember();
        startSentence();
    }

    /** Advance by one already-normalized token (one model step); unknown words step as OOV. */
    public void commitWord(String word) {
        if (word == null) throw new IllegalArgumentException("word must not be null");
        remember();
        if (inputsInChunk == seqLen) {
            // A new training chunk: the model never saw a state older than seqLen inputs.
            state = engine.initialState();
            inputsInChunk = 0;
        }
        StepEngine.FullStep s = engine.stepFull(predictor.vocab.idOf(word), state);
        logProbs = s.logProbs;
        state = s.state;
        wordsInSentence++;
        inputsInChunk++;
        steps++;
    }

    /** Advance over committed text (whole words): words step the model, sentence ends restart it. */
    public void commit(String text) {
        commit(text, false);
    }

    /**
     * As {@link #commit(String)}; {@code replayTail} (for a session just reset, as
     * {@link Predictor#suggest} uses it) steps the model over the current chunk of the final
     * sentence only: the state rule makes everything before it irrelevant, so the result equals
     * committing all of {@code text} and costs at most seqLen steps. Such a replay cannot be
     * rewound past its first word.
     */
    public void commit(String text, boolean replayTail) {
        if (text == null) throw new IllegalArgumentException("text must not be null");
        commitItems(TextSpec.scan(text), replayTail);
    }

    void commitItems(List<TextSpec.Item> items, boolean replayTail) {
        if (replayTail) {
            int lastEnd = -1;
            for (int i = 0; i < items.size(); i++) if (items.get(i).end) lastEnd = i;
            items = items.subList(lastEnd + 1, items.size());
            // Inputs of the sentence are <bos> + words; chunks hold seqLen inputs.
            int chunk = items.size() / seqLen;  // chunk of the last input (word i is input i)
            if (chunk > 0) {
                int skip = chunk * seqLen - 1;
                history.clear();
                wordsInSentence = skip;
                inputsInChunk = seqLen;  // the next word starts a new chunk from a zero state
                items = items.subList(skip, items.size());
                forgetNext = true;
            }
        }
        for (TextSpec.Item item : items) {
            if (item.end) endSentence();
            else commitWord(item.text);
        }
    }

    /**
     * Undo the last commit (word or sentence end) still remembered, without a model step.
     * Returns false, changing nothing, when there is none: the caller replays the text instead.
     */
    public boolean rewind() {
        Snapshot s = history.pollLast();
        if (s == null) return false;
        logProbs = s.logProbs;
        state = s.state;
        wordsInSentence = s.wordsInSentence;
        steps = s.steps;
        inputsInChunk = s.inputsInChunk;
        return true;
    }

    /** How many commits {@link #rewind()} can still undo. */
    public int rewindable() {
        return history.size();
    }

    /** Next-word candidates after the committed text (shown after a space), most likely first. */
    public List<Suggestion> suggestions(int k) {
        return predictor.top(logProbs, allIds, k);
    }

    /** The most probable vocabulary words starting with {@code prefix} (the word being typed). */
    public List<Suggestion> complete(String prefix, int k) {
        if (prefix == null) throw new IllegalArgumentException("prefix must not be null");
        String normalized = strip(TextSpec.normalize(prefix));
        if (normalized.isEmpty()) return suggestions(k);
        return predictor.top(logProbs, predictor.prefixIds(normalized), k);
    }

    /** Python's str.strip() on normalized text (NFKC has already mapped no-break spaces to U+0020). */
    static String strip(String s) {
        int a = 0;
        int b = s.length();
        while (a < b && Character.isWhitespace(s.codePointAt(a))) a += Character.charCount(s.codePointAt(a));
        while (b > a && Character.isWhitespace(s.codePointBefore(b))) b -= Character.charCount(s.codePointBefore(b));
        return s.substring(a, b);
    }

    /** Words committed since the last sentence start (counting words skipped by a replay). */
    public int wordsInSentence() {
        return wordsInSentence;
    }

    /** Model steps since the last sentence start ({@code <bos>} counts). */
    public int steps() {
        return steps;
    }

    /** Inputs of the current training chunk so far. */
    public int inputsInChunk() {
        return inputsInChunk;
    }

    /** The log-prob of every vocabulary id after the committed text (a copy). */
    public float[] logProbs() {
        return logProbs.clone();
    }
}
