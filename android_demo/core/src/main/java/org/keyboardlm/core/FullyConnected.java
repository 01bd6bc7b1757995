package org.keyboardlm.core;

import java.util.Arrays;

/**
 * FULLY_CONNECTED: {@code out[b][u] = act(bias[u] + sum_d in[b][d] * w[u][d])}, weights
 * [units, depth]. Options (FullyConnectedOptions): fused_activation_function 0,
 * weights_format 1 (DEFAULT only), keep_num_dims 2, asymmetric_quantize_inputs 3.
 *
 * <p>Float weights: float32 products summed in float32 in row order, then added to the
 * bias (TFLite's portable kernel; optimized kernels sum in another order, a difference
 * of float32 rounding only).
 *
 * <p>Int8 weights with float input and output ("hybrid", what dynamic-range export makes):
 * computed as TFLite's hybrid kernel computes it (fully_connected.cc EvalHybridDense with
 * tensor_utils BatchQuantizeFloats and MatrixBatchVectorMultiplyAccumulate), re-implemented:
 * <ol>
 * <li>each input row (batch entry) is quantized to int8 at run time. Asymmetric
 *     ({@code asymmetric_quantize_inputs}, what TF 2.14's converter sets): rmin = min(0, min x),
 *     rmax = max(0, max x) in double; scale = (rmax - rmin) / 255; the zero point comes from
 *     whichever end has the smaller error, nudged into [-128, 127] and rounded half away
 *     from zero; the float32 scale's inverse is taken in double and rounded to float32;
 *     q = clamp(round(zp + x * inverse), -128, 127) in float32 arithmetic. Symmetric:
 *     scale = max|x| / 127, q = clamp(round(x * (127 / max|x|)), -127, 127). An all-zero
 *     row (rmin == rmax) gets q = 0, scale 1, zp 0; an all-zero input skips the product;
 * <li>per output unit, the int32 dot product of the int8 weights and q, minus zp times the
 *     unit's weight sum (asymmetric only);
 * <li>out = bias + float(dot) * (input scale * weight scale), both scales float32; per-channel
 *     weight scales (one per unit) multiply the input scale unit by unit.
 * </ol>
 * keyboard_lm/models/quantization.py (fake_quant_activations) mirrors step 1 at training time.
 *
 * <p>Speed (one row with constant int8 weights, what the exporter makes): the weights are
 * packed at load, three units to a long ({@link #pack}), so one 64-bit multiply-add forms
 * three of step 2's int32 products at once; the dot products are exact, as int32 ones.
 * Not on Android ({@link Interpreter#packInt8}): there the plain int8 loop is kept, which
 * ART's loop vectorizer can turn into NEON dot products (not measured here). The
 * input's int8 values, the dot products and the quantization's scale live in scratch buffers
 * of the value array, so a run allocates nothing. The logits' LOG_SOFTMAX, and a TOPK_V2
 * over them, can run inside this kernel ({@link #fuseLogSoftmax}).
 */
final class FullyConnected implements Interpreter.Kernel {
    private final int input;
    private final int filter;
    private final int bias;
    private final int output;
    private final int batch;
    private final int depth;
    private final int units;
    private final int activation;
    private final boolean hybrid;
    private final boolean asymmetric;
    /** Hybrid only: per-tensor weight scale, or per-unit scales (null when per tensor). */
    private final float weightScale;
    private final float[] unitScales;
    /** Hybrid, asymmetric, constant weights: the weight sum of each unit, computed once. */
    private final int[] rowSums;
    /** Hybrid, constant weights, one row: the weights packed by {@link #pack}; null otherwise. */
    private final long[] packed;
    /** Hybrid with constant weights and one row: the run's buffers are scratch buffers of the value array. */
    private final boolean oneRow;
    /** Value-array slots of the run's scratch buffers (-1: unused). */
    private int qSlot = -1;
    private int qiSlot = -1;
    private int scaleSlot = -1;
    private int dotSlot = -1;
    /** The fused LOG_SOFTMAX's output tensor, and the fused TOPK_V2's (see {@link #fuseLogSoftmax}); -1: none. */
    private int logProbs = -1;
    private int topValues = -1;
    private int topIds = -1;
    private int topK;
    private int topFrom;
    private int topTo;

