package org.keyboardlm.core;

import java.util.ArrayDeque;
import java.util.Arrays;
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
 *
 * <p>User history (Python's {@code Session.history}): a session may hold a {@link UserHistory}
 * (shared by the user's sessions). Every committed word is learnt after the previous one
 * ({@code <s>} at a sentence start), unless the session does not learn (a password field):
 * special tokens and blocklisted words never are. Suggestions and completions then rank the
 * mixture {@code (1 - a) p + a p_history(. | previous word)} over the model's top k, the phrase
 * table's words and the history's candidates (the predictor's {@link Ranker} merges them): a word
 * only the history knows, outside the vocabulary too, gets its share of a. The share a is
 * {@link #effectiveHistoryWeight()} = {@code historyWeight() * n / (n + HISTORY_CONTEXT_K)},
 * n the history's decayed count of the words typed after the previous word
 * ({@link UserHistory#contextCount}): after a previous word the user never typed, the model's
 * top k is returned unchanged; after one typed often, the history gets nearly all of
 * {@link #historyWeight()}. That weight is the session's own ({@link #setHistoryWeight}), else
 * the user's, saved in the history ({@link UserHistory#weight()}, chosen by Python's
 * {@code Session.personalize} or on the device by {@link #chooseHistoryWeight}), else
 * {@link #HISTORY_WEIGHT}. A rewind restores the previous word but does not unlearn.
 *
 * <p>Phrase table (a model file may carry one, see {@link PhraseTable}): the session keeps the
 * last {@link PhraseTable#MAX_ORDER} model inputs of the current training chunk as vocabulary
 * ids ({@code <bos>} at a sentence start, a word outside the vocabulary as {@code <oov>}, none
 * from before a state restart), as Python's {@code Session._context}; at each position the
 * ranker looks up the longest stored context among them, and where the gate gives it a weight,
 * p above is {@code (1 - lam) p_model + lam q}. A rewind restores them.
 *
 * <p>Memory: each step's result (log-probs and state) is owned by the session or by one
 * remembered commit. A result neither holds any more (forgotten by a rewind, a reset or the
 * rewind bound) is kept as a spare and the next step writes into it
 * ({@link StepEngine#stepFull(int, float[], StepEngine.FullStep)}), so typing allocates no
 * vocabulary-sized array once the rewind history is full. A sentence start costs no model
 * step: the state after {@code <bos>} from zeros is the same every time, computed once per
 * predictor and copied.
 */
public final class Session {
    /** The user history's share of a suggestion's probability when neither the session nor the history sets one (Python's HISTORY_WEIGHT). */
    public static final double HISTORY_WEIGHT = 0.3;
    /**
     * After a previous word the user typed n times (decayed), the history's share is
     * {@code historyWeight() * n / (n + HISTORY_CONTEXT_K)} (Python's HISTORY_CONTEXT_K).
     */
    public static final double HISTORY_CONTEXT_K = 4.0;
    /**
     * The weights {@link #chooseHistoryWeight(List)} chooses the user's from (Python's
     * HISTORY_WEIGHTS). Read it, do not write it: the choice works on a copy.
     */
    public static final double[] HISTORY_WEIGHTS = {0.0, 0.1, 0.2, 0.3, 0.4, 0.5};
    /** Suggestions per position counted by {@link #chooseHistoryWeight(List)} (a hit is the word among them). */
    public static final int HISTORY_WEIGHT_K = 3;

    private final Predictor predictor;
    private final StepEngine engine;
    private final int seqLen;
    private final int rewindDepth;
    private final int[] allIds;
    private final Ranker ranker;

    /** The session's log-probs and state: the result of its last step. */
    private StepEngine.FullStep current;
    /** Results no one holds, for the next steps to write into (at most {@link #SPARES}). */
    private final ArrayDeque<StepEngine.FullStep> spares = new ArrayDeque<StepEngine.FullStep>();
    private static final int SPARES = 2;
    /** The zero state; never written (engines do not change their input). */
    private final float[] zeros;
    private int wordsInSentence;
    private int steps;
    private int inputsInChunk;
    private final UserHistory userHistory;
    private boolean learning;
    /** Set by {@link #setHistoryWeight}; null: the history's weight, else {@link #HISTORY_WEIGHT}. */
    private Double historyWeight;
    /** The history's context: the last committed word of the sentence, null at its start. */
    private String previousWord;
    /** The phrase table's context: the last model inputs of the current chunk, oldest first. */
    private final int[] context = new int[PhraseTable.MAX_ORDER];
    private int contextLength;
    private final ArrayDeque<Snapshot> rewinds = new ArrayDeque<Snapshot>();
    /** Set by a replay's skip: the session before the next word never existed, so it is not remembered. */
    private boolean forgetNext;

    /** Holds the session's result of the time, not a copy: each step writes into a result no one holds. */
    private static final class Snapshot {
        final StepEngine.FullStep step;
        final int wordsInSentence;
        final int steps;
        final int inputsInChunk;
        final String previousWord;
        final int[] context;

        Snapshot(Session s) {
            step = s.current;
            wordsInSentence = s.wordsInSentence;
            steps = s.steps;
            inputsInChunk = s.inputsInChunk;
            previousWord = s.previousWord;
            context = Arrays.copyOf(s.context, s.contextLength);
        }
    }

    Session(Predictor predictor, int rewindDepth, UserHistory userHistory, boolean learn) {
        if (rewindDepth < 0) throw new IllegalArgumentException("rewindDepth must be >= 0, got " + rewindDepth);
        this.predictor = predictor;
        this.engine = predictor.model.engine;
        this.seqLen = predictor.model.seqLen;
        this.rewindDepth = rewindDepth;
        this.ranker = predictor.ranker;
        this.allIds = ranker.suggestableIds();
        this.userHistory = userHistory;
        this.learning = learn;
        this.zeros = engine.initialState();
        reset();
    }

    /** Start a new field: the state after {@code <bos>}; forgets the rewind history. */
    public void reset() {
        forgetRewinds();
        forgetNext = false;
        startSentence();
    }

    /** Clears the rewind history, keeping its results as spares. */
    private void forgetRewinds() {
        while (!rewinds.isEmpty()) release(rewinds.pollLast().step);
    }

    /** {@code step} is no longer needed by whoever held it: a spare, unless the session or a remembered commit holds it. */
    private void release(StepEngine.FullStep step) {
        if (step == null || step == current || spares.size() >= SPARES) return;
        for (Snapshot s : rewinds) {
            if (s.step == step) return;
        }
        for (StepEngine.FullStep s : spares) {
            if (s == step) return;
        }
        spares.addLast(step);
    }

    /** One model step from {@code from}: the result becomes the session's, written into a spare when there is one. */
    private void advance(int token, float[] from) {
        StepEngine.FullStep previous = current;
        current = engine.stepFull(token, from, spares.pollLast());
        release(previous);
    }

    /** The state after {@code <bos>}: a copy of the predictor's (see {@link Predictor#sentenceStart}), no model step. */
    private void startSentence() {
        StepEngine.FullStep start = predictor.sentenceStart();
        StepEngine.FullStep previous = current;
        StepEngine.FullStep into = spares.pollLast();
        if (into == null) into = new StepEngine.FullStep(new float[start.logProbs.length], new float[start.state.length]);
        System.arraycopy(start.logProbs, 0, into.logProbs, 0, start.logProbs.length);
        System.arraycopy(start.state, 0, into.state, 0, start.state.length);
        current = into;
        release(previous);
        wordsInSentence = 0;
        steps = 1;
        inputsInChunk = 1;  // <bos> is the first input of the first chunk
        previousWord = null;
        context[0] = Vocabulary.BOS;
        contextLength = 1;
    }

    private void remember() {
        if (forgetNext) {
            forgetNext = false;
            return;
        }
        if (rewindDepth == 0) return;
        if (rewinds.size() == rewindDepth) release(rewinds.removeFirst().step);
        rewinds.addLast(new Snapshot(this));
    }

    /** A sentence end (a terminator): the state after {@code <bos>}, as reset(), but rewindable. */
    public void endSentence() {
        remember();
        startSentence();
    }

    /**
     * Advance by one already-normalized token (one model step); unknown words step as OOV. With
     * a user history, a learning session learns the word after the previous one.
     */
    public void commitWord(String word) {
        commitWord(word, learning);
    }

    /** As {@link #commitWord(String)}; {@code learn} false: the history does not learn this word. */
    void commitWord(String word, boolean learn) {
        if (word == null) throw new IllegalArgumentException("word must not be null");
        remember();
        float[] from = current.state;
        if (inputsInChunk == seqLen) {
            // A new training chunk: the model never saw a state older than seqLen inputs.
            from = zeros;
            inputsInChunk = 0;
            contextLength = 0;  // no stored context spans a state restart
        }
        int id = predictor.vocab.idOf(word);  // <oov> outside the vocabulary: no stored context holds it
        if (contextLength == context.length) {
            System.arraycopy(context, 1, context, 0, context.length - 1);
            contextLength--;
        }
        context[contextLength++] = id;
        advance(id, from);
        if (learn && userHistory != null && learnable(word)) userHistory.learnWord(previousWord, word);
        previousWord = word;
        wordsInSentence++;
        inputsInChunk++;
        steps++;
    }

    /**
     * Learn {@code word} after {@code prev} (null: a sentence start) when this session learns
     * and the word may be learnt, without a model step (the keyboard's {@link TextField} decides
     * itself which committed words are new).
     */
    /** Learn {@code word} after {@code prev} when this session learns and the word may be learnt; true when it was. */
    boolean learn(String prev, String word) {
        if (!learning || userHistory == null || !learnable(word)) return false;
        userHistory.learnWord(prev, word);
        return true;
    }

    /** Not a special token, not blocklisted, not the history's sentence start. */
    private boolean learnable(String word) {
        return !word.isEmpty() && !word.equals(UserHistory.START) && !Vocabulary.SPECIAL_TOKENS.contains(word)
                && !ranker.blocked(word);
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
        commitItems(items, replayTail, learning);
    }

    /** As {@link #commitItems(List, boolean)}; {@code learn} false: the history learns none of the words. */
    void commitItems(List<TextSpec.Item> items, boolean replayTail, boolean learn) {
        if (replayTail) {
            int lastEnd = -1;
            for (int i = 0; i < items.size(); i++) if (items.get(i).end) lastEnd = i;
            items = items.subList(lastEnd + 1, items.size());
            // Inputs of the sentence are <bos> + words; chunks hold seqLen inputs.
            int chunk = items.size() / seqLen;  // chunk of the last input (word i is input i)
            if (chunk > 0) {
                int skip = chunk * seqLen - 1;
                forgetRewinds();
                wordsInSentence = skip;
                inputsInChunk = seqLen;  // the next word starts a new chunk from a zero state
                // The history's context is the word before the first one stepped (Python leaves it at <s>).
                previousWord = skip > 0 ? items.get(skip - 1).text : null;
                items = items.subList(skip, items.size());
                forgetNext = true;
            }
        }
        for (TextSpec.Item item : items) {
            if (item.end) endSentence();
            else commitWord(item.text, learn);
        }
    }

    /**
     * Undo the last commit (word or sentence end) still remembered, without a model step.
     * Returns false, changing nothing, when there is none: the caller replays the text instead.
     */
    public boolean rewind() {
        Snapshot s = rewinds.pollLast();
        if (s == null) return false;
        StepEngine.FullStep dropped = current;
        current = s.step;
        release(dropped);
        wordsInSentence = s.wordsInSentence;
        steps = s.steps;
        inputsInChunk = s.inputsInChunk;
        previousWord = s.previousWord;
        System.arraycopy(s.context, 0, context, 0, s.context.length);
        contextLength = s.context.length;
        return true;
    }

    /** How many commits {@link #rewind()} can still undo. */
    public int rewindable() {
        return rewinds.size();
    }

    /** Next-word candidates after the committed text (shown after a space), most likely first. */
    public List<Suggestion> suggestions(int k) {
        return rank(ranker.top(current.logProbs, allIds, k), k, "");
    }

    /**
     * The most probable vocabulary words being typed as {@code prefix}: those that start with it
     * and, where the predictor corrects typos ({@link Predictor#Predictor(ModelFile, Iterable, int, TypoModel)}),
     * those one slip away, weighted by the slip's factor; with a correction in the strip, the
     * letters as typed keep its last place ({@link Suggestion#typed}).
     */
    public List<Suggestion> complete(String prefix, int k) {
        if (prefix == null) throw new IllegalArgumentException("prefix must not be null");
        String normalized = strip(TextSpec.normalize(prefix));
        if (normalized.isEmpty()) return suggestions(k);
        double a = userHistory != null && userHistory.numWords() > 0 ? effectiveHistoryWeight() : 0.0;
        return ranker.complete(current.logProbs, normalized, k, phraseMatch(), userHistory, a, previousWord);
    }

    /**
     * The model's k best {@code top} merged by the ranker with the phrase table's entry here and
     * the user history's share {@link #effectiveHistoryWeight()} (Python's {@code Session._top});
     * unchanged where neither has a say.
     */
    private List<Suggestion> rank(List<Suggestion> top, int k, String prefix) {
        double a = userHistory != null && userHistory.numWords() > 0 ? effectiveHistoryWeight() : 0.0;
        return ranker.merge(top, k, prefix, phraseMatch(), userHistory, a, previousWord, current.logProbs);
    }

    /** The phrase table's entry at this position, or null (no table, no stored context, no weight). */
    Ranker.PhraseMatch phraseMatch() {
        return ranker.phraseMatch(context, contextLength);
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

    /** The user history this session reads and learns into; null for none. */
    public UserHistory userHistory() {
        return userHistory;
    }

    /** True when committed words are learnt into the user history. */
    public boolean learning() {
        return learning;
    }

    /** False: a field never learnt from (a password field); the history is still read. */
    public void setLearning(boolean learn) {
        this.learning = learn;
    }

    /**
     * The user history's weight in the mixture (Python's {@code Session.history_weight}): the one
     * set on this session ({@link #setHistoryWeight}), else the user's, saved in the history
     * ({@link UserHistory#weight()}), else {@link #HISTORY_WEIGHT}. The share used at a position
     * is {@link #effectiveHistoryWeight()}.
     */
    public double historyWeight() {
        if (historyWeight != null) return historyWeight;
        if (userHistory != null) {
            Double user = userHistory.weight();
            if (user != null) return user;
        }
        return HISTORY_WEIGHT;
    }

    /**
     * The history's share a at this position: {@code historyWeight() * n / (n + HISTORY_CONTEXT_K)},
     * n = {@link UserHistory#contextCount} of the previous word (the decayed count of words the
     * user typed after it); 0 without a history.
     */
    public double effectiveHistoryWeight() {
        if (userHistory == null) return 0.0;
        double n = userHistory.contextCount(previousWord);
        return historyWeight() * n / (n + HISTORY_CONTEXT_K);
    }

    /** This session's weight, over the user's: 0 ranks by the model alone; 1 by the history alone (where n is large). */
    public void setHistoryWeight(double weight) {
        if (!(weight >= 0 && weight <= 1)) throw new IllegalArgumentException("history weight must be in [0, 1], got " + weight);
        this.historyWeight = weight;
    }

    /**
     * What {@link #chooseHistoryWeight} found: the chosen weight, and for every weight tried
     * (in the order given) the number of held-out words that were among its
     * {@link #HISTORY_WEIGHT_K} suggestions (Python's {@code history_weight_emr3} times
     * {@code history_weight_words}).
     */
    public static final class HistoryWeightChoice {
        /** The weight with the most hits (equal counts: the smaller weight); now the history's {@link UserHistory#weight()}. */
        public final double weight;
        private final double[] weights;
        private final int[] hits;
        /** Held-out words: the positions every weight was counted at. */
        public final int words;

        HistoryWeightChoice(double weight, double[] weights, int[] hits, int words) {
            this.weight = weight;
            this.weights = weights;
            this.hits = hits;
            this.words = words;
        }

        /** The weights tried, in the order given (a copy). */
        public double[] weights() {
            return weights.clone();
        }

        /** Hits of each weight, in the order of {@link #weights()} (a copy). */
        public int[] hits() {
            return hits.clone();
        }

        /** Each weight's share of hits (EMR3: hits / words), in the order of {@link #weights()}. */
        public double[] emr3() {
            double[] out = new double[hits.length];
            for (int i = 0; i < hits.length; i++) out[i] = (double) hits[i] / words;
            return out;
        }

        @Override
        public String toString() {
            StringBuilder b = new StringBuilder("history weight ").append(UserHistory.formatDouble(weight)).append(" (hits of ")
                    .append(words).append(" words:");
            for (int i = 0; i < weights.length; i++) {
                b.append(' ').append(UserHistory.formatDouble(weights[i])).append('=').append(hits[i]);
            }
            return b.append(')').toString();
        }
    }

    /** As {@link #chooseHistoryWeight(List, double[])} with {@link #HISTORY_WEIGHTS}. */
    public HistoryWeightChoice chooseHistoryWeight(List<List<String>> sentences) {
        return chooseHistoryWeight(sentences, HISTORY_WEIGHTS);
    }

    /**
     * Choose the user's history weight on their held-out {@code sentences} (already-normalized
     * tokens, oldest first), as Python's {@code Session.choose_history_weight}: a learning
     * session on a copy of this session's history ({@link UserHistory#copy()}) streams the
     * sentences as a keyboard sees them, starting each from {@code <bos>}; at each word it counts,
     * for every weight, a hit when the word is among the {@link #HISTORY_WEIGHT_K} suggestions
     * at that weight, then commits the word, which the copy learns. The weight with the most
     * hits, equal counts going to the smaller weight, is set on this session's
     * {@link UserHistory} ({@link UserHistory#setWeight}, saved with it), not on the session
     * (a weight set with {@link #setHistoryWeight} still overrides it in this session). Nothing
     * else of the history changes, and this session's state neither. Costs one model step per word and {@code weights.length} rankings per word;
     * call it off the UI thread.
     *
     * @throws IllegalStateException without a user history
     * @throws IllegalArgumentException no weight, a weight outside [0, 1], a weight given twice,
     *     a null sentence or word, or no word at all
     */
    public HistoryWeightChoice chooseHistoryWeight(List<List<String>> sentences, double[] weights) {
        if (userHistory == null) throw new IllegalStateException("chooseHistoryWeight needs a user history (learn one first)");
        double[] ws = weights == null ? new double[0] : weights.clone();
        boolean bad = ws.length == 0;
        for (double w : ws) bad |= !(w >= 0 && w <= 1);
        if (bad) throw new IllegalArgumentException("history weights must be numbers in [0, 1], got " + list(ws));
        for (int i = 0; i < ws.length; i++) {
            for (int j = 0; j < i; j++) {
                if (ws[i] == ws[j]) throw new IllegalArgumentException("history weights must differ, got " + list(ws));
            }
        }
        if (sentences == null) throw new IllegalArgumentException("sentences must not be null");
        for (int i = 0; i < sentences.size(); i++) {
            List<String> sentence = sentences.get(i);
            if (sentence == null) throw new IllegalArgumentException("sentence " + i + " is null");
            for (String word : sentence) if (word == null) throw new IllegalArgumentException("sentence " + i + " holds a null word");
        }
        Session trial = new Session(predictor, 0, userHistory.copy(), true);
        int[] hits = new int[ws.length];
        int words = 0;
        for (List<String> sentence : sentences) {
            trial.reset();
            for (String word : sentence) {
                for (int i = 0; i < ws.length; i++) {
                    trial.setHistoryWeight(ws[i]);
                    for (Suggestion s : trial.suggestions(HISTORY_WEIGHT_K)) {
                        if (s.word.equals(word)) {
                            hits[i]++;
                            break;
                        }
                    }
                }
                words++;
                trial.commitWord(word);
            }
        }
        if (words == 0) throw new IllegalArgumentException("chooseHistoryWeight needs held-out text with at least one word");
        int best = 0;
        for (int i = 1; i < ws.length; i++) {
            if (hits[i] > hits[best] || (hits[i] == hits[best] && ws[i] < ws[best])) best = i;
        }
        userHistory.setWeight(ws[best]);
        return new HistoryWeightChoice(ws[best], ws, hits, words);
    }

    /** Weights as Python prints a list of floats: [0.0, 0.1]. */
    private static String list(double[] ws) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < ws.length; i++) b.append(i > 0 ? ", " : "").append(UserHistory.formatDouble(ws[i]));
        return b.append(']').toString();
    }

    /** The history's context: the last committed word of the current sentence, null at its start. */
    public String previousWord() {
        return previousWord;
    }

    /** The log-prob of every vocabulary id after the committed text (a copy). */
    public float[] logProbs() {
        return current.logProbs.clone();
    }
}
