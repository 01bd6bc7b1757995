package org.keyboardlm.core;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Bounds-checked reads of a little-endian FlatBuffer (the .tflite container), by hand:
 * a table starts with a signed offset back to its vtable; the vtable holds its own
 * size, the table's size and one 16-bit offset per field id (0 = absent, use the
 * schema default); tables, vectors and strings are reached through unsigned 32-bit
 * offsets relative to where the offset is stored; a vector or string starts with its
 * 32-bit element count. Positions are absolute byte indices into the file; 0 means
 * "absent" (no table or vector can start at byte 0, which holds the root offset).
 *
 * A read outside the file or an impossible offset throws {@link Malformed}, which
 * {@link TfliteModel} turns into a one-line {@link ModelFileException}.
 *
 * <p>The bytes are a {@link ByteBuffer} (a heap array, or a file mapped into memory) read in
 * place: nothing is copied but the strings and small vectors asked for, and tensor data is
 * handed out as views ({@link #slice}). {@link #release} drops the buffer once the model is
 * decoded, so a loaded model keeps no reference to the file's bytes.
 */
final class FlatBufferReader {
    /** The file is not a well-formed FlatBuffer (an offset points outside it). */
    static final class Malformed extends RuntimeException {
        Malformed(String message) {
            super(message);
        }
    }

    /** The file, little-endian, byte 0 at index 0; null after {@link #release}. */
    private ByteBuffer data;
    private final int size;
    /**
     * Work left, in tables reached plus elements of vectors and strings copied (tensor data is
     * not copied): a well-formed file reaches each once, and each takes at least a byte, so
     * twice the file's size is plenty; a file that points many offsets at one big table or
     * vector (a loop or a fan-out) is refused instead of being read again and again.
     */
    private long budget;

    /** Reads the bytes from {@code data}'s position to its limit (the buffer's own position is not moved). */
    FlatBufferReader(ByteBuffer data) {
        this.data = data.slice().order(ByteOrder.LITTLE_ENDIAN);
        this.size = this.data.remaining();
        this.budget = 2L * size + 1024;
    }

    private void charge(long work, int at) {
        budget -= work;
        if (budget < 0) {
            throw new Malformed("the flatbuffer references more data than it holds at " + at
                    + " (offsets in a loop or a shared fan-out)");
        }
    }

    FlatBufferReader(byte[] data) {
        this(ByteBuffer.wrap(data));
    }

    int size() {
        return size;
    }

    /** Forgets the file's bytes; every later read throws IllegalStateException. */
    void release() {
        data = null;
    }

    private ByteBuffer buffer() {
        ByteBuffer b = data;
        if (b == null) throw new IllegalStateException("the model file's bytes were released after the model was loaded");
        return b;
    }

    private void check(int pos, int bytes) {
        if (pos < 0 || bytes < 0 || pos > size - bytes) {
            throw new Malformed("offset " + pos + " (+" + bytes + " bytes) is outside the " + size + "-byte file");
        }
    }

    int u8(int pos) {
        check(pos, 1);
        return buffer().get(pos) & 0xFF;
    }

    int i8(int pos) {
        check(pos, 1);
        return buffer().get(pos);
    }

    int u16(int pos) {
        check(pos, 2);
        return buffer().getShort(pos) & 0xFFFF;
    }

    int i32(int pos) {
        check(pos, 4);
        return buffer().getInt(pos);
    }

    long i64(int pos) {
        check(pos, 8);
        return buffer().getLong(pos);
    }

    float f32(int pos) {
        return Float.intBitsToFloat(i32(pos));
    }

    /** An unsigned 32-bit offset stored at {@code pos}, resolved to an absolute position. */
    private int deref(int pos) {
        long target = pos + (i32(pos) & 0xFFFFFFFFL);
        if (target >= size) {
            throw new Malformed("offset at " + pos + " points past the end of the file");
        }
        return (int) target;
    }

    /** The root table (the offset at byte 0). */
    int root() {
        return deref(0);
    }

    /** The absolute position of field {@code id} of {@code table}, or 0 when the field is absent. */
    int field(int table, int id) {
        long vtable = (long) table - i32(table);
        if (vtable < 0 || vtable >= size) {
            throw new Malformed("the vtable of the table at " + table + " is outside the file");
        }
        int vt = (int) vtable;
        int vtSize = u16(vt);
        int tableSize = u16(vt + 2);
        // As flatbuffers' Verifier: a vtable of whole 16-bit entries, a table inside the file, fields inside the table.
        if (vtSize < 4 || vtSize % 2 != 0 || tableSize < 4 || (long) table + tableSize > size) {
            throw new Malformed("the table at " + table + " has a vtable of " + vtSize + " bytes for " + tableSize + " bytes");
        }
        int entry = 4 + 2 * id;
        if (entry + 2 > vtSize) return 0;
        int off = u16(vt + entry);
        if (off != 0 && (off < 4 || off >= tableSize)) {
            throw new Malformed("field " + id + " of the table at " + table + " lies outside its " + tableSize + " bytes");
        }
        return off == 0 ? 0 : table + off;
    }

    int intField(int table, int id, int dflt) {
        int p = field(table, id);
        return p == 0 ? dflt : i32(p);
    }

    long longField(int table, int id, long dflt) {
        int p = field(table, id);
        return p == 0 ? dflt : i64(p);
    }

    int byteField(int table, int id, int dflt) {
        int p = field(table, id);
        return p == 0 ? dflt : i8(p);
    }

    int ubyteField(int table, int id, int dflt) {
        int p = field(table, id);
        return p == 0 ? dflt : u8(p);
    }

    boolean boolField(int table, int id, boolean dflt) {
        int p = field(table, id);
        return p == 0 ? dflt : u8(p) != 0;
    }

    /** The sub-table in field {@code id}, or 0. */
    int table(int table, int id) {
        int p = field(table, id);
        return p == 0 ? 0 : deref(p);
    }

    /** The vector in field {@code id} (the position of its length), or 0. */
    int vector(int table, int id) {
        int p = field(table, id);
        return p == 0 ? 0 : deref(p);
    }

    /** Element count of the vector at {@code vec} (0 for an absent vector). */
    int length(int vec) {
        if (vec == 0) return 0;
        int n = i32(vec);
        if (n < 0 || n > (size - vec - 4)) {
            throw new Malformed("a vector at " + vec + " claims " + (n & 0xFFFFFFFFL) + " elements");
        }
        return n;
    }

    /** The table that element {@code i} of a vector of tables points to. */
    int tableAt(int vec, int i) {
        charge(1, vec);
        return deref(vec + 4 + 4 * i);
    }

    String string(int table, int id) {
        int s = vector(table, id);
        if (s == 0) return null;
        int n = length(s);
        byte[] utf8 = new byte[n];
        copy(s + 4, utf8);
        return new String(utf8, StandardCharsets.UTF_8);
    }

    /** Bytes {@code [pos, pos + out.length)} of the file into {@code out}. */
    private void copy(int pos, byte[] out) {
        check(pos, out.length);
        charge(out.length, pos);
        ByteBuffer d = buffer().duplicate();
        d.position(pos);
        d.get(out);
    }

    int[] ints(int table, int id) {
        int v = vector(table, id);
        int n = length(v);
        check(v + 4, 4 * n);
        charge(n, v);
        int[] out = new int[n];
        for (int i = 0; i < n; i++) out[i] = i32(v + 4 + 4 * i);
        return out;
    }

    float[] floats(int table, int id) {
        int v = vector(table, id);
        int n = length(v);
        check(v + 4, 4 * n);
        charge(n, v);
        float[] out = new float[n];
        for (int i = 0; i < n; i++) out[i] = f32(v + 4 + 4 * i);
        return out;
    }

    long[] longs(int table, int id) {
        int v = vector(table, id);
        int n = length(v);
        check(v + 4, 8 * n);
        charge(n, v);
        long[] out = new long[n];
        for (int i = 0; i < n; i++) out[i] = i64(v + 4 + 8 * i);
        return out;
    }

    /** Bytes {@code [pos, pos + n)} of the file, checked. */
    void checkRange(long pos, long n) {
        if (pos < 0 || n < 0 || pos + n > size) {
            throw new Malformed("a buffer [" + pos + ", " + (pos + n) + ") is outside the " + size + "-byte file");
        }
    }

    /** A little-endian view of bytes {@code [pos, pos + n)} of the file (no copy). */
    ByteBuffer slice(long pos, long n) {
        checkRange(pos, n);
        ByteBuffer d = buffer().duplicate();
        d.position((int) pos);
        d.limit((int) (pos + n));
        return d.slice().order(ByteOrder.LITTLE_ENDIAN);
    }
}
