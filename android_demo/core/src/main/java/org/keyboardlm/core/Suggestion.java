package org.keyboardlm.core;

/** One candidate word: its vocabulary id and the model's log-probability. */
public final class Suggestion {
    public final String word;
    public final int id;
    public final float logProb;

    public Suggestion(String word, int id, float logProb) {
        this.word = word;
        this.id = id;
        this.logProb = logProb;
    }

    /** exp(log-prob), what the Python predictor returns beside each word. */
    public double probability() {
        return Math.exp(logProb);
    }

    @Override
    public String toString() {
        return String.format("%s(%d, %.4f)", word, id, logProb);
    }
}
