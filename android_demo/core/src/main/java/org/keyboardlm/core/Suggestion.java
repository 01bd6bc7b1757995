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

    public Suggestion(String word, int id, float logProb) {
        this(word, id, logProb, Math.exp(logProb));
    }

    public Suggestion(String word, int id, float logProb, double score) {
        this.word = word;
        this.id = id;
        this.logProb = logProb;
        this.score = score;
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
