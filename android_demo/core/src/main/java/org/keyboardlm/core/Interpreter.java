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
    private final List<Kernel> plan = new ArrayList<Kernel>();

    Interpreter(TfliteModel model, int subgraphIndex) throws ModelFileException {
        this.model = model;
        this.subgraph = model.subgraphs.get(subgraphIndex);
        this.where = model.path + ": subgraph " + subgraphIndex + (subgraph.name == null ? "" : " (" + subgraph.name + ")");
        int n = subgraph.tensors.size();
        shapes = new int[n][];
        types = new int[n];
        constants = new Object[n];
        boolean[] defined = new boolean[n];
        for (TfliteModel.Tensor t : subgraph.tensors) {
            types[t.index] = t.type;
            if (model.hasData(t.buffer)) {
                shapes[t.index] = t.shape;
                constants[t.index] = decode(t, model.data(t.buffer));
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
            if (allConstant) {
                Object[] values = constants.clone();
                k.run(values);
                for (int o : op.outputs) constants[o] = values[o];
            } else {
                plan.add(k);
            }
        }
        for (int o : subgraph.outputs) {
            if (!defined[o]) throw new ModelFileException(where + ": output tensor " + o + " is never written");
        }
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

    private Object decode(TfliteModel.Tensor t, byte[] bytes) throws ModelFileException {
        int count = elements(t.shape);
        ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        int width = t.type == TfliteModel.INT8 || t.type == TfliteModel.BOOL ? 1 : 4;
        checkType(t, "constant");
        if ((long) count * width != bytes.length) {
            throw new ModelFileException(where + ": constant tensor " + t.name + " " + Arrays.toString(t.shape) + " of type "
                    + TfliteModel.typeName(t.type) + " has " + bytes.length + " bytes of data");
        }
        switch (t.type) {
            case TfliteModel.FLOAT32: {
                float[] f = new float[count];
                b.asFloatBuffer().get(f);
                return f;
            }
            case TfliteModel.INT32: {
                int[] v = new int[count];
                b.asIntBuffer().get(v);
                return v;
            }
            case TfliteModel.INT8:
                return bytes;
            default: {
                boolean[] z = new boolean[count];
                for (int i = 0; i < count; i++) z[i] = bytes[i] != 0;
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

    /** A value array for one run: the constants, with every other tensor unset. */
    Object[] newValues() {
        return constants.clone();
    }

    /** Runs the operators that depend on the inputs already placed in {@code values}. */
    void run(Object[] values) {
        for (Kernel k : plan) k.run(values);
    }

    /** Kernels left to run per call (after constant folding). */
    int plannedOperators() {
        return plan.size();
    }
}
