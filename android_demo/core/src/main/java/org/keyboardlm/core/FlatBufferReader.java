package org.keyboardlm.core;

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
 */
final class FlatBufferReader {
    /** The file is not a well-formed FlatBuffer (an offset points outside it). */
    static final class Malformed extends RuntimeException {
        Malformed(String message) {
            super(message);
        }
    }

    private final byte[] data;

    FlatBufferReader(byte[] data) {
        this.data = data;
    }

    int size() {
        return data.length;
    }

    private void check(int pos, int bytes) {
        if (pos < 0 || bytes < 0 || pos > data.length - bytes) {
            throw new Malformed("offset " + pos + " (+" + bytes + " bytes) is outside the " + data.length + "-byte file");
        }
    }

    int u8(int pos) {
        check(pos, 1);
        return data[pos] & 0xFF;
    }

    int i8(int pos) {
        check(pos, 1);
        return data[pos];
    }

    int u16(int pos) {
        check(pos, 2);
        return (data[pos] & 0xFF) | (data[pos + 1] & 0xFF) << 8;
    }

    int i32(int pos) {
        check(pos, 4);
        return (data[pos] & 0xFF) | (data[pos + 1] & 0xFF) << 8 | (data[pos + 2] & 0xFF) << 16 | data[pos + 3] << 24;
    }

    long i64(int pos) {
        return (i32(pos) & 0xFFFFFFFFL) | (long) i32(pos + 4) << 32;
    }

    float f32(int pos) {
        return Float.intBitsToFloat(i32(pos));
    }

    /** An unsigned 32-bit offset stored at {@code pos}, resolved to an absolute position. */
    private int deref(int pos) {
        long target = pos + (i32(pos) & 0xFFFFFFFFL);
        if (target >= data.length) {
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
        if (vtable < 0 || vtable >= data.length) {
            throw new Malformed("the vtable of the table at " + table + " is outside the file");
        }
        int vt = (int) vtable;
        int vtSize = u16(vt);
        int entry = 4 + 2 * id;
        if (entry + 2 > vtSize) return 0;
        int off = u16(vt + entry);
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
        if (n < 0 || n > (data.length - vec - 4)) {
            throw new Malformed("a vector at " + vec + " claims " + (n & 0xFFFFFFFFL) + " elements");
        }
        return n;
    }

    /** The table that element {@code i} of a vector of tables points to. */
    int tableAt(int vec, int i) {
        return deref(vec + 4 + 4 * i);
    }

    String string(int table, int id) {
        int s = vector(table, id);
        if (s == 0) return null;
        int n = length(s);
        return new String(data, s + 4, n, StandardCharsets.UTF_8);
    }

    int[] ints(int table, int id) {
        int v = vector(table, id);
        int n = length(v);
        check(v + 4, 4 * n);
        int[] out = new int[n];
        for (int i = 0; i < n; i++) out[i] = i32(v + 4 + 4 * i);
        return out;
    }

    float[] floats(int table, int id) {
        int v = vector(table, id);
        int n = length(v);
        check(v + 4, 4 * n);
        float[] out = new float[n];
        for (int i = 0; i < n; i++) out[i] = f32(v + 4 + 4 * i);
        return out;
    }

    long[] longs(int table, int id) {
        int v = vector(table, id);
        int n = length(v);
        check(v + 4, 8 * n);
        long[] out = new long[n];
        for (int i = 0; i < n; i++) out[i] = i64(v + 4 + 8 * i);
        return out;
    }

    /** Bytes {@code [pos, pos + n)} of the file, checked. */
    void checkRange(long pos, long n) {
        if (pos < 0 || n < 0 || pos + n > data.length) {
            throw new Malformed("a buffer [" + pos + ", " + (pos + n) + ") is outside the " + data.length + "-byte file");
        }
    }

    byte[] bytes() {
        return data;
    }
}
