package org.keyboardlm.core;

import java.io.Closeable;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A {@link StepEngine} that runs an exported keyboard_lm .tflite with no TFLite library: the
 * flatbuffer is read by {@link TfliteModel}, the "step" and "step_full" signatures are found
 * by name and each runs on its own {@link Interpreter}. Loading verifies the file's checksum
 * ({@link ModelArchive#verifyChecksum}) before it reads the flatbuffer, and refuses, in one line
 * naming the file, a model whose signatures, tensors or operators this engine does not know.
 * Thread-safe: each call works on its own value array. A value array holds every
 * intermediate tensor and is kept for the next call, so a step allocates only the arrays it
 * returns; calls from several threads at once each take their own.
 *
 * <p>Memory: the weights are decoded from the file's bytes at load (see {@link Interpreter})
 * and the engine keeps no reference to the bytes, so a mapped file can be unmapped and a byte
 * array collected once loading returns. {@link #close} drops the weights; a step after it
 * throws IllegalStateException, and steps already running finish.
 */
public final class JavaStepEngine implements StepEngine, Closeable {
    public static final String STEP = "step";
    public static final String STEP_FULL = "step_full";

    private final String name;
    /** Null once closed. */
    private volatile Runner step;
    private volatile Runner full;
    private final int stateSize;
    private final int vocabSize;
    private final int topK;

    /** One signature on one interpreter: tensor indices of token, state and the outputs. */
    private static final class Runner {
        final Interpreter graph;
        final int token;
        final int stateIn;
        final int stateOut;
        final Map<String, Integer> outputs;
        /** A value array no call is using, kept for the next one. */
        private final AtomicReference<Object[]> idle = new AtomicReference<Object[]>();

        Runner(TfliteModel model, String key, String[] outputNames) throws ModelFileException {
            TfliteModel.Signature s = model.signature(key);
            if (s == null) {
                throw new ModelFileException(model.path + ": the model has no \"" + key + "\" signature (not exported by keyboard-lm export)");
            }
            if (!s.inputs.keySet().equals(new java.util.HashSet<String>(Arrays.asList("token", "state")))
                    || !s.outputs.keySet().equals(new java.util.HashSet<String>(Arrays.asList(outputNames)))) {
                throw new ModelFileException(model.path + ": signature " + key + " has inputs " + s.inputs.keySet() + " and outputs "
                        + s.outputs.keySet() + ", expected [token, state] and " + Arrays.toString(outputNames));
            }
            graph = new Interpreter(model, s.subgraph);
            token = s.inputs.get("token");
            stateIn = s.inputs.get("state");
            stateOut = s.outputs.get("state");
            outputs = s.outputs;
            expect(model, key, "token", token, TfliteModel.INT32, new int[] {1});
            int size = graph.shapes[stateIn].length == 2 ? graph.shapes[stateIn][1] : -1;
            expect(model, key, "state", stateIn, TfliteModel.FLOAT32, new int[] {1, size});
            expect(model, key, "output state", stateOut, TfliteModel.FLOAT32, new int[] {1, size});
        }

        void expect(TfliteModel model, String key, String what, int tensor, int type, int[] shape) throws ModelFileException {
            if (graph.types[tensor] != type || !Arrays.equals(graph.shapes[tensor], shape)) {
                throw new ModelFileException(model.path + ": signature " + key + " " + what + " is "
                        + TfliteModel.typeName(graph.types[tensor]) + Arrays.toString(graph.shapes[tensor]) + ", expected "
                        + TfliteModel.typeName(type) + Arrays.toString(shape));
            }
        }

        int[] shape(String output) {
            return graph.shapes[outputs.get(output)];
        }

        /** A value array with the token and a copy of the state as inputs; give it back with {@link #release}. */
        Object[] acquire(int tokenId, float[] state) {
            Object[] v = idle.getAndSet(null);
            if (v == null) v = graph.newValues();
            ((int[]) v[token])[0] = tokenId;
            System.arraycopy(state, 0, (float[]) v[stateIn], 0, state.length);
            return v;
        }

        void release(Object[] v) {
            idle.set(v);
        }

        float[] floats(Object[] v, String output) {
            return ((float[]) v[outputs.get(output)]).clone();
        }
    }

    private JavaStepEngine(TfliteModel model) throws ModelFileException {
        name = model.path;
        Runner step = new Runner(model, STEP, new String[] {"top_ids", "top_log_probs", "state"});
        Runner full = new Runner(model, STEP_FULL, new String[] {"log_probs", "state"});
        this.step = step;
        this.full = full;
        stateSize = step.graph.shapes[step.stateIn][1];
        int[] logProbs = full.shape("log_probs");
        int[] topIds = step.shape("top_ids");
        if (logProbs.length != 2 || logProbs[0] != 1 || topIds.length != 2 || topIds[0] != 1
                || !Arrays.equals(topIds, step.shape("top_log_probs")) || full.graph.shapes[full.stateIn][1] != stateSize
                || full.graph.types[full.outputs.get("log_probs")] != TfliteModel.FLOAT32
                || step.graph.types[step.outputs.get("top_ids")] != TfliteModel.INT32
                || step.graph.types[step.outputs.get("top_log_probs")] != TfliteModel.FLOAT32) {
            throw new ModelFileException(model.path + ": signature outputs log_probs " + Arrays.toString(logProbs) + ", top_ids "
                    + Arrays.toString(topIds) + ", top_log_probs " + Arrays.toString(step.shape("top_log_probs"))
                    + " are not those of a keyboard_lm step module");
        }
        vocabSize = logProbs[1];
        topK = topIds[1];
    }

    /** Load {@code path} (a .tflite exported by keyboard-lm export), mapped into memory while it is read. */
    public static JavaStepEngine load(String path) throws ModelFileException {
        return fromBuffer(path, ModelArchive.map(path));
    }

    /** The engine of a model file's bytes; {@code name} appears in error messages. */
    public static JavaStepEngine fromBytes(String name, byte[] data) throws ModelFileException {
        if (data == null) throw new IllegalArgumentException("data must not be null");
        return fromBuffer(name, ByteBuffer.wrap(data));
    }

    /**
     * The engine of the model file in {@code data} from its position to its limit (a mapped
     * file, say), read in place; the buffer's position is not moved and no reference to it is
     * kept. {@code name} appears in error messages.
     */
    public static JavaStepEngine fromBuffer(String name, ByteBuffer data) throws ModelFileException {
        return fromBuffer(name, data, false);
    }

    /** As {@link #fromBuffer(String, ByteBuffer)}; {@code checksumVerified}: {@link ModelArchive} has verified it. */
    static JavaStepEngine fromBuffer(String name, ByteBuffer data, boolean checksumVerified) throws ModelFileException {
        if (data == null) throw new IllegalArgumentException("data must not be null");
        try {
            TfliteModel model = TfliteModel.read(name, data, checksumVerified);
            try {
                return new JavaStepEngine(model);
            } finally {
                model.release();
            }
        } catch (InternalError e) {
            throw ModelArchive.unreadable(name, e);
        } catch (RuntimeException e) {
            // Whatever the checks above missed is still the file's fault, and still one line naming it.
            throw new ModelFileException(name + ": the TFLite flatbuffer is corrupt (" + e + ")");
        }
    }

    /** Drops the weights (idempotent); later steps throw IllegalStateException naming the model. */
    @Override
    public void close() {
        step = null;
        full = null;
    }

    private Runner open(Runner r) {
        if (r == null) throw new IllegalStateException(name + ": the model is closed");
        return r;
    }

    @Override
    public int stateSize() {
        return stateSize;
    }

    @Override
    public int vocabSize() {
        return vocabSize;
    }

    @Override
    public int topK() {
        return topK;
    }

    @Override
    public float[] initialState() {
        return new float[stateSize];
    }

    private void check(int token, float[] state) {
        if (token < 0 || token >= vocabSize) {
            throw new IllegalArgumentException("token id " + token + " is outside the vocabulary [0, " + vocabSize + ")");
        }
        if (state == null || state.length != stateSize) {
            throw new IllegalArgumentException("the state has " + (state == null ? "no" : String.valueOf(state.length))
                    + " values, the model's has " + stateSize);
        }
    }

    @Override
    public TopStep step(int token, float[] state) {
        Runner step = open(this.step);
        check(token, state);
        Object[] v = step.acquire(token, state);
        try {
            step.graph.run(v);
            return new TopStep(((int[]) v[step.outputs.get("top_ids")]).clone(), step.floats(v, "top_log_probs"),
                    step.floats(v, "state"));
        } finally {
            step.release(v);
        }
    }

    @Override
    public FullStep stepFull(int token, float[] state) {
        return stepFull(token, state, null);
    }

    @Override
    public FullStep stepFull(int token, float[] state, FullStep into) {
        Runner full = open(this.full);
        check(token, state);
        if (into != null && (into.logProbs == null || into.logProbs.length != vocabSize || into.state == null
                || into.state.length != stateSize)) {
            throw new IllegalArgumentException("the result to write into has arrays of the wrong sizes");
        }
        Object[] v = full.acquire(token, state);
        try {
            full.graph.run(v);
            if (into == null) return new FullStep(full.floats(v, "log_probs"), full.floats(v, "state"));
            System.arraycopy((float[]) v[full.outputs.get("log_probs")], 0, into.logProbs, 0, vocabSize);
            System.arraycopy((float[]) v[full.stateOut], 0, into.state, 0, stateSize);
            return into;
        } finally {
            full.release(v);
        }
    }

    /**
     * Labels of the operators {@link #profileStepFull} times, in plan order: position in the
     * file, builtin name and output shape, e.g. "#12 FULLY_CONNECTED [1, 2010]". For benchmarks.
     */
    String[] stepFullOperators() {
        Interpreter g = open(full).graph;
        String[] labels = new String[g.plannedOperators()];
        for (int i = 0; i < labels.length; i++) {
            TfliteModel.Operator op = g.plannedOperator(i);
            labels[i] = "#" + op.index + " " + BuiltinOperator.name(op.builtinCode) + g.plannedFusion(i) + " "
                    + Arrays.toString(g.shapes[op.outputs[0]]).replace(" ", "");
        }
        return labels;
    }

    /** {@link #stepFull}, adding each operator's time (ns) to {@code nanos} (see {@link #stepFullOperators}). */
    FullStep profileStepFull(int token, float[] state, long[] nanos) {
        Runner full = open(this.full);
        check(token, state);
        Object[] v = full.acquire(token, state);
        try {
            full.graph.run(v, nanos);
            return new FullStep(full.floats(v, "log_probs"), full.floats(v, "state"));
        } finally {
            full.release(v);
        }
    }
}
