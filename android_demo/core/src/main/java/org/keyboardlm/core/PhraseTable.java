package org.keyboardlm.core;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The phrase table of a model file (keyboard_lm/text/phrase_table.py): the frequent
 * (context, next word) pairs that many users typed, found by federated discovery, and their
 * share {@code q(w | c) = users(c, w) / users(c)}. A context is the last n (1..{@link #maxOrder})
 * model inputs of the current training chunk, {@code <bos>} included; the lookup a keyboard does
 * at every position is the longest stored one.
 *
 * <p>The file ({@code phrases.bin} in the model's archive, little-endian, version 1):
 * magic {@code KLPT}, u16 version, u8 max_order, u8 reserved, u32 vocab_size, u32 contexts C,
 * u32 entries E; then u32[C] context hashes (strictly ascending), u16[C] users(c), u8[C] next
 * words per context, u16[E] next-word ids (most frequent first within a context) and u8[E]
 * scores {@code round(255 q)}. {@link #contextHash} is 32-bit FNV-1a over n then each id, each
 * as 4 little-endian bytes. Immutable; shared by every session of a predictor.
 */
public final class PhraseTable {
    /** The longest context a table may have (Python's MAX_ORDER). */
    public static final int MAX_ORDER = 4;
    static final int VERSION = 1;
    /** magic, version, max_order, reserved, vocab_size, contexts, entries. */
    static final int HEADER_BYTES = 20;
    private static final int FNV_OFFSET = 0x811C9DC5;
    private static final int FNV_PRIME = 0x01000193;

    /** The vocabulary size the table was built for (a table for another vocabulary is refused). */
    public final int vocabSize;
    /** Longest stored context, 1..{@link #MAX_ORDER}. */
    public final int maxOrder;
    /** Context hashes, ascending as unsigned 32-bit numbers. */
    private final int[] hashes;
    private final char[] users;
    /** Entries of context i are {@code [offsets[i], offsets[i + 1])}. */
    private final int[] offsets;
    private final char[] ids;
    private final byte[] scores;

    private PhraseTable(int vocabSize, int maxOrder, int[] hashes, char[] users, int[] offsets, char[] ids, byte[] scores) {
        this.vocabSize = vocabSize;
        this.maxOrder = maxOrder;
        this.hashes = hashes;
        this.users = users;
        this.offsets = offsets;
        this.ids = ids;
        this.scores = scores;
    }

    /** A stored context's entry: its length n, users(c), the next ids and q(w | c) of each (float32, as Python's). */
    public static final class Entry {
        public final int n;
        public final int users;
        private final int[] ids;
        private final float[] q;

        Entry(int n, int users, int[] ids, float[] q) {
            this.n = n;
            this.users = users;
            this.ids = ids;
            this.q = q;
        }

        /** Next-word ids, most frequent first (a copy). */
        public int[] ids() {
            return ids.clone();
        }

        /** q(w | c) of each next word, {@code score / 255} (a copy). */
        public float[] q() {
            return q.clone();
        }

        int size() {
            return ids.length;
        }

        int id(int i) {
            return ids[i];
        }

        float q(int i) {
            return q[i];
        }
    }

    /** Stored contexts. */
    public int size() {
        return hashes.length;
    }

    /**
     * 32-bit FNV-1a over {@code length} then each of {@code ids[from..from + length)}, each as
     * 4 little-endian bytes: Python's {@code context_hash}.
     */
    public static int contextHash(int[] ids, int from, int length) {
        int h = mix(FNV_OFFSET, length);
        for (int i = from; i < from + length; i++) h = mix(h, ids[i]);
        return h;
    }

    private static int mix(int h, int value) {
        for (int shift = 0; shift < 32; shift += 8) {
            h ^= (value >>> shift) & 0xff;
            h *= FNV_PRIME;  // int overflow is the 2^32 modulus
        }
        return h;
    }

    /**
     * The longest stored context ending {@code tokens[0..length)} (the chunk's inputs so far,
     * {@code <bos>} first at a sentence start), or null when no context of 1..maxOrder tokens
     * matches. A negative id (a word outside the vocabulary) is in no stored context: a context
     * spanning it is not looked up.
     */
    public Entry lookup(int[] tokens, int length) {
        for (int n = Math.min(maxOrder, length); n > 0; n--) {
            boolean unknown = false;
            for (int i = length - n; i < length; i++) unknown |= tokens[i] < 0;
            if (unknown) continue;  // a shorter context may still not span the unknown word
            int at = find(contextHash(tokens, length - n, n));
            if (at >= 0) {
                int lo = offsets[at];
                int hi = offsets[at + 1];
                int[] next = new int[hi - lo];
                float[] q = new float[hi - lo];
                for (int e = lo; e < hi; e++) {
                    next[e - lo] = ids[e];
                    q[e - lo] = (scores[e] & 0xff) / 255f;  // float32, as numpy's uint8 / float32(255)
                }
                return new Entry(n, users[at], next, q);
            }
        }
        return null;
    }

    /** Index of {@code hash} among the stored hashes, or -1. */
    private int find(int hash) {
        int lo = 0;
        int hi = hashes.length - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            int c = compareUnsigned(hashes[mid], hash);
            if (c == 0) return mid;
            if (c < 0) lo = mid + 1;
            else hi = mid - 1;
        }
        return -1;
    }

    /** Integer.compareUnsigned, which Android's API 21 lacks. */
    private static int compareUnsigned(int x, int y) {
        return Integer.compare(x + Integer.MIN_VALUE, y + Integer.MIN_VALUE);
    }

    /**
     * Parse and check a {@code phrases.bin} for a vocabulary of {@code vocabSize} words, as
     * Python's {@code PhraseTable.from_bytes}: every problem is one ModelFileException whose
     * message starts with {@code where} (the model file and the entry) and says what is wrong.
     */
    public static PhraseTable fromBytes(byte[] data, int vocabSize, String where) throws ModelFileException {
        if (data.length < HEADER_BYTES) {
            throw new ModelFileException(where + ": " + data.length + " bytes, shorter than the " + HEADER_BYTES + "-byte header");
        }
        ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
        if (data[0] != 'K' || data[1] != 'L' || data[2] != 'P' || data[3] != 'T') {
            throw new ModelFileException(where + ": not a phrase table (magic " + bytesRepr(data, 4) + ")");
        }
        int version = b.getShort(4) & 0xffff;
        if (version != VERSION) {
            throw new ModelFileException(where + ": phrase table version " + version + ", this version reads " + VERSION);
        }
        int maxOrder = data[6] & 0xff;
        if (maxOrder < 1 || maxOrder > MAX_ORDER) {
            throw new ModelFileException(where + ": max_order " + maxOrder + " outside [1, " + MAX_ORDER + "]");
        }
        long v = b.getInt(8) & 0xffffffffL;
        if (v != vocabSize) {
            throw new ModelFileException(where + ": the table is for a vocabulary of " + v + " words, the model has " + vocabSize);
        }
        long c = b.getInt(12) & 0xffffffffL;
        long e = b.getInt(16) & 0xffffffffL;
        long expected = HEADER_BYTES + 7 * c + 3 * e;
        if (data.length != expected) {
            throw new ModelFileException(where + ": " + data.length + " bytes, the header's " + c + " contexts and " + e
                    + " entries need " + expected);
        }
        int contexts = (int) c;  // both fit: the data holds them
        int entries = (int) e;
        int at = HEADER_BYTES;
        int[] hashes = new int[contexts];
        for (int i = 0; i < contexts; i++, at += 4) hashes[i] = b.getInt(at);
        char[] users = new char[contexts];
        for (int i = 0; i < contexts; i++, at += 2) users[i] = b.getChar(at);
        int[] offsets = new int[contexts + 1];
        boolean zeroCount = false;
        for (int i = 0; i < contexts; i++, at++) {
            int n = data[at] & 0xff;
            zeroCount |= n == 0;
            offsets[i + 1] = offsets[i] + n;
        }
        char[] ids = new char[entries];
        int maxId = -1;
        for (int i = 0; i < entries; i++, at += 2) {
            ids[i] = b.getChar(at);
            maxId = Math.max(maxId, ids[i]);
        }
        byte[] scores = new byte[entries];
        System.arraycopy(data, at, scores, 0, entries);
        for (int i = 1; i < contexts; i++) {
            if (compareUnsigned(hashes[i - 1], hashes[i]) >= 0) {
                throw new ModelFileException(where + ": context hashes are not strictly ascending");
            }
        }
        if (zeroCount || offsets[contexts] != entries) {
            throw new ModelFileException(where + ": the contexts' next-word counts do not add up to " + entries + " entries");
        }
        if (maxId >= vocabSize) {
            throw new ModelFileException(where + ": next-word id " + maxId + " outside the vocabulary [0, " + vocabSize + ")");
        }
        boolean zero = false;
        for (byte s : scores) zero |= s == 0;
        for (char u : users) zero |= u == 0;
        if (zero) throw new ModelFileException(where + ": a zero score or user count (the builder writes at least 1)");
        return new PhraseTable(vocabSize, maxOrder, hashes, users, offsets, ids, scores);
    }

    /** The first {@code n} bytes as Python's repr of bytes shows them: {@code b'KLPX'}, {@code b'\x00...'}. */
    private static String bytesRepr(byte[] data, int n) {
        StringBuilder s = new StringBuilder("b'");
        for (int i = 0; i < n; i++) {
            int x = data[i] & 0xff;
            if (x == '\\' || x == '\'') s.append('\\').append((char) x);
            else if (x >= 0x20 && x < 0x7f) s.append((char) x);
            else s.append(String.format("\\x%02x", x));
        }
        return s.append('\'').toString();
    }
}
