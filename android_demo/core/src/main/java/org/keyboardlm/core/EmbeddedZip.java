package org.keyboardlm.core;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;

/**
 * The zip archive appended to an exported .tflite, read from the file's bytes in place (a
 * little-endian buffer; only the entries are copied out).
 *
 * Not java.util.zip.ZipFile: Android's ZipFile refuses a file that does not start with a
 * zip local header, and the model file starts with the TFLite flatbuffer. As Python's
 * zipfile does, the end-of-central-directory record is found from the end and offsets are
 * corrected by the length of the data before the archive. Stored and deflated entries,
 * CRC-checked; no zip64 (the archive holds a few kilobytes of text).
 */
final class EmbeddedZip {
    private static final int EOCD = 0x06054b50;
    private static final int CENTRAL = 0x02014b50;
    private static final int LOCAL = 0x04034b50;

    /** A zip that cannot be read; the message says what is wrong (no file name). */
    static final class Bad extends Exception {
        Bad(String message) {
            super(message);
        }
    }

    private EmbeddedZip() {}

    private static int u16(ByteBuffer b, long at) throws Bad {
        if (at < 0 || at + 2 > b.limit()) throw new Bad("a zip record runs past the end of the file");
        return b.getShort((int) at) & 0xffff;
    }

    private static long u32(ByteBuffer b, long at) throws Bad {
        if (at < 0 || at + 4 > b.limit()) throw new Bad("a zip record runs past the end of the file");
        return b.getInt((int) at) & 0xffffffffL;
    }

    /** Bytes {@code [at, at + n)} of {@code b} (bounds checked by the caller). */
    private static byte[] copy(ByteBuffer b, int at, int n) {
        byte[] out = new byte[n];
        ByteBuffer d = b.duplicate();
        d.position(at);
        d.get(out);
        return out;
    }

    /** The most an entry may hold uncompressed (a 10,000-word vocabulary is about 80 KB), as in Python. */
    static final int MAX_ENTRY_BYTES = 16 << 20;

    /** Size of the end-of-central-directory record, without its comment. */
    static final int END_RECORD = 22;

    /**
     * Position of the end-of-central-directory record whose comment ends exactly at the end
     * of {@code data}, or -1: what a zip reader finds from the end of the file.
     */
    static int endRecord(ByteBuffer data) {
        int length = data.limit();
        for (long i = length - END_RECORD; i >= 0 && i >= length - END_RECORD - 65535; i--) {
            if (data.getInt((int) i) == EOCD && i + END_RECORD + (data.getShort((int) i + 20) & 0xffff) == length) {
                return (int) i;
            }
        }
        return -1;
    }

    /**
     * Entry name -> uncompressed bytes, for every entry of the archive at the end of
     * {@code data} (a little-endian buffer whose index 0 is the file's first byte).
     */
    static Map<String, byte[]> read(ByteBuffer data) throws Bad {
        int length = data.limit();
        long eocd = endRecord(data);
        if (eocd < 0) throw new Bad("no zip end-of-central-directory record");
        int entries = u16(data, eocd + 10);
        long cdSize = u32(data, eocd + 12);
        long cdOffset = u32(data, eocd + 16);
        long delta = eocd - cdSize - cdOffset;  // bytes before the archive if its offsets are relative to it
        if (delta < 0) throw new Bad("the zip central directory lies outside the file");
        long p = cdOffset + delta;
        long total = 0;
        Map<String, byte[]> out = new LinkedHashMap<String, byte[]>();
        for (int e = 0; e < entries; e++) {
            if (u32(data, p) != CENTRAL) throw new Bad("bad zip central directory entry " + e);
            int method = u16(data, p + 10);
            long crc = u32(data, p + 16);
            long compressed = u32(data, p + 20);
            long size = u32(data, p + 24);
            int nameLen = u16(data, p + 28);
            int extraLen = u16(data, p + 30);
            int commentLen = u16(data, p + 32);
            long local = u32(data, p + 42) + delta;
            if (p + 46 + nameLen > length) throw new Bad("a zip record runs past the end of the file");
            String name = new String(copy(data, (int) p + 46, nameLen), StandardCharsets.UTF_8);
            if (compressed == 0xffffffffL || size == 0xffffffffL || size > MAX_ENTRY_BYTES) {
                throw new Bad("zip entry " + name + " is too large (zip64, or more than " + MAX_ENTRY_BYTES + " bytes)");
            }
            total += size;
            if (total > 2L * MAX_ENTRY_BYTES) throw new Bad("the zip entries declare more than " + 2L * MAX_ENTRY_BYTES + " bytes");
            if (u32(data, local) != LOCAL) throw new Bad("zip entry " + name + " has no local header");
            long start = local + 30 + u16(data, local + 26) + u16(data, local + 28);
            if (start + compressed > length) throw new Bad("zip entry " + name + " runs past the end of the file");
            out.put(name, contents(name, copy(data, (int) start, (int) compressed), (int) size, method, crc));
            p += 46 + nameLen + extraLen + commentLen;
        }
        return out;
    }

    /** The uncompressed bytes of entry {@code name}, whose stored bytes are {@code data}. */
    private static byte[] contents(String name, byte[] data, int size, int method, long crc) throws Bad {
        byte[] out;
        if (method == 0) {
            if (data.length != size) throw new Bad("stored zip entry " + name + " has two sizes");
            out = data;
        } else if (method == 8) {
            out = new byte[size];
            Inflater inflater = new Inflater(true);
            try {
                inflater.setInput(data, 0, data.length);
                int n = 0;
                while (n < size) {
                    int got = inflater.inflate(out, n, size - n);
                    if (got == 0 && (inflater.finished() || inflater.needsInput() || inflater.needsDictionary())) break;
                    n += got;
                }
                if (n != size) throw new Bad("zip entry " + name + " inflates to " + n + " bytes, not " + size);
            } catch (DataFormatException e) {
                throw new Bad("zip entry " + name + " is corrupt (" + e.getMessage() + ")");
            } finally {
                inflater.end();
            }
        } else {
            throw new Bad("zip entry " + name + " uses compression method " + method + " (only stored and deflated are read)");
        }
        CRC32 check = new CRC32();
        check.update(out, 0, out.length);
        if (check.getValue() != crc) throw new Bad("zip entry " + name + " fails its CRC check");
        return out;
    }
}
