package org.keyboardlm.core;

import java.util.Arrays;

/** Operators over an axis: REDUCE_MAX, LOG_SOFTMAX (last axis) and TOPK_V2 (last axis). */
final class ReduceKernels {
    private ReduceKernels() {}

    /** REDUCE_MAX of FLOAT32 over constant axes (ReducerOptions keep_dims 0). */
    static Interpreter.Kernel reduceMax(OpContext c) throws ModelFileException {
        c.expectType(0, TfliteModel.FLOAT32);
        final int[] shape = c.shape(0);
        final boolean[] reduced = new boolean[shape.length];
        for (int a : c.constantInts(1, "the axes")) reduced[c.axis(a, shape.length)] = true;
        boolean keepDims = c.options.getBool(0, false);
        int[] out = new int[shape.length];
        int rank = 0;
        final int[] outStride = new int[shape.length];  // output stride per input axis, 0 on reduced axes
        for (int a = 0; a < shape.length; a++) {
            if (!reduced[a]) out[rank++] = shape[a];
            else if (keepDims) out[rank++] = 1;
        }
        int s = 1;
        for (int a = shape.length - 1; a >= 0; a--) {
            outStride[a] = reduced[a] ? 0 : s;
            if (!reduced[a]) s *= shape[a];
        }
        final int total = s;
        c.output(0, TfliteModel.FLOAT32, Arrays.copyOf(out, rank));
        final int src = c.in(0);
        final int o = c.out(0);
        // The output index of each input element, worked out once.
        final int[] target = new int[Interpreter.elements(shape)];
        int[] idx = new int[shape.length];
        for (int i = 0; i < target.length; i++) {
            int f = 0;
            for (int a = 0; a < shape.length; a++) f += idx[a] * outStride[a];
            target[i] = f;
            for (int a = shape.length - 1; a >= 0; a--) {
                if (++idx[a] < shape[a]) break;
                idx[a] = 0;
            }
        }
        return new Interpreter.Kernel() {
            @Override
            public void run(Object[] v) {
                float[] x = (float[]) v[src];
                float[] r = Interpreter.floats(v, o, total);
                Arrays.fill(r, -Float.MAX_VALUE);  // std::numeric_limits<float>::lowest(), TFLite's initial value
                for (int i = 0; i < x.length; i++) {
                    int f = target[i];
                    if (x[i] > r[f]) r[f] = x[i];
                }
                v[o] = r;
            }
        };
    }

    /**
     * LOG_SOFTMAX over the last axis, as TFLite: {@code (x - max) - log(sum exp(x - max))}
     * in float32, each exp rounded to float32; the sum is kept in double (TFLite's float32
     * sum, in whatever order its kernel takes, is within float32 rounding of it).
     */
    static Interpreter.Kernel logSoftmax(OpContext c) throws ModelFileException {
        c.expectType(0, TfliteModel.FLOAT32);
        int[] shape = c.shape(0);
        if (shape.length == 0) throw c.error("a scalar input");
        final int depth = shape[shape.length - 1];
        c.output(0, TfliteModel.FLOAT32, shape);
        final int src = c.in(0);
        final int o = c.out(0);
        return new Interpreter.Kernel() {
            @Override
            public void run(Object[] v) {
                float[] x = (float[]) v[src];
                float[] r = Interpreter.floats(v, o, x.length);
                for (int off = 0; off < x.length; off += depth) {
                    float max = x[off];
                    for (int i = off + 1; i < off + depth; i++) max = Math.max(max, x[i]);
                    double sum = 0;
                    for (int i = off; i < off + depth; i++) sum += (float) Math.exp(x[i] - max);
                    float logSum = (float) Math.log(sum);
                    for (int i = off; i < off + depth; i++) r[i] = (x[i] - max) - logSum;
                }
                v[o] = r;
            }
        };
    }

    /**
     * TOPK_V2 over the last axis (inputs: FLOAT32 values, constant INT32 k): values and
     * INT32 indices, largest first, equal values by lower index first (TFLite's order).
     */
    static Interpreter.Kernel topK(OpContext c) throws ModelFileException {
        c.expectType(0, TfliteModel.FLOAT32);
        int[] kv = c.constantInts(1, "k");
        if (kv.length != 1) throw c.error("k must be a single value");
        final int k = kv[0];
        int[] shape = c.shape(0);
        if (shape.length == 0) throw c.error("a scalar input");
        final int depth = shape[shape.length - 1];
        if (k < 0 || k > depth) throw c.error("k = " + k + " for rows of " + depth);
        int[] out = shape.clone();
        out[out.length - 1] = k;
        c.output(0, TfliteModel.FLOAT32, out);
        c.output(1, TfliteModel.INT32, out);
        final int src = c.in(0);
        final int ov = c.out(0);
        final int oi = c.out(1);
        return new Interpreter.Kernel() {
            @Override
            public void run(Object[] v) {
                float[] x = (float[]) v[src];
                int rows = x.length / depth;
                float[] values = Interpreter.floats(v, ov, rows * k);
                int[] ids = Interpreter.ints(v, oi, rows * k);
                for (int r = 0; r < rows; r++) top(x, r * depth, depth, k, values, ids, r * k);
                v[ov] = values;
                v[oi] = ids;
            }
        };
    }

    /** The k best of {@code x[off, off + n)} by (value descending, index ascending), by insertion into a sorted prefix. */
    static void top(float[] x, int off, int n, int k, float[] values, int[] ids, int at) {
        int filled = 0;
        for (int i = 0; i < n; i++) {
            float f = x[off + i];
            if (filled == k && !(f > values[at + k - 1])) continue;  // ties keep the earlier index
            int p = filled == k ? k - 1 : filled++;
            while (p > 0 && f > values[at + p - 1]) {
                values[at + p] = values[at + p - 1];
                ids[at + p] = ids[at + p - 1];
                p--;
            }
            values[at + p] = f;
            ids[at + p] = i;
        }
    }
}
