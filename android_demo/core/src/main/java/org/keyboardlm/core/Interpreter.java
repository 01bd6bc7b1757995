package org.keyboardlm.core;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Runs one subgraph of a {@link TfliteModel} in plain Java: at construction every operator
 * is matched to a kernel ({@link Kernels}), its output shapes and types are worked out and
 * checked against the file, and operators whose inputs are all constant (DEQUANTIZE of the
 * int8 weights in the weight-only files) are run once, as TFLite keeps such results. What
 * is left runs in file order on each {@link #run}.
 *
 * Tensor values are plain arrays: float[] (FLOAT32), int[] (INT32), byte[] (INT8) and
 * boolean[] (BOOL), row-major as in TFLite. Shapes are static (the step signatures have
 * batch 1). Constants are shared and never written, so one Interpreter serves many threads.
 *
 * <p>Constants are decoded straight from the file's bytes (a view of the model's buffer,
 * {@link TfliteModel#data}), one array per buffer, type and size, shared by the subgraphs of
 * one file; a folded DEQUANTIZE of such a constant is shared too. A constant that only folded
 * operators read (the int8 weights of a weight-only file, once dequantized) is not kept.
 *
 * <p>A value array from {@link #newValues()} holds, besides the constants, one buffer for
 * every tensor a kernel writes and the kernels' scratch buffers ({@link OpContext#scratch}),
 * allocated once: kernels write into them ({@link #floats} and its siblings), so a value array
 * reused call after call makes a run allocate nothing. Each thread needs its own value array.
 */
final class Interpreter {
    /** One operator's computation; reads and writes the value array of one run. */
    interface Kernel {
        void run(Object[] values);
    }

    final TfliteModel model;
    final TfliteModel.Subgraph subgraph;
    final String where;
    final int[][] shapes;
    final int[] types;
    private final Object[] constants;
    /** Scratch buffers of the kernels, one per slot after the tensors; copied into each value array. */
    private final List<Object> scratch = new ArrayList<Object>();
    private final List<Kernel> plan = new ArrayList<Kernel>();
    /** The operator of each planned kernel, for {@link #run(Object[], long[])}'s per-operator times. */
    private final List<TfliteModel.Operator> planOps = new ArrayList<TfliteModel.Operator>();
    /** Per planned kernel, the builtin names of the operators fused into it ("" for none). */
    private final List<String> planFused = new ArrayList<String>();

    Interpreter(TfliteModel model, int subgraphIndex) throws ModelFileException {
        this(model, subgraphIndex, true, PACK_INT8);
    }

    /**
     * Whether int8 weights are packed for 64-bit multiply-adds ({@link FullyConnected#pack}):
     * faster on HotSpot, which runs the plain int8 loop as scalar code; not on Android's
     * runtime (java.vm.name "Dalvik"), whose loop vectorizer handles the plain int8 loop.
     * Both give the same bits.
     */
    static final boolean PACK_INT8 = !System.getProperty("java.vm.name", "").contains("Dalvik");

    /** See {@link #PACK_INT8}; set per interpreter so tests can compare both. */
    final boolean packInt8;

    /**
     * {@code fuse}: run FULLY_CONNECTED -> LOG_SOFTMAX (and -> STRIDED_SLICE -> TOPK_V2 after
     * it) as one kernel where nothing else reads the tensors in between (see
     * {@link FullyConnected#fuseLogSoftmax}); false runs every operator on its own (tests
     * compare the two).
     */
    Interpreter(TfliteModel model, int subgraphIndex, boolean fuse, boolean packInt8) throws ModelFileException {
        this.model = model;
        this.packInt8 = packInt8;
        this.subgraph = model.subgraphs.get(subgraphIndex);
        this.where = model.path + ": subgraph " + subgraphIndex + (subgraph.name == null ? "" : " (" + subgraph.name + ")");
        int n = subgraph.tensors.size();
        shapes = new int[n][];
        types = new int[n];
        constants = new Object[n];
        boolean[] defined = new boolean[n];
        checkActivationBytes();
        for (TfliteModel.Tensor t : subgraph.tensors) {
            types[t.index] = t.type;
            if (model.hasData(t.buffer)) {
                shapes[t.index] = t.shape;
                // The subgraphs of one file share their constants: decoded once per buffer, type and size.
                String key = constantKey(t);
                Object value = model.shared(key);
                constants[t.index] = value != null ? value : model.share(key, decode(t, model.data(t.buffer)));
                defined[t.index] = true;
            }
        }
        for (int i : subgraph.inputs) {
            TfliteModel.Tensor t = subgraph.tensors.get(i);
            for (int d : t.shape) {
                if (d < 0) throw new ModelFileException(where + ": input " + t.name + " has a dynamic shape " + Arrays.toString(t.shape));
            }
            checkType(t, "input");
            shapes[i] = t.shape;
            defined[i] = true;
        }
        // Readers of each tensor (a subgraph output counts as one), to find fusable pairs.
        int[] readers = new int[n];
        for (TfliteModel.Operator op : subgraph.operators) {
            for (int i : op.inputs) if (i >= 0) readers[i]++;
        }
        for (int o : subgraph.outputs) readers[o]++;
        FullyConnected[] producedByFc = new FullyConnected[n];
        // Tensors an operator that runs per call reads (folded operators do not count).
        boolean[] readAtRunTime = new boolean[n];
        for (int o : subgraph.outputs) readAtRunTime[o] = true;
        for (TfliteModel.Operator op : subgraph.operators) {
            OpContext ctx = new OpContext(this, op);
            for (int i : op.inputs) {
                if (i >= 0 && !defined[i]) {
                    throw ctx.error("reads tensor " + i + " (" + subgraph.tensors.get(i).name + ") before any operator writes it");
                }
            }
            Kernel k = Kernels.create(ctx);
            boolean allConstant = op.inputs.length > 0;
            for (int i : op.inputs) {
                if (i >= 0 && constants[i] == null) allConstant = false;
            }
            for (int o : op.outputs) {
                if (shapes[o] == null) throw ctx.error("kernel did not describe output " + o);
                checkType(subgraph.tensors.get(o), "output of " + ctx.name());
                defined[o] = true;
            }
            work += work(op);
            if (work > MAX_STEP_WORK) {
                throw ctx.error("one run of the subgraph would cost more than " + MAX_STEP_WORK
                        + " multiply-adds, far more than a keyboard model's step");
            }
            if (allConstant) {
                String key = foldedKey(op);
                Object folded = key == null ? null : model.shared(key);
                if (folded != null) {
                    constants[op.outputs[0]] = folded;
                    continue;
                }
                Object[] values = Arrays.copyOf(constants, constants.length + scratch.size());
                for (int i = 0; i < scratch.size(); i++) values[constants.length + i] = copyOfArray(scratch.get(i));
                k.run(values);
                for (int o : op.outputs) constants[o] = values[o];
                if (key != null) constants[op.outputs[0]] = model.share(key, constants[op.outputs[0]]);
                continue;
            }
            for (int i : op.inputs) if (i >= 0) readAtRunTime[i] = true;
            if (op.builtinCode == BuiltinOperator.LOG_SOFTMAX) {
                // FULLY_CONNECTED -> LOG_SOFTMAX with nothing else reading the logits: one kernel.
                FullyConnected fc = producedByFc[op.inputs[0]];
                if (fuse && fc != null && readers[op.inputs[0]] == 1 && fc.fusable()) {
                    fc.fuseLogSoftmax(op.outputs[0], -1, -1, 0, 0, 0);
                    int at = planOps.size() - 1;
                    while (planOps.get(at).outputs[0] != op.inputs[0]) at--;
                    planFused.set(at, planFused.get(at) + "+" + ctx.name());
                    continue;
                }
            }
            plan.add(k);
            planOps.add(op);
            planFused.add("");
            if (k instanceof FullyConnected) producedByFc[op.outputs[0]] = (FullyConnected) k;
        }
        for (int o : subgraph.outputs) {
            if (!defined[o]) throw new ModelFileException(where + ": output tensor " + o + " is never written");
        }
        if (fuse) fuseTopK(readers);
        unused = new boolean[n];
        for (int t = 0; t < n; t++) {
            if (constants[t] != null && !readAtRunTime[t]) {
                constants[t] = null;
                unused[t] = true;
            }
        }
    }

    /**
     * Multiply-adds (or elements touched) one run of a subgraph may cost, as in Python
     * (keyboard_lm/inference/tflite_shapes.py): about 60 times the paper-size CIFG's step, so a
     * file that repeats a big matrix product thousands of times is refused at load instead of
     * stalling every suggestion.
     */
    static final long MAX_STEP_WORK = 256L << 20;
    private long work;

    /** Multiply-adds of FULLY_CONNECTED, elements read and written by any other operator. */
    private long work(TfliteModel.Operator op) {
        if (op.builtinCode == BuiltinOperator.FULLY_CONNECTED) {
            return count(shapes[op.outputs[0]]) * shapes[op.inputs[1]][1];
        }
        long n = 0;
        for (int t : op.inputs) if (t >= 0) n += count(shapes[t]);
        for (int t : op.outputs) n += count(shapes[t]);
        return n;
    }

    private static long count(int[] shape) {
        long n = 1;
        for (int d : shape) n = Math.min(n * d, Long.MAX_VALUE / Integer.MAX_VALUE);
        return n;
    }

    /**
     * The most bytes one value array may hold for the tensors computed per call, as in Python
     * (keyboard_lm/inference/tflite_flatbuffer.py): a paper-size model needs well under 1 MB, and a
     * hostile file declaring huge inputs is refused here instead of exhausting the heap.
     */
    static final long MAX_ACTIVATION_BYTES = 64L << 20;

    /**
     * Refuses a subgraph whose non-constant tensors, as the file declares them (every kernel's
     * output must have its declared shape), need more than MAX_ACTIVATION_BYTES: checked before
     * any kernel allocates anything.
     */
    private void checkActivationBytes() throws ModelFileException {
        long total = 0;
        for (TfliteModel.Tensor t : subgraph.tensors) {
            if (model.hasData(t.buffer)) continue;
            long count = 1;
            for (int d : t.shape) {
                if (d < 0) throw new ModelFileException(where + ": tensor " + t.name + " has shape " + Arrays.toString(t.shape));
                count = Math.min(count * d, MAX_ACTIVATION_BYTES + 1);
            }
            total += count * (t.type == TfliteModel.INT8 || t.type == TfliteModel.BOOL ? 1 : 4);
            if (total > MAX_ACTIVATION_BYTES) {
                throw new ModelFileException(where + ": the tensors computed per call need more than " + MAX_ACTIVATION_BYTES
                        + " bytes (tensor " + t.name + " " + Arrays.toString(t.shape) + "); not a keyboard model");
            }
        }
    }

    /** Constants no run reads (only folded operators did); they get no buffer in a value array. */
    private final boolean[] unused;

    /** The key under which the model shares the decoded value of file constant {@code t}. */
    private static String constantKey(TfliteModel.Tensor t) {
        return "constant " + t.buffer + " " + t.type + " " + elements(t.shape);
    }

    /**
     * The key under which the model shares the result of folded operator {@code op}, or null
     * when it is not shared: a DEQUANTIZE of a file constant (a weight-only file's weights,
     * which both signatures dequantize), keyed by everything its result depends on.
     */
    private String foldedKey(TfliteModel.Operator op) {
        if (op.builtinCode != BuiltinOperator.DEQUANTIZE || op.inputs.length != 1 || op.outputs.length != 1
                || op.inputs[0] < 0) {
            return null;
        }
        TfliteModel.Tensor in = subgraph.tensors.get(op.inputs[0]);
        TfliteModel.Tensor out = subgraph.tensors.get(op.outputs[0]);
        if (!model.hasData(in.buffer)) return null;
        return "DEQUANTIZE of " + constantKey(in) + " " + Arrays.toString(in.shape) + " scales "
                + Arrays.toString(in.scales) + " zero points " + Arrays.toString(in.zeroPoints) + " dimension "
                + in.quantizedDimension + " to " + out.type + " " + Arrays.toString(shapes[op.outputs[0]]);
    }

    /**
     * A fused LOG_SOFTMAX whose log-probs only a STRIDED_SLICE of consecutive columns reads,
     * and that slice only a TOPK_V2: the top k are kept while the log-probs are computed, and
     * neither the log-prob vector nor the slice is written.
     */
    private void fuseTopK(int[] readers) {
        for (int i = 0; i < plan.size(); i++) {
            if (!(plan.get(i) instanceof FullyConnected)) continue;
            FullyConnected fc = (FullyConnected) plan.get(i);
            int logProbs = fc.logProbsTensor();
            if (logProbs < 0 || readers[logProbs] != 1) continue;
            int slice = reader(logProbs, BuiltinOperator.STRIDED_SLICE);
            if (slice < 0 || !(plan.get(slice) instanceof ShapeKernels.Slice)) continue;
            int sliced = planOps.get(slice).outputs[0];
            int topK = readers[sliced] == 1 ? reader(sliced, BuiltinOperator.TOPK_V2) : -1;
            if (topK < 0) continue;
            int[] from = ((ShapeKernels.Slice) plan.get(slice)).sources();
            boolean consecutive = from.length > 0;
            for (int j = 1; j < from.length && consecutive; j++) consecutive = from[j] == from[0] + j;
            if (!consecutive) continue;
            TfliteModel.Operator top = planOps.get(topK);
            int k = ((int[]) constants[top.inputs[1]])[0];
            if (k < 1) continue;  // TOPK_V2 of nothing: left to its own kernel
            fc.fuseLogSoftmax(logProbs, top.outputs[0], top.outputs[1], k, from[0], from[0] + from.length);
            planFused.set(i, planFused.get(i) + "+STRIDED_SLICE+TOPK_V2");
            int first = Math.max(slice, topK);
            int second = Math.min(slice, topK);
            for (int r : new int[] {first, second}) {
                plan.remove(r);
                planOps.remove(r);
                planFused.remove(r);
            }
        }
    }

    /** Position in the plan of the kernel of builtin {@code code} whose first input is {@code tensor}; -1 if none. */
    private int reader(int tensor, int code) {
        for (int i = 0; i < planOps.size(); i++) {
            TfliteModel.Operator op = planOps.get(i);
            if (op.builtinCode == code && op.inputs.length > 0 && op.inputs[0] == tensor) return i;
        }
        return -1;
    }

    private void checkType(TfliteModel.Tensor t, String role) throws ModelFileException {
        if (t.sparse) throw new ModelFileException(where + ": tensor " + t.name + " (" + role + ") is sparse; not supported");
        if (t.variable) throw new ModelFileException(where + ": tensor " + t.name + " (" + role + ") is a variable; not supported");
        switch (t.type) {
            case TfliteModel.FLOAT32:
            case TfliteModel.INT32:
            case TfliteModel.INT8:
            case TfliteModel.BOOL:
                return;
            default:
                throw new ModelFileException(where + ": tensor " + t.name + " (" + role + ") has type "
                        + TfliteModel.typeName(t.type) + "; the Java step engine computes FLOAT32, INT32, INT8 and BOOL");
        }
    }

    /**
     * The value of constant {@code t}, decoded from {@code b} (a little-endian view of its
     * buffer in the file) into a new array: the only copy of the data the model keeps.
     */
    private Object decode(TfliteModel.Tensor t, ByteBuffer b) throws ModelFileException {
        long count = 1;
        for (int d : t.shape) count *= d;
        int width = t.type == TfliteModel.INT8 || t.type == TfliteModel.BOOL ? 1 : 4;
        checkType(t, "constant");
        if (count < 0 || count * width != b.remaining()) {
            throw new ModelFileException(where + ": constant tensor " + t.name + " " + Arrays.toString(t.shape) + " of type "
                    + TfliteModel.typeName(t.type) + " has " + b.remaining() + " bytes of data");
        }
        int n = (int) count;
        b.order(ByteOrder.LITTLE_ENDIAN);
        switch (t.type) {
            case TfliteModel.FLOAT32: {
                float[] f = new float[n];
                b.asFloatBuffer().get(f);
                return f;
            }
            case TfliteModel.INT32: {
                int[] v = new int[n];
                b.asIntBuffer().get(v);
                return v;
            }
            case TfliteModel.INT8: {
                byte[] v = new byte[n];
                b.get(v);
                return v;
            }
            default: {
                boolean[] z = new boolean[n];
                for (int i = 0; i < n; i++) z[i] = b.get(i) != 0;
                return z;
            }
        }
    }

    static int elements(int[] shape) {
        int n = 1;
        for (int d : shape) n *= d;
        return n;
    }

    /** The value of constant tensor {@code t} (a file constant or a folded result), or null. */
    Object constant(int t) {
        return constants[t];
    }

    /**
     * A value array for runs: the constants, a buffer for every other tensor (inputs included)
     * and the kernels' scratch buffers. Reusable run after run by one thread at a time.
     */
    Object[] newValues() {
        Object[] v = Arrays.copyOf(constants, constants.length + scratch.size());
        for (int t = 0; t < constants.length; t++) {
            if (v[t] == null && shapes[t] != null && !unused[t]) v[t] = ShapeKernels.newArray(types[t], elements(shapes[t]));
        }
        for (int i = 0; i < scratch.size(); i++) v[constants.length + i] = copyOfArray(scratch.get(i));
        return v;
    }

    /** Registers a scratch buffer like {@code template} (a primitive array) in every value array; returns its slot. */
    int addScratch(Object template) {
        scratch.add(template);
        return constants.length + scratch.size() - 1;
    }

    private static Object copyOfArray(Object a) {
        if (a instanceof float[]) return ((float[]) a).clone();
        if (a instanceof int[]) return ((int[]) a).clone();
        if (a instanceof byte[]) return ((byte[]) a).clone();
        if (a instanceof boolean[]) return ((boolean[]) a).clone();
        if (a instanceof long[]) return ((long[]) a).clone();
        throw new IllegalArgumentException("not a scratch buffer: " + a);
    }

    /**
     * The buffer of tensor {@code t} in {@code v} for a kernel to write {@code n} floats into:
     * the value array's own buffer, or a new array where there is none (constant folding at load).
     */
    static float[] floats(Object[] v, int t, int n) {
        Object a = v[t];
        return a instanceof float[] && ((float[]) a).length == n ? (float[]) a : new float[n];
    }

    static int[] ints(Object[] v, int t, int n) {
        Object a = v[t];
        return a instanceof int[] && ((int[]) a).length == n ? (int[]) a : new int[n];
    }

    static boolean[] bools(Object[] v, int t, int n) {
        Object a = v[t];
        return a instanceof boolean[] && ((boolean[]) a).length == n ? (boolean[]) a : new boolean[n];
    }

    /** As {@link #floats}, for a tensor of any of the engine's types. */
    static Object array(Object[] v, int t, int type, int n) {
        switch (type) {
            case TfliteModel.FLOAT32:
                return floats(v, t, n);
            case TfliteModel.INT32:
                return ints(v, t, n);
            case TfliteModel.INT8: {
                Object a = v[t];
                return a instanceof byte[] && ((byte[]) a).length == n ? a : new byte[n];
            }
            default:
                return bools(v, t, n);
        }
    }

    /** Runs the operators that depend on the inputs already placed in {@code values}. */
    void run(Object[] values) {
        for (Kernel k : plan) k.run(values);
    }

    /**
     * As {@link #run(Object[])}, adding each planned operator's wall time in nanoseconds to
     * {@code nanos[i]} (i: position in the plan, see {@link #plannedOperator}). For benchmarks.
     */
    void run(Object[] values, long[] nanos) {
        long t = System.nanoTime();
        for (int i = 0; i < plan.size(); i++) {
            plan.get(i).run(values);
            long now = System.nanoTime();
            nanos[i] += now - t;
            t = now;
        }
    }

    /** Builtin names of the operators fused into the {@code i}-th planned kernel, each after a "+" ("" for none). */
    String plannedFusion(int i) {
        return planFused.get(i);
    }

    /** The operator the {@code i}-th planned kernel runs. */
    TfliteModel.Operator plannedOperator(int i) {
        return planOps.get(i);
    }

    /** Operators run inside another's kernel (see {@link #plannedFusion}). */
    int fusedOperators() {
        int n = 0;
        for (String f : planFused) n += f.isEmpty() ? 0 : f.split("\\+").length - 1;
        return n;
    }

    /** Kernels left to run per call (after constant folding). */
    int plannedOperators() {
        return plan.size();
    }
}
