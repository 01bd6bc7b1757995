package org.keyboardlm.core;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The parts of a .tflite flatbuffer (tensorflow/lite/schema/schema.fbs) that a keyboard_lm
 * model uses, read by hand with {@link FlatBufferReader}: Model, SubGraph, Tensor (shape,
 * type, buffer, quantization), Buffer, Operator, OperatorCode and SignatureDef. Builtin
 * options stay in the file and are read field by field through {@link Options}.
 *
 * Field ids below are the declaration order in schema.fbs (a union takes two ids: its
 * type, then its value).
 *
 * <p>The file's bytes are read in place ({@link FlatBufferReader} over a {@link ByteBuffer});
 * tensor data is handed out as views ({@link #data}) for the interpreters to decode, and
 * {@link #release} forgets the bytes (and the values shared while loading) once the
 * interpreters are built.
 */
final class TfliteModel {
    // enum TensorType
    static final int FLOAT32 = 0;
    static final int INT32 = 2;
    static final int UINT8 = 3;
    static final int INT64 = 4;
    static final int BOOL = 6;
    static final int INT8 = 9;

    private static final String[] TYPE_NAMES = {"FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "STRING", "BOOL",
        "INT16", "COMPLEX64", "INT8", "FLOAT64", "COMPLEX128", "UINT64", "RESOURCE", "VARIANT", "UINT32", "UINT16", "INT4"};

    static String typeName(int type) {
        return type >= 0 && type < TYPE_NAMES.length ? TYPE_NAMES[type] : "type #" + type;
    }

    /** table Tensor: shape 0, type 1, buffer 2, name 3, quantization 4, is_variable 5, sparsity 6. */
    static final class Tensor {
        final int index;
        final String name;
        final int type;
        final int[] shape;
        final int buffer;
        /** QuantizationParameters scale 2, zero_point 3, details (union) 4/5, quantized_dimension 6; empty when absent. */
        final float[] scales;
        final long[] zeroPoints;
        final int quantizedDimension;
        final boolean customQuantization;
        final boolean sparse;
        final boolean variable;

        Tensor(int index, String name, int type, int[] shape, int buffer, float[] scales, long[] zeroPoints,
               int quantizedDimension, boolean customQuantization, boolean sparse, boolean variable) {
            this.index = index;
            this.name = name;
            this.type = type;
            this.shape = shape;
            this.buffer = buffer;
            this.scales = scales;
            this.zeroPoints = zeroPoints;
            this.quantizedDimension = quantizedDimension;
            this.customQuantization = customQuantization;
            this.sparse = sparse;
            this.variable = variable;
        }
    }

    /** table Operator: opcode_index 0, inputs 1, outputs 2, builtin_options_type 3, builtin_options 4. */
    static final class Operator {
        final int index;
        final int builtinCode;
        final String customCode;
        final int[] inputs;
        final int[] outputs;
        final Options options;

        Operator(int index, int builtinCode, String customCode, int[] inputs, int[] outputs, Options options) {
            this.index = index;
            this.builtinCode = builtinCode;
            this.customCode = customCode;
            this.inputs = inputs;
            this.outputs = outputs;
            this.options = options;
        }
    }

    /** table SubGraph: tensors 0, inputs 1, outputs 2, operators 3, name 4. */
    static final class Subgraph {
        final int index;
        final String name;
        final List<Tensor> tensors;
        final int[] inputs;
        final int[] outputs;
        final List<Operator> operators;

        Subgraph(int index, String name, List<Tensor> tensors, int[] inputs, int[] outputs, List<Operator> operators) {
            this.index = index;
            this.name = name;
            this.tensors = tensors;
            this.inputs = inputs;
            this.outputs = outputs;
            this.operators = operators;
        }
    }

    /** table SignatureDef: inputs 0, outputs 1, signature_key 2, (deprecated tag 3), subgraph_index 4. */
    static final class Signature {
        final String key;
        final int subgraph;
        final Map<String, Integer> inputs;
        final Map<String, Integer> outputs;

        Signature(String key, int subgraph, Map<String, Integer> inputs, Map<String, Integer> outputs) {
            this.key = key;
            this.subgraph = subgraph;
            this.inputs = inputs;
            this.outputs = outputs;
        }
    }

    /** One operator's builtin options table (absent: every field takes its schema default). */
    static final class Options {
        private final FlatBufferReader r;
        private final int table;
        final int type;

        Options(FlatBufferReader r, int type, int table) {
            this.r = r;
            this.type = type;
            this.table = table;
        }

        int getInt(int id, int dflt) {
            return table == 0 ? dflt : r.intField(table, id, dflt);
        }

        int getByte(int id, int dflt) {
            return table == 0 ? dflt : r.byteField(table, id, dflt);
        }

        boolean getBool(int id, boolean dflt) {
            return table == 0 ? dflt : r.boolField(table, id, dflt);
        }
    }

    final String path;
    final int version;
    final List<Subgraph> subgraphs;
    final List<Signature> signatures;
    private final FlatBufferReader r;
    /** Per buffer: absolute start and length of its bytes in the file (length 0: no data). */
    private final long[] bufferStart;
    private final long[] bufferLength;

    private TfliteModel(String path, FlatBufferReader r, int version, List<Subgraph> subgraphs,
                        List<Signature> signatures, long[] bufferStart, long[] bufferLength) {
        this.path = path;
        this.r = r;
        this.version = version;
        this.subgraphs = subgraphs;
        this.signatures = signatures;
        this.bufferStart = bufferStart;
        this.bufferLength = bufferLength;
    }

    /** Parse {@code data} (a whole .tflite file; bytes after the flatbuffer are ignored). */
    static TfliteModel read(String path, byte[] data) throws ModelFileException {
        return read(path, ByteBuffer.wrap(data));
    }

    /**
     * Parse the bytes from {@code data}'s position to its limit (a whole .tflite file), in place,
     * after verifying the file's checksum ({@link ModelArchive#verifyChecksum}); the buffer's
     * position is not moved.
     */
    static TfliteModel read(String path, ByteBuffer data) throws ModelFileException {
        return read(path, data, false);
    }

    /** As {@link #read(String, ByteBuffer)}; {@code checksumVerified}: the caller has verified it already. */
    static TfliteModel read(String path, ByteBuffer data, boolean checksumVerified) throws ModelFileException {
        FlatBufferReader r = new FlatBufferReader(data);
        if (r.size() < 8 || r.u8(4) != 'T' || r.u8(5) != 'F' || r.u8(6) != 'L' || r.u8(7) != '3') {
            throw new ModelFileException(path + ": not a TFLite model (no TFL3 identifier); truncated or foreign file");
        }
        if (!checksumVerified) ModelArchive.verifyChecksum(path, data.slice().order(java.nio.ByteOrder.LITTLE_ENDIAN));
        try {
            return parse(path, r);
        } catch (FlatBufferReader.Malformed e) {
            throw new ModelFileException(path + ": malformed TFLite flatbuffer (" + e.getMessage() + "); truncated or corrupt file");
        }
    }

    /** table Model: version 0, operator_codes 1, subgraphs 2, description 3, buffers 4, ..., signature_defs 7. */
    private static TfliteModel parse(String path, FlatBufferReader r) throws ModelFileException {
        int model = r.root();
        int version = r.intField(model, 0, 0);
        if (version != 3) {
            throw new ModelFileException(path + ": TFLite schema version " + version + ", this reader reads version 3");
        }
        // table OperatorCode: deprecated_builtin_code 0 (byte), custom_code 1, version 2, builtin_code 3 (int).
        // The builtin code is the larger of the two fields (the old byte stops at 127).
        int codes = r.vector(model, 1);
        int nCodes = r.length(codes);
        int[] builtin = new int[nCodes];
        String[] custom = new String[nCodes];
        for (int i = 0; i < nCodes; i++) {
            int oc = r.tableAt(codes, i);
            builtin[i] = Math.max(r.byteField(oc, 0, 0), r.intField(oc, 3, 0));
            custom[i] = r.string(oc, 1);
        }
        // table Buffer: data 0 ([ubyte]), offset 1, size 2 (offset > 1: bytes outside the flatbuffer, in files > 2 GB).
        int buffers = r.vector(model, 4);
        int nBuffers = r.length(buffers);
        long[] start = new long[nBuffers];
        long[] length = new long[nBuffers];
        for (int i = 0; i < nBuffers; i++) {
            int b = r.tableAt(buffers, i);
            int vec = r.vector(b, 0);
            long offset = r.longField(b, 1, 0);
            if (vec != 0) {
                start[i] = vec + 4;
                length[i] = r.length(vec);
            } else if (offset > 1) {
                start[i] = offset;
                length[i] = r.longField(b, 2, 0);
            }
            r.checkRange(start[i], length[i]);
        }
        int sgs = r.vector(model, 2);
        List<Subgraph> subgraphs = new ArrayList<Subgraph>();
        for (int s = 0; s < r.length(sgs); s++) {
            subgraphs.add(subgraph(path, r, s, r.tableAt(sgs, s), builtin, custom, nBuffers));
        }
        // table TensorMap: name 0, tensor_index 1.
        int sigs = r.vector(model, 7);
        List<Signature> signatures = new ArrayList<Signature>();
        for (int i = 0; i < r.length(sigs); i++) {
            int sig = r.tableAt(sigs, i);
            int sub = r.intField(sig, 4, 0);
            if (sub < 0 || sub >= subgraphs.size()) {
                throw new ModelFileException(path + ": signature " + r.string(sig, 2) + " names subgraph " + sub
                        + " of " + subgraphs.size());
            }
            Signature signature = new Signature(r.string(sig, 2), sub, tensorMap(r, sig, 0), tensorMap(r, sig, 1));
            int tensors = subgraphs.get(sub).tensors.size();
            for (Map<String, Integer> map : java.util.Arrays.asList(signature.inputs, signature.outputs)) {
                for (Map.Entry<String, Integer> e : map.entrySet()) {
                    if (e.getValue() < 0 || e.getValue() >= tensors) {
                        throw new ModelFileException(path + ": signature " + signature.key + " maps " + e.getKey()
                                + " to tensor " + e.getValue() + " of " + tensors);
                    }
                }
            }
            signatures.add(signature);
        }
        return new TfliteModel(path, r, version, Collections.unmodifiableList(subgraphs),
                Collections.unmodifiableList(signatures), start, length);
    }

    private static Map<String, Integer> tensorMap(FlatBufferReader r, int sig, int id) {
        Map<String, Integer> out = new LinkedHashMap<String, Integer>();
        int vec = r.vector(sig, id);
        for (int i = 0; i < r.length(vec); i++) {
            int tm = r.tableAt(vec, i);
            out.put(r.string(tm, 0), r.intField(tm, 1, 0));
        }
        return Collections.unmodifiableMap(out);
    }

    private static Subgraph subgraph(String path, FlatBufferReader r, int index, int sg, int[] builtin, String[] custom,
                                     int nBuffers) throws ModelFileException {
        String name = r.string(sg, 4);
        String where = path + ": subgraph " + index + (name == null ? "" : " (" + name + ")");
        int tv = r.vector(sg, 0);
        List<Tensor> tensors = new ArrayList<Tensor>();
        for (int i = 0; i < r.length(tv); i++) {
            int t = r.tableAt(tv, i);
            int buffer = r.intField(t, 2, 0);
            if (buffer < 0 || buffer >= nBuffers) {
                throw new ModelFileException(where + ": tensor " + i + " names buffer " + buffer + " of " + nBuffers);
            }
            int q = r.table(t, 4);
            float[] scales = q == 0 ? new float[0] : r.floats(q, 2);
            long[] zeroPoints = q == 0 ? new long[0] : r.longs(q, 3);
            int qdim = q == 0 ? 0 : r.intField(q, 6, 0);
            boolean details = q != 0 && r.ubyteField(q, 4, 0) != 0;
            tensors.add(new Tensor(i, r.string(t, 3), r.byteField(t, 1, 0), r.ints(t, 0), buffer, scales, zeroPoints,
                    qdim, details, r.table(t, 6) != 0, r.boolField(t, 5, false)));
        }
        int ov = r.vector(sg, 3);
        List<Operator> operators = new ArrayList<Operator>();
        for (int i = 0; i < r.length(ov); i++) {
            int op = r.tableAt(ov, i);
            int opcode = r.intField(op, 0, 0);
            if (opcode < 0 || opcode >= builtin.length) {
                throw new ModelFileException(where + ": operator #" + i + " names operator code " + opcode
                        + " of " + builtin.length);
            }
            int[] inputs = r.ints(op, 1);
            int[] outputs = r.ints(op, 2);
            for (int t : concat(inputs, outputs)) {
                if (t < -1 || t >= tensors.size()) {
                    throw new ModelFileException(where + ": operator #" + i + " names tensor " + t + " of " + tensors.size());
                }
            }
            Options options = new Options(r, r.ubyteField(op, 3, 0), r.table(op, 4));
            operators.add(new Operator(i, builtin[opcode], custom[opcode], inputs, outputs, options));
        }
        int[] inputs = r.ints(sg, 1);
        int[] outputs = r.ints(sg, 2);
        for (int t : concat(inputs, outputs)) {
            if (t < 0 || t >= tensors.size()) {
                throw new ModelFileException(where + ": an input or output names tensor " + t + " of " + tensors.size());
            }
        }
        return new Subgraph(index, name, Collections.unmodifiableList(tensors), inputs, outputs,
                Collections.unmodifiableList(operators));
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = new int[a.length + b.length];
        System.arraycopy(a, 0, out, 0, a.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    /** The signature named {@code key}, or null. */
    Signature signature(String key) {
        for (Signature s : signatures) {
            if (key.equals(s.key)) return s;
        }
        return null;
    }

    /** Values derived from the file's buffers once and shared by the model's interpreters (never written). */
    private final Map<String, Object> shared = new java.util.HashMap<String, Object>();

    /** The value stored under {@code key} by {@link #share}, or null. */
    synchronized Object shared(String key) {
        return shared.get(key);
    }

    /** Keeps {@code value} under {@code key} unless one is there; returns the one kept. */
    synchronized Object share(String key, Object value) {
        Object old = shared.get(key);
        if (old != null) return old;
        shared.put(key, value);
        return value;
    }

    /** Whether buffer {@code buffer} holds data (a constant tensor). */
    boolean hasData(int buffer) {
        return bufferLength[buffer] > 0;
    }

    /**
     * A little-endian view of buffer {@code buffer}'s bytes in the file (tensor data), for the
     * interpreters to decode: no copy is made. IllegalStateException after {@link #release}.
     */
    ByteBuffer data(int buffer) {
        return r.slice(bufferStart[buffer], bufferLength[buffer]);
    }

    /**
     * Forgets the file's bytes and the values shared while loading, once every interpreter of
     * the model is built: the interpreters hold what they decoded, and nothing holds the
     * bytes, so a mapped file can be unmapped and a byte array collected.
     */
    synchronized void release() {
        r.release();
        shared.clear();
    }
}
