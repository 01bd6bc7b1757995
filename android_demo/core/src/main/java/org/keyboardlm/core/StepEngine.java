package org.keyboardlm.core;

/**
 * One recurrent step of an exported keyboard_lm model over an explicit state, the two
 * signatures of keyboard_lm/export/step_module.py (keyboard_lm/inference/model_file.py in Python):
 *
 * <ul>
 * <li>{@link #step}: the top K next words (special tokens excluded) and the new state;
 * <li>{@link #stepFull}: log-probabilities of every vocabulary id and the new state.
 * </ul>
 *
 * The state is a float vector of {@link #stateSize()} ([h, c] for CIFG/SI-CIFG/LSTM, [s]
 * for GRU); an engine never changes the array it is given. {@link JavaStepEngine} runs the
 * .tflite in plain Java; a LiteRT-backed engine can implement the same interface in an
 * Android build. An engine that holds resources (weights, a native interpreter) also
 * implements {@link java.io.Closeable}: {@link ModelFile#close} closes it. The interface itself
 * does not extend Closeable, so that an engine without resources needs no close method (a
 * default method would do that, but dx refuses default methods below API 24).
 */
public interface StepEngine {
    /** Result of {@link #step}: ids and log-probs of the top K words, most probable first, and the new state. */
    final class TopStep {
        public final int[] ids;
        public final float[] logProbs;
        public final float[] state;

        public TopStep(int[] ids, float[] logProbs, float[] state) {
            this.ids = ids;
            this.logProbs = logProbs;
            this.state = state;
        }
    }

    /** Result of {@link #stepFull}: the log-prob of every vocabulary id and the new state. */
    final class FullStep {
        public final float[] logProbs;
        public final float[] state;

        public FullStep(float[] logProbs, float[] state) {
            this.logProbs = logProbs;
            this.state = state;
        }
    }

    int stateSize();

    int vocabSize();

    /** K of {@link #step}. */
    int topK();

    /** The zero state a sentence (and each training chunk) starts from. */
    float[] initialState();

    /** The model after {@code token} from {@code state}: top K words; IllegalArgumentException for a bad token or state. */
    TopStep step(int token, float[] state);

    /** The model after {@code token} from {@code state}: the full next-word distribution. */
    FullStep stepFull(int token, float[] state);

    /**
     * As {@link #stepFull(int, float[])}, but the result is written into {@code into}'s arrays
     * (of the vocabulary's and the state's sizes) and {@code into} is returned, so a caller
     * that recycles results it no longer needs steps without allocating; null: a new result.
     * {@code state} may be {@code into.state}.
     */
    FullStep stepFull(int token, float[] state, FullStep into);
}
