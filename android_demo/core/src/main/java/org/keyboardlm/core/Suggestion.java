package org.keyboardlm.core;

/**
 * One candidate word: its vocabulary id, the model's log-probability and the probability it
 * was ranked by (the model's alone, or its mixture with the phrase table and the user history).
 */
public final class Suggestion {
    public final String word;
    /** Vocabulary id; -1 for a word only the user history knows (outside the vocabulary). */
    public final int id;
    /** The model's log-probability; negative infinity for a word outside the vocabulary. */
    public final float logProb;
    /**
     * What Python's predictor returns beside the word: exp(logProb), or where the phrase table or
     * the user history has a say the {@link Ranker}'s merge {@code (1 - a) p + a p_history} with
     * {@code p = (1 - lam) p_model + lam q} ({@link Session#effectiveHistoryWeight()} = a).
     */
    public final double score;
    /**
     * True for the letters as typed, kept beside a typo correction (see {@link Ranker#keepTyped}):
     * shown because the user typed them, not because a source suggested them.
     */
    public final boolean typed;

    public Suggestion(String word, int id, float logProb) {
        this(word, id, logProb, Math.exp(logProb));
    }

    public Suggestion(String word, int id, float logProb, double score) {
        this(word, id, logProb, score, false);
    }

    private Suggestion(String word, int id, float logProb, double score, boolean typed) {
        this.word = word;
        this.id = id;
        this.logProb = logProb;
        this.score = score;
        this.typed = typed;
    }

    /** The letters as typed, kept in a strip beside a correction ({@link #typed}). */
    static Suggestion typed(String word, int id, float logProb, double score) {
        return new Suggestion(word, id, logProb, score, true);
    }

    /** The probability the suggestion was ranked by ({@link #score}). */
    public double probability() {
        return score;
    }

    @Override
    public String toString() {
        return String.format("%s(%d, %.4f, p=%.4f)", word, id, logProb, score);
    }
}
