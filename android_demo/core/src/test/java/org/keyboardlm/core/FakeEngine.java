package org.keyboardlm.core;

import java.util.Arrays;

/**
 * A StepEngine for behaviour tests: the state counts steps and remembers the last token, the
 * log-probs are a fixed table (by default uniform), and every call is counted.
 */
final class FakeEngine implements StepEngine {
    final float[] table;
    int calls;

    FakeEngine(int vocabSize) {
        table = new float[vocabSize];
        Arrays.fill(table, (float) -Math.log(vocabSize));
    }

    /** A model file with {@code words} after the special tokens, over this engine. */
    static ModelFile model(int seqLen, String... words) throws ModelFileException {
        java.util.List<String> tokens = new java.util.ArrayList<String>(Vocabulary.SPECIAL_TOKENS);
        tokens.addAll(Arrays.asList(words));
        return new ModelFile("fake.tflite", new Vocabulary(tokens), new FakeEngine(tokens.size()), seqLen, "");
    }

    @Override
    public int stateSize() {
        return 2;
    }

    @Override
    public int vocabSize() {
        return table.length;
    }

    @Override
    public int topK() {
        return 3;
    }

    @Override
    public float[] initialState() {
        return new float[2];
    }

    @Override
    public TopStep step(int token, float[] state) {
        throw new UnsupportedOperationException("sessions use stepFull");
    }

    @Override
    public FullStep stepFull(int token, float[] state) {
        calls++;
        return new FullStep(table.clone(), new float[] {state[0] + 1, token});
    }

    @Override
    public FullStep stepFull(int token, float[] state, FullStep into) {
        FullStep s = stepFull(token, state);
        if (into == null) return s;
        System.arraycopy(s.logProbs, 0, into.logProbs, 0, s.logProbs.length);
        System.arraycopy(s.state, 0, into.state, 0, s.state.length);
        return into;
    }
}