    FullyConnected(OpContext c) throws ModelFileException {
        c.expectType(0, TfliteModel.FLOAT32);
        if (c.options.getByte(1, 0) != 0) throw c.error("shuffled weights format is not supported");
        activation = c.activation(0);
        boolean keepNumDims = c.options.getBool(2, false);
        asymmetric = c.options.getBool(3, false);
        input = c.in(0);
        filter = c.in(1);
        bias = c.inputs() > 2 ? c.in(2) : -1;
        output = c.out(0);
        int[] inShape = c.shape(0);
        int[] wShape = c.shape(1);
        if (wShape.length != 2) throw c.error("weights " + Arrays.toString(wShape) + " are not a matrix");
        units = wShape[0];
        depth = wShape[1];
        int total = Interpreter.elements(inShape);
        if (depth == 0 || total % depth != 0) {
            throw c.error("input " + Arrays.toString(inShape) + " does not split into rows of " + depth);
        }
        batch = total / depth;
        if (bias >= 0) {
            c.expectType(2, TfliteModel.FLOAT32);
            if (Interpreter.elements(c.shape(2)) != units) throw c.error("bias " + Arrays.toString(c.shape(2)) + " for " + units + " units");
        }
        int wType = c.type(1);
        TfliteModel.Tensor w = c.tensor(filter);
        if (wType == TfliteModel.FLOAT32) {
            hybrid = false;
            weightScale = 0f;
            unitScales = null;
            rowSums = null;
            packed = null;
            oneRow = false;
        } else if (wType == TfliteModel.INT8) {
            hybrid = true;
            if (w.scales.length == 0) throw c.error("int8 weights " + w.name + " have no quantization scale");
            for (long zp : w.zeroPoints) {
                if (zp != 0) throw c.error("int8 weights " + w.name + " have zero point " + zp + "; hybrid kernels need 0");
            }
            if (w.scales.length == 1) {
                weightScale = w.scales[0];
                unitScales = null;
            } else if (w.scales.length == units && w.quantizedDimension == 0) {
                weightScale = 0f;
                unitScales = w.scales;
            } else {
                throw c.error("int8 weights " + w.name + " have " + w.scales.length + " scales along dimension "
                        + w.quantizedDimension + " for " + units + " units");
            }
            Object constant = c.constant(1);
            rowSums = asymmetric && constant != null ? rowSums((byte[]) constant, units, depth) : null;
            oneRow = constant != null && batch == 1;
            if (oneRow) {
                packed = c.graph.packInt8 ? sharedPack(c, (byte[]) constant) : null;
                qSlot = c.scratch(new byte[depth]);
                qiSlot = c.scratch(new int[depth]);
                scaleSlot = c.scratch(new float[2]);
                dotSlot = c.scratch(new int[units]);
            } else {
                packed = null;
            }
        } else {
            throw c.error("weights of type " + TfliteModel.typeName(wType) + " with FLOAT32 input are not supported");
        }
        int[] outShape;
        if (keepNumDims) {
            outShape = inShape.clone();
            outShape[outShape.length - 1] = units;
        } else {
            outShape = new int[] {batch, units};
        }
        c.output(0, TfliteModel.FLOAT32, outShape);
    }

    /**
     * Fuses the LOG_SOFTMAX that reads this kernel's output (and nothing else does): the
     * logits' maximum and normaliser are accumulated as each logit is computed, then one pass
     * writes {@code (x - max) - log(sum)} into tensor {@code logProbs}, the formula of
     * {@link ReduceKernels#logSoftmax}. With {@code topValues >= 0} (a TOPK_V2 over the
     * log-probs' columns {@code [from, to)}, a contiguous STRIDED_SLICE of them), that pass
     * keeps only the top {@code k} (value descending, column ascending, as TOPK_V2) and writes
     * them to {@code topValues}/{@code topIds} (ids counted from {@code from}); the log-prob
     * vector is then never written.
     */
    void fuseLogSoftmax(int logProbs, int topValues, int topIds, int k, int from, int to) {
        this.logProbs = logProbs;
        this.topValues = topValues;
        this.topIds = topIds;
        this.topK = k;
        this.topFrom = from;
        this.topTo = to;
    }

