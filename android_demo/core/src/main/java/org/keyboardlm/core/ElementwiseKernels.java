package org.keyboardlm.core;

import java.util.Arrays;

/**
 * Element-wise operators: ADD, SUB, MUL, DIV (FLOAT32, and INT32 for ADD/SUB/MUL), GREATER
 * and SELECT with NumPy broadcasting; ABS, RELU, LOGISTIC, TANH on FLOAT32; DEQUANTIZE of
 * INT8 to FLOAT32. Float arithmetic is IEEE float32 as in TFLite's reference kernels;
 * LOGISTIC and TANH are evaluated in double and rounded once (TFLite's own approximations
 * differ from the exact value by a few float32 ulps); TANH through exp ({@link #tanh}).
 */
final class ElementwiseKernels {
    private ElementwiseKernels() {}

    /** For each output element, the flat index of the input element it reads; null when the shapes are equal. */
    static int[] broadcastMap(int[] in, int[] out) {
        if (Arrays.equals(in, out)) return null;
        int n = Interpreter.elements(out);
        int[] map = new int[n];
        int rank = out.length;
        int[] stride = new int[rank];  // input stride per output axis, 0 where broadcast
        int s = 1;
        for (int a = rank - 1, b = in.length - 1; a >= 0; a--, b--) {
            int d = b >= 0 ? in[b] : 1;
            stride[a] = d == 1 ? 0 : s;
            s *= d;
        }
        int[] idx = new int[rank];
        for (int i = 0; i < n; i++) {
            int f = 0;
            for (int a = 0; a < rank; a++) f += idx[a] * stride[a];
            map[i] = f;
            for (int a = rank - 1; a >= 0; a--) {
                if (++idx[a] < out[a]) break;
                idx[a] = 0;
            }
        }
        return map;
    }

    /** The NumPy broadcast of {@code shapes}, or an error naming them. */
    static int[] broadcastShape(OpContext c, int[]... shapes) throws ModelFileException {
        int rank = 0;
        for (int[] s : shapes) rank = Math.max(rank, s.length);
        int[] out = new int[rank];
        Arrays.fill(out, 1);
        for (int[] s : shapes) {
            for (int a = rank - 1, b = s.length - 1; b >= 0; a--, b--) {
                if (s[b] == out[a] || s[b] == 1) continue;
                if (out[a] != 1) throw c.error("shapes " + Arrays.deepToString(shapes) + " do not broadcast");
                out[a] = s[b];
            }
        }
        return out;
    }

    private static int at(int[] map, int i) {
        return map == null ? i : map[i];
    }

    /** ADD, SUB, MUL, DIV: options fused_activation_function 0 (AddOptions, SubOptions, MulOptions, DivOptions). */
    static Interpreter.Kernel arithmetic(OpContext c) throws ModelFileException {
        final int code = c.op.builtinCode;
        final int type = c.type(0);
        c.expectType(1, type);
        if (type != TfliteModel.FLOAT32 && !(type == TfliteModel.INT32 && code != BuiltinOperator.DIV)) {
            throw c.error("type " + TfliteModel.typeName(type) + " is not supported");
        }
        final int act = c.activation(0);
        if (type == TfliteModel.INT32 && act != 0) throw c.error("a fused activation on INT32 is not supported");
        final int a = c.in(0);
        final int b = c.in(1);
        final int o = c.out(0);
        int[] shape = broadcastShape(c, c.shape(0), c.shape(1));
        final int[] ma = broadcastMap(c.shape(0), shape);
        final int[] mb = broadcastMap(c.shape(1), shape);
        final int n = Interpreter.elements(shape);
        c.output(0, type, shape);
        if (type == TfliteModel.INT32) {
            return new Interpreter.Kernel() {
                @Override
                public void run(Object[] v) {
                    int[] x = (int[]) v[a];
                    int[] y = (int[]) v[b];
                    int[] r = Interpreter.ints(v, o, n);
                    for (int i = 0; i < n; i++) {
                        int p = x[at(ma, i)];
                        int q = y[at(mb, i)];
                        r[i] = code == BuiltinOperator.ADD ? p + q : code == BuiltinOperator.SUB ? p - q : p * q;
                    }
                    v[o] = r;
                }
            };
        }
        return new Interpreter.Kernel() {
            @Override
            public void run(Object[] v) {
                float[] x = (float[]) v[a];
                float[] y = (float[]) v[b];
                float[] r = Interpreter.floats(v, o, n);
                for (int i = 0; i < n; i++) {
                    float p = x[at(ma, i)];
                    float q = y[at(mb, i)];
                    float z;
                    switch (code) {
                        case BuiltinOperator.ADD:
                            z = p + q;
                            break;
                        case BuiltinOperator.SUB:
                            z = p - q;
                            break;
                        case BuiltinOperator.MUL:
                            z = p * q;
                            break;
                        default:
                            z = p / q;
                    }
                    r[i] = OpContext.activate(act, z);
                }
                v[o] = r;
            }
        };
    }

