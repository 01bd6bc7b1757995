package org.keyboardlm.core;

import java.util.Arrays;

/**
 * One operator being prepared: its inputs' shapes, types and (for constants) values, its
 * options, and where to record the outputs' shapes. Every refusal names the file, the
 * subgraph, the operator's position and its builtin name.
 */
final class OpContext {
    final Interpreter graph;
    final TfliteModel.Operator op;
    final TfliteModel.Options options;

    OpContext(Interpreter graph, TfliteModel.Operator op) {
        this.graph = graph;
        this.op = op;
        this.options = op.options;
    }

    String name() {
        return BuiltinOperator.name(op.builtinCode);
    }

    ModelFileException error(String problem) {
        return new ModelFileException(graph.where + ", operator #" + op.index + " " + name() + ": " + problem);
    }

    int inputs() {
        return op.inputs.length;
    }

    /** Tensor index of input {@code i}; -1 for an omitted optional input. */
    int in(int i) throws ModelFileException {
        if (i >= op.inputs.length) throw error("has " + op.inputs.length + " inputs, needs at least " + (i + 1));
        return op.inputs[i];
    }

    int out(int i) throws ModelFileException {
        if (i >= op.outputs.length) throw error("has " + op.outputs.length + " outputs, needs at least " + (i + 1));
        return op.outputs[i];
    }

    int[] shape(int input) throws ModelFileException {
        return graph.shapes[in(input)];
    }

    int type(int input) throws ModelFileException {
        return graph.types[in(input)];
    }

    TfliteModel.Tensor tensor(int index) {
        return graph.subgraph.tensors.get(index);
    }

    /** The value of constant input {@code i}, or null when it is computed at run time. */
    Object constant(int input) throws ModelFileException {
        int t = in(input);
        return t < 0 ? null : graph.constant(t);
    }

    /** An INT32 input that must be constant (an axis, a split size, k). */
    int[] constantInts(int input, String what) throws ModelFileException {
        Object v = constant(input);
        if (!(v instanceof int[])) throw error(what + " (input " + input + ") must be a constant INT32 tensor");
        return (int[]) v;
    }

    /** A scratch buffer like {@code template} in every value array of the graph; returns its slot there. */
    int scratch(Object template) {
        return graph.addScratch(template);
    }

    void expectType(int input, int type) throws ModelFileException {
        if (type(input) != type) {
            throw error("input " + input + " has type " + TfliteModel.typeName(type(input)) + ", expected "
                    + TfliteModel.typeName(type));
        }
    }

    /** Records output {@code k}'s shape; its declared type must be {@code type} and a declared shape must agree. */
    void output(int k, int type, int[] shape) throws ModelFileException {
        int o = out(k);
        TfliteModel.Tensor t = tensor(o);
        if (t.type != type) {
            throw error("output " + k + " (" + t.name + ") has type " + TfliteModel.typeName(t.type) + ", the operator yields "
                    + TfliteModel.typeName(type));
        }
        if (!Arrays.equals(t.shape, shape)) {
            throw error("output " + k + " (" + t.name + ") is declared " + Arrays.toString(t.shape) + ", the operator yields "
                    + Arrays.toString(shape));
        }
        graph.shapes[o] = shape;
    }

    /** Fused activation of ADD/SUB/MUL/DIV/FULLY_CONNECTED/CONCATENATION: NONE 0, RELU 1, RELU_N1_TO_1 2, RELU6 3. */
    int activation(int fieldId) throws ModelFileException {
        int a = options.getByte(fieldId, 0);
        if (a < 0 || a > 3) throw error("fused activation " + a + " is not supported (NONE, RELU, RELU_N1_TO_1, RELU6 are)");
        return a;
    }

    static float activate(int activation, float x) {
        switch (activation) {
            case 1:
                return Math.max(0f, x);
            case 2:
                return Math.max(-1f, Math.min(1f, x));
            case 3:
                return Math.max(0f, Math.min(6f, x));
            default:
                return x;
        }
    }

    /** Axis {@code axis} of a rank-{@code rank} tensor, negatives counted from the end. */
    int axis(int axis, int rank) throws ModelFileException {
        int a = axis < 0 ? axis + rank : axis;
        if (a < 0 || a >= rank) throw error("axis " + axis + " is outside a rank-" + rank + " tensor");
        return a;
    }
}