    /** True when {@link #fuseLogSoftmax} may be used: one row, no activation. */
    boolean fusable() {
        return batch == 1 && activation == 0;
    }

    /** The fused LOG_SOFTMAX's output tensor, -1 for none. */
    int logProbsTensor() {
        return logProbs;
    }

    @Override
    public void run(Object[] v) {
        float[] x = (float[]) v[input];
        float[] out = Interpreter.floats(v, output, batch * units);
        float[] b = bias >= 0 ? (float[]) v[bias] : null;
        for (int r = 0; r < batch; r++) {
            if (b != null) System.arraycopy(b, 0, out, r * units, units);
            else Arrays.fill(out, r * units, (r + 1) * units, 0f);
        }
        if (hybrid) {
            if (oneRow) hybridOneRow(x, (byte[]) v[filter], v, out);
            else hybrid(x, (byte[]) v[filter], out);
        } else {
            float[] w = (float[]) v[filter];
            for (int r = 0; r < batch; r++) {
                for (int u = 0; u < units; u++) {
                    float dot = 0f;
                    int wi = u * depth;
                    int xi = r * depth;
                    for (int d = 0; d < depth; d++) dot += w[wi + d] * x[xi + d];
                    out[r * units + u] += dot;
                }
            }
        }
        if (activation != 0) {
            for (int i = 0; i < out.length; i++) out[i] = OpContext.activate(activation, out[i]);
        }
        v[output] = out;
        if (logProbs >= 0) logSoftmax(out, v);
    }

    /** Lanes of {@link #packed}: three 21-bit signed lanes per long, at bits 0, 21 and 42. */
    static final int LANES = 3;
    /**
     * Products summed per lane before the lanes are split: |w * q| <= 128 * 128 = 2^14, and
     * 63 * 2^14 < 2^20, so a lane's sum never leaves [-2^20, 2^20).
     */
    static final int BLOCK = 63;

    /**
     * Int8 weights packed three units to a long: {@code packed[(u / 3) * depth + d]} is
     * {@code w[u][d] + w[u+1][d] * 2^21 + w[u+2][d] * 2^42} (an exact integer in a long). One
     * long multiply by q[d] then forms three products, and a sum of such longs is the three
     * dot products' sum, lane by lane, as long as no lane's sum leaves 21 signed bits (see
     * {@link #BLOCK}): the int32 dot products TFLite's kernel computes, exactly.
     */
    static long[] pack(byte[] w, int units, int depth) {
        int groups = (units + LANES - 1) / LANES;
        long[] p = new long[groups * depth];
        for (int u = 0; u < units; u++) {
            int shift = 21 * (u % LANES);
            int g = (u / LANES) * depth;
            for (int d = 0; d < depth; d++) p[g + d] += ((long) w[u * depth + d]) << shift;
        }
        return p;
    }

    /** {@link #pack} of the weights, made once per model for all its subgraphs. */
    private long[] sharedPack(OpContext c, byte[] w) {
        String key = "packed int8 " + c.tensor(filter).buffer + " " + units + " " + depth;
        Object p = c.graph.model.shared(key);
        return (long[]) (p != null ? p : c.graph.model.share(key, pack(w, units, depth)));
    }