    /** GREATER: x > y, broadcast, to BOOL. */
    static Interpreter.Kernel greater(OpContext c) throws ModelFileException {
        final int type = c.type(0);
        c.expectType(1, type);
        if (type != TfliteModel.FLOAT32 && type != TfliteModel.INT32) throw c.error("type " + TfliteModel.typeName(type) + " is not supported");
        final int a = c.in(0);
        final int b = c.in(1);
        final int o = c.out(0);
        int[] shape = broadcastShape(c, c.shape(0), c.shape(1));
        final int[] ma = broadcastMap(c.shape(0), shape);
        final int[] mb = broadcastMap(c.shape(1), shape);
        final int n = Interpreter.elements(shape);
        c.output(0, TfliteModel.BOOL, shape);
        return new Interpreter.Kernel() {
            @Override
            public void run(Object[] v) {
                boolean[] r = Interpreter.bools(v, o, n);
                if (type == TfliteModel.FLOAT32) {
                    float[] x = (float[]) v[a];
                    float[] y = (float[]) v[b];
                    for (int i = 0; i < n; i++) r[i] = x[at(ma, i)] > y[at(mb, i)];
                } else {
                    int[] x = (int[]) v[a];
                    int[] y = (int[]) v[b];
                    for (int i = 0; i < n; i++) r[i] = x[at(ma, i)] > y[at(mb, i)];
                }
                v[o] = r;
            }
        };
    }

    /** SELECT (and the broadcasting SELECT_V2 it is written as): cond ? x : y. */
    static Interpreter.Kernel select(OpContext c) throws ModelFileException {
        c.expectType(0, TfliteModel.BOOL);
        final int type = c.type(1);
        c.expectType(2, type);
        if (type != TfliteModel.FLOAT32 && type != TfliteModel.INT32) throw c.error("type " + TfliteModel.typeName(type) + " is not supported");
        final int cond = c.in(0);
        final int a = c.in(1);
        final int b = c.in(2);
        final int o = c.out(0);
        int[] shape = broadcastShape(c, c.shape(0), c.shape(1), c.shape(2));
        final int[] mc = broadcastMap(c.shape(0), shape);
        final int[] ma = broadcastMap(c.shape(1), shape);
        final int[] mb = broadcastMap(c.shape(2), shape);
        final int n = Interpreter.elements(shape);
        c.output(0, type, shape);
        return new Interpreter.Kernel() {
            @Override
            public void run(Object[] v) {
                boolean[] k = (boolean[]) v[cond];
                if (type == TfliteModel.FLOAT32) {
                    float[] x = (float[]) v[a];
                    float[] y = (float[]) v[b];
                    float[] r = Interpreter.floats(v, o, n);
                    for (int i = 0; i < n; i++) r[i] = k[at(mc, i)] ? x[at(ma, i)] : y[at(mb, i)];
                    v[o] = r;
                } else {
                    int[] x = (int[]) v[a];
                    int[] y = (int[]) v[b];
                    int[] r = Interpreter.ints(v, o, n);
                    for (int i = 0; i < n; i++) r[i] = k[at(mc, i)] ? x[at(ma, i)] : y[at(mb, i)];
                    v[o] = r;
                }
            }
        };
    }

