package org.keyboardlm.core;

import java.util.List;
import java.util.Map;

/**
 * The phrase table's weight lambda by context length n (1..rows) and the context's users
 * (keyboard_lm/inference/ranker.py {@code PhraseGate}), fitted on validation users and stored in
 * the model's metadata as {@code "gate": {"bounds": [...], "weights": [[...], ...]}}.
 *
 * <p>{@code bounds}: ascending positive user counts that start the buckets 1, 2, ...;
 * {@code weights[n - 1][b]}: lambda of a context of n words in bucket b (a context with fewer
 * users than {@code bounds[0]} is in bucket 0). Immutable.
 */
public final class PhraseGate {
    private final long[] bounds;
    private final double[][] weights;

    /**
     * Checks as Python does: bounds ascending, distinct and positive; each row has
     * {@code bounds.length + 1} weights in [0, 1). IllegalArgumentException says which is wrong.
     */
    public PhraseGate(long[] bounds, double[][] weights) {
        this.bounds = bounds.clone();
        for (int i = 0; i < this.bounds.length; i++) {
            if (this.bounds[i] < 1 || (i > 0 && this.bounds[i] <= this.bounds[i - 1])) {
                throw new IllegalArgumentException("phrase gate bounds must be ascending positive counts, got " + list(this.bounds));
            }
        }
        this.weights = new double[weights.length][];
        for (int n = 0; n < weights.length; n++) {
            double[] row = weights[n].clone();
            boolean bad = row.length != this.bounds.length + 1;
            for (double w : row) bad |= !(w >= 0.0 && w < 1.0);
            if (bad) {
                throw new IllegalArgumentException("phrase gate rows need " + (this.bounds.length + 1) + " weights in [0, 1), got "
                        + list(row));
            }
            this.weights[n] = row;
        }
    }

    /** lambda of a stored context of {@code n} words that {@code users} users typed; 0 for n outside 1..rows. */
    public double weight(int n, int users) {
        if (n < 1 || n > weights.length) return 0.0;
        int bucket = 0;  // bisect_right: the bounds at or below users
        while (bucket < bounds.length && bounds[bucket] <= users) bucket++;
        return weights[n - 1][bucket];
    }

    /**
     * The gate of a model's metadata ({@code gate}: the parsed JSON object); ModelFileException
     * starting with {@code where} when it is not an object with lists "bounds" and "weights" of
     * numbers, or its values are out of range.
     */
    static PhraseGate fromJson(Object gate, String where) throws ModelFileException {
        if (!(gate instanceof Map) || !(((Map<?, ?>) gate).get("bounds") instanceof List)
                || !(((Map<?, ?>) gate).get("weights") instanceof List)) {
            throw new ModelFileException(where + ": expected an object with lists 'bounds' and 'weights'");
        }
        List<?> b = (List<?>) ((Map<?, ?>) gate).get("bounds");
        List<?> w = (List<?>) ((Map<?, ?>) gate).get("weights");
        long[] bounds = new long[b.size()];
        for (int i = 0; i < bounds.length; i++) {
            double x = number(b.get(i), where, "bounds");
            if (Double.isInfinite(x) || Double.isNaN(x)) throw new ModelFileException(where + ": bound " + x + " is not a count");
            bounds[i] = (long) x;  // Python's int(): toward zero
        }
        double[][] weights = new double[w.size()][];
        for (int n = 0; n < weights.length; n++) {
            if (!(w.get(n) instanceof List)) throw new ModelFileException(where + ": weights row " + n + " is not a list");
            List<?> row = (List<?>) w.get(n);
            weights[n] = new double[row.size()];
            for (int i = 0; i < row.size(); i++) weights[n][i] = number(row.get(i), where, "weights");
        }
        try {
            return new PhraseGate(bounds, weights);
        } catch (IllegalArgumentException e) {
            throw new ModelFileException(where + ": " + e.getMessage());
        }
    }

    private static double number(Object o, String where, String field) throws ModelFileException {
        if (!(o instanceof Number)) {
            throw new ModelFileException(where + ": the gate's " + field + " hold " + UserHistory.repr(o) + ", not a number");
        }
        return ((Number) o).doubleValue();
    }

    private static String list(long[] xs) {
        StringBuilder s = new StringBuilder("[");
        for (int i = 0; i < xs.length; i++) s.append(i > 0 ? ", " : "").append(xs[i]);
        return s.append(']').toString();
    }

    private static String list(double[] xs) {
        StringBuilder s = new StringBuilder("[");
        for (int i = 0; i < xs.length; i++) s.append(i > 0 ? ", " : "").append(UserHistory.formatDouble(xs[i]));
        return s.append(']').toString();
    }
}
