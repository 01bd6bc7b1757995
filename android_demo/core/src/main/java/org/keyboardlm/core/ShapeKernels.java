package org.keyboardlm.core;

import java.util.Arrays;

/**
 * Operators that move values without arithmetic: CONCATENATION, SPLIT, SPLIT_V,
 * STRIDED_SLICE and GATHER, for any of the engine's tensor types (GATHER of an INT8 table
 * yields INT8 with the table's quantization; a DEQUANTIZE follows it).
 */
final class ShapeKernels {
    private ShapeKernels() {}

    static Object newArray(int type, int n) {
        switch (type) {
            case TfliteModel.FLOAT32:
                return new float[n];
            case TfliteModel.INT32:
                return new int[n];
            case TfliteModel.INT8:
                return new byte[n];
            default:
                return new boolean[n];
        }
    }

    private static int product(int[] shape, int from, int to) {
        int n = 1;
        for (int a = from; a < to; a++) n *= shape[a];
        return n;
    }

    /** CONCATENATION: ConcatenationOptions axis 0, fused_activation_function 1 (NONE only). */
    static Interpreter.Kernel concatenation(OpContext c) throws ModelFileException {
        final int type = c.type(0);
        if (c.options.getByte(1, 0) != 0) throw c.error("a fused activation is not supported");
        final int k = c.inputs();
        int[] first = c.shape(0);
        int axis = c.axis(c.options.getInt(0, 0), first.length);
        int[] shape = first.clone();
        shape[axis] = 0;
        final int[] in = new int[k];
        final int[] chunk = new int[k];  // elements of input i per outer index
        final int outer = product(first, 0, axis);
        int inner = product(first, axis + 1, first.length);
        for (int i = 0; i < k; i++) {
            c.expectType(i, type);
            int[] s = c.shape(i);
            if (s.length != first.length) throw c.error("inputs of ranks " + first.length + " and " + s.length);
            for (int a = 0; a < s.length; a++) {
                if (a != axis && s[a] != first[a]) throw c.error("input shapes " + Arrays.toString(first) + " and " + Arrays.toString(s) + " differ off the axis");
            }
            shape[axis] += s[axis];
            in[i] = c.in(i);
            chunk[i] = s[axis] * inner;
        }
        final int o = c.out(0);
        final int total = Interpreter.elements(shape);
        c.output(0, type, shape);
        return new Interpreter.Kernel() {
            @Override
            public void run(Object[] v) {
                Object r = Interpreter.array(v, o, type, total);
                int pos = 0;
                for (int b = 0; b < outer; b++) {
                    for (int i = 0; i < k; i++) {
                        System.arraycopy(v[in[i]], b * chunk[i], r, pos, chunk[i]);
                        pos += chunk[i];
                    }
                }
                v[o] = r;
            }
        };
    }