    /** ABS, RELU, LOGISTIC, TANH on FLOAT32. */
    static Interpreter.Kernel unary(OpContext c) throws ModelFileException {
        c.expectType(0, TfliteModel.FLOAT32);
        final int code = c.op.builtinCode;
        final int a = c.in(0);
        final int o = c.out(0);
        c.output(0, TfliteModel.FLOAT32, c.shape(0));
        return new Interpreter.Kernel() {
            @Override
            public void run(Object[] v) {
                float[] x = (float[]) v[a];
                float[] r = Interpreter.floats(v, o, x.length);
                for (int i = 0; i < x.length; i++) {
                    float f = x[i];
                    switch (code) {
                        case BuiltinOperator.ABS:
                            r[i] = Math.abs(f);
                            break;
                        case BuiltinOperator.RELU:
                            r[i] = Math.max(0f, f);
                            break;
                        case BuiltinOperator.LOGISTIC:
                            r[i] = (float) (1.0 / (1.0 + Math.exp(-(double) f)));
                            break;
                        default:
                            r[i] = tanh(f);
                    }
                }
                v[o] = r;
            }
        };
    }

    /**
     * tanh of a float32, correctly rounded but for rare 1-ulp cases, through one double exp
     * (cheaper than Math.tanh on common JVMs): {@code (e - 1) / (e + 1)} with e = exp(2|x|),
     * whose relative error (under 1e-11 for |x| >= 1e-4) is far below float32's. Below 1e-4
     * tanh(x) rounds to x itself (it differs from x by under x^3 / 3), above 10 to +-1.
     */
    static float tanh(float f) {
        double a = Math.abs((double) f);
        if (!(a >= 1e-4)) return f;  // also NaN
        if (a > 10.0) return f > 0 ? 1f : -1f;
        double e = Math.exp(2.0 * a);
        float t = (float) ((e - 1.0) / (e + 1.0));
        return f > 0 ? t : -t;
    }

    /**
     * DEQUANTIZE INT8 -> FLOAT32: {@code float(scale * (q - zero_point))} with the scale
     * widened to double (TFLite's reference Dequantize), per tensor or per channel along
     * quantized_dimension.
     */
    static Interpreter.Kernel dequantize(OpContext c) throws ModelFileException {
        c.expectType(0, TfliteModel.INT8);
        TfliteModel.Tensor t = c.tensor(c.in(0));
        final int[] shape = c.shape(0);
        if (t.customQuantization) throw c.error("input " + t.name + " uses custom quantization");
        if (t.scales.length == 0) throw c.error("input " + t.name + " has no quantization scale");
        final double[] scales = new double[t.scales.length];
        final long[] zps = new long[t.scales.length];
        for (int i = 0; i < scales.length; i++) {
            scales[i] = t.scales[i];
            zps[i] = t.zeroPoints.length == 0 ? 0 : t.zeroPoints[t.zeroPoints.length == 1 ? 0 : i];
        }
        int inner = 1;
        int channels = 1;
        if (scales.length > 1) {
            int axis = c.axis(t.quantizedDimension, shape.length);
            channels = shape[axis];
            if (channels != scales.length) throw c.error(scales.length + " scales for " + channels + " channels");
            for (int a = axis + 1; a < shape.length; a++) inner *= shape[a];
        }
        final int innerSize = inner;
        final int channelCount = channels;
        final int a = c.in(0);
        final int o = c.out(0);
        c.output(0, TfliteModel.FLOAT32, shape);
        return new Interpreter.Kernel() {
            @Override
            public void run(Object[] v) {
                byte[] q = (byte[]) v[a];
                float[] r = Interpreter.floats(v, o, q.length);
                for (int i = 0; i < q.length; i++) {
                    int ch = scales.length == 1 ? 0 : (i / innerSize) % channelCount;
                    r[i] = (float) (scales[ch] * (q[i] - zps[ch]));
                }
                v[o] = r;
            }
        };
    }
}