    /**
     * The hybrid kernel for one row and constant weights, with the run's scratch buffers from
     * {@code v}: over {@link #packed} weights where they are packed, else over the int8 weights
     * {@code w} with a plain int8 loop.
     */
    private void hybridOneRow(float[] x, byte[] w, Object[] v, float[] out) {
        boolean zero = true;
        for (int d = 0; d < depth; d++) {
            if (x[d] != 0f) {
                zero = false;
                break;
            }
        }
        if (zero) return;  // out = bias, as TFLite skips the product for an all-zero input
        byte[] q = (byte[]) v[qSlot];
        int[] qi = (int[]) v[qiSlot];
        float[] scaleAndOffset = (float[]) v[scaleSlot];
        int zp = 0;
        float inScale;
        if (asymmetric) {
            zp = quantizeAsymmetric(x, 0, depth, q, scaleAndOffset);
            inScale = scaleAndOffset[0];
        } else {
            inScale = quantizeSymmetric(x, 0, depth, q);
        }
        if (unitScales == null) inScale *= weightScale;
        int[] dots = (int[]) v[dotSlot];
        if (packed != null) {
            for (int d = 0; d < depth; d++) qi[d] = q[d];
            dotPacked(packed, units, depth, qi, dots);
        } else {
            for (int u = 0; u < units; u++) {
                int dot = 0;
                int wi = u * depth;
                for (int d = 0; d < depth; d++) dot += w[wi + d] * q[d];
                dots[u] = dot;
            }
        }
        for (int u = 0; u < units; u++) {
            int dot = dots[u];
            if (asymmetric) dot -= rowSums[u] * zp;
            float scale = unitScales == null ? inScale : inScale * unitScales[u];
            out[u] += dot * scale;
        }
    }

    /** {@code dots[u] = sum_d w[u][d] * q[d]} (int32) over weights packed by {@link #pack}, q in [-128, 127]. */
    static void dotPacked(long[] p, int units, int depth, int[] q, int[] dots) {
        for (int u = 0; u < units; u += LANES) {
            int g = (u / LANES) * depth;
            int s0 = 0;
            int s1 = 0;
            int s2 = 0;
            for (int b0 = 0; b0 < depth; b0 += BLOCK) {
                int e = Math.min(depth, b0 + BLOCK);
                long s = 0;
                for (int d = b0; d < e; d++) s += p[g + d] * q[d];
                long l0 = (s << 43) >> 43;  // lane 0, sign-extended
                long rest = (s - l0) >> 21;  // lanes 1 and 2, lane 0's borrow undone
                long l1 = (rest << 43) >> 43;
                s0 += (int) l0;
                s1 += (int) l1;
                s2 += (int) ((rest - l1) >> 21);
            }
            dots[u] = s0;
            if (u + 1 < units) dots[u + 1] = s1;
            if (u + 2 < units) dots[u + 2] = s2;
        }
    }

    /**
     * The fused LOG_SOFTMAX (and TOPK_V2) of {@link #fuseLogSoftmax} over the logits {@code x},
     * with the arithmetic of {@link ReduceKernels#logSoftmax}, so the log-probs are the same
     * float32 values: the maximum, the normaliser {@code log(sum exp(x - max))} (each exp
     * rounded to float32, summed in double), then {@code (x - max) - normaliser}.
     */
    private void logSoftmax(float[] x, Object[] v) {
        float max = x[0];
        for (int i = 1; i < units; i++) max = Math.max(max, x[i]);
        double sum = 0;
        for (int i = 0; i < units; i++) sum += (float) Math.exp(x[i] - max);
        float logSum = (float) Math.log(sum);
        if (topValues < 0) {
            float[] r = Interpreter.floats(v, logProbs, units);
            for (int i = 0; i < units; i++) r[i] = (x[i] - max) - logSum;
            v[logProbs] = r;
            return;
        }
        float[] values = Interpreter.floats(v, topValues, topK);
        int[] ids = Interpreter.ints(v, topIds, topK);
        int filled = 0;
        for (int i = topFrom; i < topTo; i++) {
            float f = (x[i] - max) - logSum;
            if (filled == topK && !(f > values[topK - 1])) continue;  // ties keep the earlier column
            int p = filled == topK ? topK - 1 : filled++;
            while (p > 0 && f > values[p - 1]) {
                values[p] = values[p - 1];
                ids[p] = ids[p - 1];
                p--;
            }
            values[p] = f;
            ids[p] = i - topFrom;
        }
        v[topValues] = values;
        v[topIds] = ids;
    }