    /** SPLIT (inputs: axis, value; num_splits equal parts) and SPLIT_V (inputs: value, size_splits, axis). */
    static Interpreter.Kernel split(OpContext c) throws ModelFileException {
        boolean v2 = c.op.builtinCode == BuiltinOperator.SPLIT_V;
        final int value = v2 ? 0 : 1;
        int[] axisValue = c.constantInts(v2 ? 2 : 0, "the axis");
        if (axisValue.length != 1) throw c.error("the axis must be a single value");
        final int type = c.type(value);
        int[] shape = c.shape(value);
        int axis = c.axis(axisValue[0], shape.length);
        int parts = c.op.outputs.length;
        int[] sizes = new int[parts];
        if (v2) {
            int[] given = c.constantInts(1, "size_splits");
            if (given.length != parts) throw c.error(given.length + " split sizes for " + parts + " outputs");
            int known = 0;
            int unknown = -1;
            for (int i = 0; i < parts; i++) {
                if (given[i] == -1 && unknown < 0) {
                    unknown = i;
                } else if (given[i] < 0) {
                    throw c.error("split sizes " + Arrays.toString(given));
                } else {
                    known += given[i];
                }
                sizes[i] = given[i];
            }
            if (unknown >= 0) sizes[unknown] = shape[axis] - known;
        } else {
            if (shape[axis] % parts != 0) throw c.error("axis of " + shape[axis] + " does not split into " + parts);
            Arrays.fill(sizes, shape[axis] / parts);
        }
        int sum = 0;
        for (int s : sizes) sum += s;
        if (sum != shape[axis]) throw c.error("split sizes " + Arrays.toString(sizes) + " do not add up to " + shape[axis]);
        final int outer = product(shape, 0, axis);
        final int inner = product(shape, axis + 1, shape.length);
        final int[] outs = new int[parts];
        final int[] chunk = new int[parts];
        final int[] counts = new int[parts];
        for (int i = 0; i < parts; i++) {
            int[] s = shape.clone();
            s[axis] = sizes[i];
            c.output(i, type, s);
            outs[i] = c.out(i);
            chunk[i] = sizes[i] * inner;
            counts[i] = Interpreter.elements(s);
        }
        final int src = c.in(value);
        final int row = shape[axis] * inner;
        return new Interpreter.Kernel() {
            @Override
            public void run(Object[] v) {
                Object x = v[src];
                int start = 0;
                for (int i = 0; i < outs.length; i++) {
                    Object r = Interpreter.array(v, outs[i], type, counts[i]);
                    for (int b = 0; b < outer; b++) System.arraycopy(x, b * row + start, r, b * chunk[i], chunk[i]);
                    v[outs[i]] = r;
                    start += chunk[i];
                }
            }
        };
    }

    /**
     * STRIDED_SLICE (inputs: value, begin, end, strides; StridedSliceOptions begin_mask 0,
     * end_mask 1, ellipsis_mask 2, new_axis_mask 3, shrink_axis_mask 4, offset 5), with
     * TFLite's clamping of begin and end; ellipsis and new axes are not supported.
     */
    static Interpreter.Kernel stridedSlice(OpContext c) throws ModelFileException {
        final int type = c.type(0);
        int[] shape = c.shape(0);
        int rank = shape.length;
        int[] begin = c.constantInts(1, "begin");
        int[] end = c.constantInts(2, "end");
        int[] strides = c.constantInts(3, "strides");
        if (begin.length != rank || end.length != rank || strides.length != rank) {
            throw c.error("begin/end/strides of lengths " + begin.length + "/" + end.length + "/" + strides.length + " for rank " + rank);
        }
        int beginMask = c.options.getInt(0, 0);
        int endMask = c.options.getInt(1, 0);
        if (c.options.getInt(2, 0) != 0 || c.options.getInt(3, 0) != 0) throw c.error("ellipsis and new-axis masks are not supported");
        int shrinkMask = c.options.getInt(4, 0);
        boolean offset = c.options.getBool(5, false);
        final int[] start = new int[rank];
        final int[] step = strides.clone();
        final int[] count = new int[rank];
        int[] outShape = new int[rank];
        int outRank = 0;
        for (int a = 0; a < rank; a++) {
            int d = shape[a];
            int s = strides[a];
            if (s == 0) throw c.error("stride 0 on axis " + a);
            boolean shrink = (shrinkMask >> a & 1) != 0;
            int b = begin[a];
            int e = offset ? begin[a] + end[a] : end[a];
            if (shrink) {
                b = b < 0 ? b + d : b;
                if (b < 0 || b >= d) throw c.error("shrunk index " + begin[a] + " outside axis " + a + " of " + d);
                e = b + 1;
                s = 1;
                step[a] = 1;
            } else {
                b = (beginMask >> a & 1) != 0 ? (s > 0 ? 0 : d - 1) : clamp(b < 0 ? b + d : b, s > 0 ? 0 : -1, s > 0 ? d : d - 1);
                e = (endMask >> a & 1) != 0 ? (s > 0 ? d : -1) : clamp(e < 0 ? e + d : e, s > 0 ? 0 : -1, s > 0 ? d : d - 1);
            }
            int n = s > 0 ? Math.max(0, (e - b + s - 1) / s) : Math.max(0, (b - e - s - 1) / -s);
            start[a] = b;
            count[a] = n;
            if (!shrink) outShape[outRank++] = n;
        }
        final int[] dims = shape.clone();
        final int o = c.out(0);
        final int src = c.in(0);
        final int total = product(count, 0, rank);
        c.output(0, type, Arrays.copyOf(outShape, outRank));
        // The flat input index of each output element, worked out once; runs of consecutive
        // indices are copied with one arraycopy.
        final int[] from = new int[total];
        int[] idx = new int[dims.length];
        for (int i = 0; i < total; i++) {
            int f = 0;
            for (int a = 0; a < dims.length; a++) f = f * dims[a] + start[a] + idx[a] * step[a];
            from[i] = f;
            for (int a = dims.length - 1; a >= 0; a--) {
                if (++idx[a] < count[a]) break;
                idx[a] = 0;
            }
        }
        return new Slice() {
            @Override
            int[] sources() {
                return from;
            }

            @Override
            public void run(Object[] v) {
                Object x = v[src];
                Object r = Interpreter.array(v, o, type, total);
                int i = 0;
                while (i < total) {
                    int j = i + 1;
                    while (j < total && from[j] == from[j - 1] + 1) j++;
                    System.arraycopy(x, from[i], r, i, j - i);
                    i = j;
                }
                v[o] = r;
            }
        };
    }

