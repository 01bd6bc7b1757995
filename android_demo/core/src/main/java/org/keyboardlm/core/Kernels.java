package org.keyboardlm.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The operators the Java step engine runs: exactly those keyboard_lm's exporter emits for
 * the four cell types in both int8 modes (listed from the exported files with TFLite's
 * analyzer). Any other operator is refused when the model is loaded, by builtin name.
 */
final class Kernels {
    private static final int[] SUPPORTED = {
        BuiltinOperator.ABS, BuiltinOperator.ADD, BuiltinOperator.CONCATENATION, BuiltinOperator.DEQUANTIZE,
        BuiltinOperator.DIV, BuiltinOperator.FULLY_CONNECTED, BuiltinOperator.GATHER, BuiltinOperator.GREATER,
        BuiltinOperator.LOG_SOFTMAX, BuiltinOperator.LOGISTIC, BuiltinOperator.MUL, BuiltinOperator.REDUCE_MAX,
        BuiltinOperator.RELU, BuiltinOperator.SELECT, BuiltinOperator.SPLIT, BuiltinOperator.SPLIT_V,
        BuiltinOperator.STRIDED_SLICE, BuiltinOperator.SUB, BuiltinOperator.TANH, BuiltinOperator.TOPK_V2,
    };

    private Kernels() {}

    /** Builtin names of the supported operators, sorted. */
    static List<String> supportedNames() {
        List<String> names = new ArrayList<String>();
        for (int code : SUPPORTED) names.add(BuiltinOperator.name(code));
        Collections.sort(names);
        return names;
    }

    static Interpreter.Kernel create(OpContext c) throws ModelFileException {
        switch (c.op.builtinCode) {
            case BuiltinOperator.FULLY_CONNECTED:
                return new FullyConnected(c);
            case BuiltinOperator.ADD:
            case BuiltinOperator.SUB:
            case BuiltinOperator.MUL:
            case BuiltinOperator.DIV:
                return ElementwiseKernels.arithmetic(c);
            case BuiltinOperator.GREATER:
                return ElementwiseKernels.greater(c);
            case BuiltinOperator.SELECT:
                return ElementwiseKernels.select(c);
            case BuiltinOperator.ABS:
            case BuiltinOperator.RELU:
            case BuiltinOperator.LOGISTIC:
            case BuiltinOperator.TANH:
                return ElementwiseKernels.unary(c);
            case BuiltinOperator.DEQUANTIZE:
                return ElementwiseKernels.dequantize(c);
            case BuiltinOperator.CONCATENATION:
                return ShapeKernels.concatenation(c);
            case BuiltinOperator.SPLIT:
            case BuiltinOperator.SPLIT_V:
                return ShapeKernels.split(c);
            case BuiltinOperator.STRIDED_SLICE:
                return ShapeKernels.stridedSlice(c);
            case BuiltinOperator.GATHER:
                return ShapeKernels.gather(c);
            case BuiltinOperator.REDUCE_MAX:
                return ReduceKernels.reduceMax(c);
            case BuiltinOperator.LOG_SOFTMAX:
                return ReduceKernels.logSoftmax(c);
            case BuiltinOperator.TOPK_V2:
                return ReduceKernels.topK(c);
            default:
                String what = c.op.builtinCode == BuiltinOperator.CUSTOM
                        ? "custom operator " + c.op.customCode
                        : "operator " + BuiltinOperator.name(c.op.builtinCode) + " (builtin code " + c.op.builtinCode + ")";
                throw new ModelFileException(c.graph.where + ", operator #" + c.op.index + ": " + what
                        + " is not run by the Java step engine, which runs " + joined(supportedNames()));
        }
    }

    /** ", "-joined names (String.join is not in Android API 23, which the APK is built against). */
    private static String joined(Iterable<String> names) {
        StringBuilder b = new StringBuilder();
        for (String n : names) {
            if (b.length() > 0) b.append(", ");
            b.append(n);
        }
        return b.toString();
    }
}