    private void hybrid(float[] x, byte[] w, float[] out) {
        boolean zero = true;
        for (float f : x) {
            if (f != 0f) {
                zero = false;
                break;
            }
        }
        if (zero) return;  // out = bias, as TFLite skips the product for an all-zero input
        int[] sums = asymmetric ? (rowSums != null ? rowSums : rowSums(w, units, depth)) : null;
        byte[] q = new byte[depth];
        float[] scaleAndOffset = new float[2];
        for (int r = 0; r < batch; r++) {
            int zp = 0;
            float inScale;
            if (asymmetric) {
                zp = quantizeAsymmetric(x, r * depth, depth, q, scaleAndOffset);
                inScale = scaleAndOffset[0];
            } else {
                inScale = quantizeSymmetric(x, r * depth, depth, q);
            }
            if (unitScales == null) inScale *= weightScale;
            for (int u = 0; u < units; u++) {
                int dot = 0;
                int wi = u * depth;
                for (int d = 0; d < depth; d++) dot += w[wi + d] * q[d];
                if (asymmetric) dot -= sums[u] * zp;
                float scale = unitScales == null ? inScale : inScale * unitScales[u];
                out[r * units + u] += dot * scale;
            }
        }
    }

    static int[] rowSums(byte[] w, int units, int depth) {
        int[] sums = new int[units];
        for (int u = 0; u < units; u++) {
            int s = 0;
            for (int d = 0; d < depth; d++) s += w[u * depth + d];
            sums[u] = s;
        }
        return sums;
    }

    /**
     * TFLite's asymmetric int8 quantization of {@code x[off, off + n)} into {@code q}
     * (tensor_utils AsymmetricQuantizeFloats); returns the zero point, stores the float32
     * scale in {@code scaleOut[0]}.
     */
    static int quantizeAsymmetric(float[] x, int off, int n, byte[] q, float[] scaleOut) {
        float lo = x[off];
        float hi = x[off];
        for (int i = off + 1; i < off + n; i++) {
            lo = Math.min(lo, x[i]);
            hi = Math.max(hi, x[i]);
        }
        double rmin = Math.min(0.0, lo);
        double rmax = Math.max(0.0, hi);
        if (rmin == rmax) {
            Arrays.fill(q, 0, n, (byte) 0);
            scaleOut[0] = 1f;
            return 0;
        }
        final double qmin = -128.0;
        final double qmax = 127.0;
        double scale = (rmax - rmin) / (qmax - qmin);
        double zpFromMin = qmin - rmin / scale;
        double zpFromMax = qmax - rmax / scale;
        double errorFromMin = Math.abs(qmin) + Math.abs(rmin / scale);
        double errorFromMax = Math.abs(qmax) + Math.abs(rmax / scale);
        double zpDouble = errorFromMin < errorFromMax ? zpFromMin : zpFromMax;
        int zp;
        if (zpDouble <= qmin) {
            zp = -128;
        } else if (zpDouble >= qmax) {
            zp = 127;
        } else {
            zp = (int) roundHalfAway(zpDouble);
        }
        float scale32 = (float) scale;
        float inverse = (float) (1.0 / scale32);
        float zpF = zp;
        for (int i = 0; i < n; i++) {
            float y = zpF + x[off + i] * inverse;  // float32 arithmetic, as in C++
            int v = (int) roundHalfAway(y);
            q[i] = (byte) Math.max(-128, Math.min(127, v));
        }
        scaleOut[0] = scale32;
        return zp;
    }

    /** TFLite's symmetric int8 quantization (tensor_utils SymmetricQuantizeFloats); returns the scale. */
    static float quantizeSymmetric(float[] x, int off, int n, byte[] q) {
        float lo = x[off];
        float hi = x[off];
        for (int i = off + 1; i < off + n; i++) {
            lo = Math.min(lo, x[i]);
            hi = Math.max(hi, x[i]);
        }
        float range = Math.max(Math.abs(lo), Math.abs(hi));
        if (range == 0f) {
            Arrays.fill(q, 0, n, (byte) 0);
            return 1f;
        }
        float inverse = 127f / range;
        for (int i = 0; i < n; i++) {
            int v = (int) roundHalfAway(x[off + i] * inverse);
            q[i] = (byte) Math.max(-127, Math.min(127, v));
        }
        return range / 127f;
    }

    /** C's round(): to the nearest integer, halves away from zero (TfLiteRound). */
    static double roundHalfAway(double d) {
        double r = Math.rint(d);
        if (Math.abs(d - r) == 0.5) r = d + Math.copySign(0.5, d);
        return r;
    }
}