    /** A STRIDED_SLICE kernel; {@link #sources()}: the flat input index of each output element. */
    abstract static class Slice implements Interpreter.Kernel {
        abstract int[] sources();
    }

    private static int clamp(int x, int lo, int hi) {
        return Math.max(lo, Math.min(hi, x));
    }

    /** GATHER (inputs: params, INT32 indices; GatherOptions axis 0, batch_dims 1 (0 only)). */
    static Interpreter.Kernel gather(OpContext c) throws ModelFileException {
        final int type = c.type(0);
        c.expectType(1, TfliteModel.INT32);
        if (c.options.getInt(1, 0) != 0) throw c.error("batch_dims other than 0 are not supported");
        int[] params = c.shape(0);
        int[] indices = c.shape(1);
        int axis = c.axis(c.options.getInt(0, 0), params.length);
        int[] shape = new int[params.length - 1 + indices.length];
        int k = 0;
        for (int a = 0; a < axis; a++) shape[k++] = params[a];
        for (int d : indices) shape[k++] = d;
        for (int a = axis + 1; a < params.length; a++) shape[k++] = params[a];
        if (type == TfliteModel.INT8) {
            TfliteModel.Tensor in = c.tensor(c.in(0));
            TfliteModel.Tensor out = c.tensor(c.out(0));
            if (!Arrays.equals(in.scales, out.scales) || !Arrays.equals(in.zeroPoints, out.zeroPoints)) {
                throw c.error("an INT8 gather must keep its table's quantization (" + in.name + " -> " + out.name + ")");
            }
        }
        c.output(0, type, shape);
        final int outer = product(params, 0, axis);
        final int axisSize = params[axis];
        final int inner = product(params, axis + 1, params.length);
        final int table = c.in(0);
        final int idx = c.in(1);
        final int o = c.out(0);
        final int total = Interpreter.elements(shape);
        final String what = c.graph.where + ", operator #" + c.op.index + " GATHER";
        return new Interpreter.Kernel() {
            @Override
            public void run(Object[] v) {
                Object x = v[table];
                int[] ids = (int[]) v[idx];
                Object r = Interpreter.array(v, o, type, total);
                int pos = 0;
                for (int b = 0; b < outer; b++) {
                    for (int id : ids) {
                        if (id < 0 || id >= axisSize) {
                            throw new IllegalArgumentException(what + ": index " + id + " outside [0, " + axisSize + ")");
                        }
                        System.arraycopy(x, (b * axisSize + id) * inner, r, pos, inner);
                        pos += inner;
                    }
                }
                v[o] = r;
            }
        };
    }
}
