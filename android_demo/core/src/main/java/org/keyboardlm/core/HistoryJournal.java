package org.keyboardlm.core;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.zip.CRC32;

/**
 * The user history's journal: the changes made since the last full snapshot of the history
 * file, appended to {@code <history>.journal} so that a save writes only what changed (a few
 * dozen bytes a word) instead of the whole file. {@link HistoryStore} writes it and compacts it
 * into a new snapshot; {@link UserHistoryFile} reads snapshot + journal. Java only: Python reads
 * the snapshot, which stays the JSON file it writes (a Python reader sees the history as of the
 * last compaction).
 *
 * <p>File format (all integers big-endian):
 * <pre>
 *   header   "kblm-history-journal 1\n" (23 bytes)
 *            base length (8 bytes), base CRC-32 (4): the snapshot file the records apply to
 *            header CRC-32 (4), over the 35 bytes before it
 *   records  length (4 bytes, of the payload), CRC-32 of the payload (4), payload
 *   payload  'L' clock after (8), prev, word       UserHistory.learnWord
 *            'U' learntAt (8), prev, word          UserHistory.unlearnWord (one that returned true)
 *            'R' word                              UserHistory.removeWord (one that returned true)
 *            'W' 0 | 1 + weight bits (8)            UserHistory.setWeight (null | the weight)
 *            'C'                                   UserHistory.clear
 *   strings  UTF-16 code units: count (4), then 2 bytes each (exact for any Java string)
 * </pre>
 * A record is taken only when its length is in range, its CRC matches, its payload parses to
 * the end, and applying it succeeds as it did when it was recorded (a learn gives the recorded
 * clock, an unlearn or a removal finds what it took). Reading stops at the first record that
 * fails; what came before it is kept (see {@link Replay}).
 */
public final class HistoryJournal {
    /** Appended to the history file's name. */
    public static final String SUFFIX = ".journal";
    /** The journal being folded into a new snapshot (see {@link HistoryStore}). */
    public static final String COMPACTING_SUFFIX = ".journal.old";
    static final byte[] MAGIC = "kblm-history-journal 1\n".getBytes(StandardCharsets.US_ASCII);
    static final int HEADER_LENGTH = MAGIC.length + 8 + 4 + 4;
    /** No record is larger (two words of at most 256 KiB of UTF-16 each, and change). */
    static final int MAX_RECORD = 1 << 20;

    private HistoryJournal() {
    }

    /** The CRC-32 of {@code bytes}. */
    static int crc(byte[] bytes, int off, int len) {
        CRC32 c = new CRC32();
        c.update(bytes, off, len);
        return (int) c.getValue();
    }

    /** A journal's header for a snapshot of {@code baseLength} bytes with CRC-32 {@code baseCrc}. */
    static byte[] header(long baseLength, int baseCrc) {
        ByteBuffer b = ByteBuffer.allocate(HEADER_LENGTH);
        b.put(MAGIC).putLong(baseLength).putInt(baseCrc);
        b.putInt(crc(b.array(), 0, b.position()));
        return b.array();
    }

    /**
     * The changes a history makes, framed as journal records in memory until a save takes them
     * ({@link #drain}). Bounded: past {@link #MAX_PENDING} bytes the records are dropped and the
     * next save must write a full snapshot ({@link Pending#overflowed}). Called under the
     * history's lock.
     */
    static final class Recorder {
        /** Pending records beyond this many bytes are dropped for a full snapshot instead. */
        static final int MAX_PENDING = 1 << 20;
        private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
        private final ByteArrayOutputStream payload = new ByteArrayOutputStream(64);
        private final DataOutputStream out = new DataOutputStream(payload);
        private boolean overflowed;
        /** Told after each change (see {@link HistoryStore#setChangeListener}); null: nobody. */
        private volatile Runnable listener;

        void setListener(Runnable listener) {
            this.listener = listener;
        }

        void learn(String prev, String word, long clockAfter) {
            begin('L');
            writeLong(clockAfter);
            writeString(prev);
            writeString(word);
            end();
        }

        void unlearn(String prev, String word, long learntAt) {
            begin('U');
            writeLong(learntAt);
            writeString(prev);
            writeString(word);
            end();
        }

        void remove(String word) {
            begin('R');
            writeString(word);
            end();
        }

        void weight(Double weight) {
            begin('W');
            try {
                out.writeByte(weight == null ? 0 : 1);
                if (weight != null) out.writeLong(Double.doubleToRawLongBits(weight));
            } catch (IOException e) {
                throw new IllegalStateException(e);  // a ByteArrayOutputStream does not throw
            }
            end();
        }

        void clear() {
            begin('C');
            end();
        }

        /** The records since the last drain, and whether some were dropped; both are reset. */
        Pending drain() {
            Pending p = new Pending(pending.toByteArray(), overflowed);
            pending.reset();
            overflowed = false;
            return p;
        }

        /** Forget what is pending (the files were deleted: the next save writes a snapshot). */
        void discard() {
            pending.reset();
            overflowed = false;
        }

        private void begin(char type) {
            payload.reset();
            try {
                out.writeByte(type);
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }

        private void writeLong(long v) {
            try {
                out.writeLong(v);
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }

        private void writeString(String s) {
            try {
                out.writeInt(s.length());
                out.writeChars(s);
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        }

        private void end() {
            frame();
            Runnable l = listener;
            if (l != null) l.run();
        }

        private void frame() {
            if (overflowed) return;
            int n = payload.size();
            if (pending.size() + 8 + n > MAX_PENDING || n > MAX_RECORD) {
                pending.reset();
                overflowed = true;
                return;
            }
            byte[] p = payload.toByteArray();
            int crc = crc(p, 0, n);
            pending.write(n >>> 24);
            pending.write(n >>> 16);
            pending.write(n >>> 8);
            pending.write(n);
            pending.write(crc >>> 24);
            pending.write(crc >>> 16);
            pending.write(crc >>> 8);
            pending.write(crc);
            pending.write(p, 0, n);
        }
    }

    /** Records taken from a {@link Recorder}: framed bytes to append, and whether some were dropped. */
    static final class Pending {
        final byte[] bytes;
        final boolean overflowed;

        Pending(byte[] bytes, boolean overflowed) {
            this.bytes = bytes;
            this.overflowed = overflowed;
        }
    }

    /** What reading a journal found. */
    static final class Replay {
        /** The header's snapshot length and CRC-32; -1 and 0 when the header is unreadable. */
        final long baseLength;
        final int baseCrc;
        /** Records applied. */
        final int records;
        /** Bytes of the journal that were read and applied: the header and the records taken. */
        final long validLength;
        /** Null, or why reading stopped before the end (the damage, with its byte offset). */
        final String problem;

        Replay(long baseLength, int baseCrc, int records, long validLength, String problem) {
            this.baseLength = baseLength;
            this.baseCrc = baseCrc;
            this.records = records;
            this.validLength = validLength;
            this.problem = problem;
        }
    }

    /**
     * The header of {@code journal}: {baseLength, baseCrc} as a Replay with no records, or one whose
     * {@link Replay#problem} says why it is not a journal header.
     */
    static Replay readHeader(byte[] journal) {
        if (journal.length < HEADER_LENGTH) return new Replay(-1, 0, 0, 0, "a journal header needs " + HEADER_LENGTH + " bytes, the file has " + journal.length);
        for (int i = 0; i < MAGIC.length; i++) {
            if (journal[i] != MAGIC[i]) return new Replay(-1, 0, 0, 0, "not a keyboard_lm history journal (no kblm-history-journal 1 header)");
        }
        ByteBuffer b = ByteBuffer.wrap(journal);
        b.position(MAGIC.length);
        long baseLength = b.getLong();
        int baseCrc = b.getInt();
        int headerCrc = b.getInt();
        if (headerCrc != crc(journal, 0, HEADER_LENGTH - 4)) return new Replay(-1, 0, 0, 0, "the journal header's checksum does not match");
        return new Replay(baseLength, baseCrc, 0, HEADER_LENGTH, null);
    }

    /**
     * Apply the records of {@code journal} (whose header {@link #readHeader} accepted) to
     * {@code history}, in order, up to the first record that is torn, damaged or does not apply.
     */
    static Replay replay(byte[] journal, UserHistory history) {
        Replay head = readHeader(journal);
        if (head.problem != null) return head;
        ByteBuffer b = ByteBuffer.wrap(journal);
        int pos = HEADER_LENGTH;
        int records = 0;
        String problem = null;
        while (pos < journal.length) {
            if (journal.length - pos < 8) {
                problem = "a torn record at byte " + pos + " (" + (journal.length - pos) + " bytes, fewer than a record's 8-byte frame)";
                break;
            }
            int n = b.getInt(pos);
            int crc = b.getInt(pos + 4);
            if (n < 1 || n > MAX_RECORD) {
                problem = "a record at byte " + pos + " has an impossible length " + n;
                break;
            }
            if (journal.length - pos - 8 < n) {
                problem = "a torn record at byte " + pos + " (" + n + " bytes announced, " + (journal.length - pos - 8) + " there)";
                break;
            }
            if (crc(journal, pos + 8, n) != crc) {
                problem = "a damaged record at byte " + pos + " (checksum mismatch)";
                break;
            }
            String failed = apply(ByteBuffer.wrap(journal, pos + 8, n).slice(), history);
            if (failed != null) {
                problem = "a record at byte " + pos + " " + failed;
                break;
            }
            pos += 8 + n;
            records++;
        }
        return new Replay(head.baseLength, head.baseCrc, records, pos, problem);
    }

    /** Apply one payload; null when it applied, else what is wrong with it. */
    private static String apply(ByteBuffer p, UserHistory history) {
        try {
            char type = (char) p.get();
            switch (type) {
                case 'L': {
                    long clockAfter = p.getLong();
                    String prev = string(p);
                    String word = string(p);
                    if (p.hasRemaining()) return "has " + p.remaining() + " bytes after its learn";
                    // A learn moves the clock on by one: checked first, so a record that does not fit changes nothing.
                    if (history.clock() + 1 != clockAfter) {
                        return "does not apply to this history (its learn ends at clock " + clockAfter + ", the history is at " + history.clock() + ")";
                    }
                    history.learnWord(prev, word);
                    return null;
                }
                case 'U': {
                    long learntAt = p.getLong();
                    String prev = string(p);
                    String word = string(p);
                    if (p.hasRemaining()) return "has " + p.remaining() + " bytes after its unlearn";
                    if (learntAt < 1 || learntAt > history.clock()) return "unlearns at clock " + learntAt + ", outside [1, " + history.clock() + "]";
                    if (!history.unlearnWord(prev, word, learntAt)) return "unlearns a pair this history does not hold";
                    return null;
                }
                case 'R': {
                    String word = string(p);
                    if (p.hasRemaining()) return "has " + p.remaining() + " bytes after its removal";
                    if (!history.removeWord(word)) return "removes a word this history does not hold";
                    return null;
                }
                case 'W': {
                    int has = p.get();
                    if (has != 0 && has != 1) return "has a weight flag " + has;
                    Double w = has == 0 ? null : Double.longBitsToDouble(p.getLong());
                    if (p.hasRemaining()) return "has " + p.remaining() + " bytes after its weight";
                    if (w != null && !(w >= 0 && w <= 1)) return "sets the weight " + w + ", outside [0, 1]";
                    history.setWeight(w);
                    return null;
                }
                case 'C':
                    if (p.hasRemaining()) return "has " + p.remaining() + " bytes after its clear";
                    history.clear();
                    return null;
                default:
                    return "has an unknown type " + (int) type;
            }
        } catch (java.nio.BufferUnderflowException e) {
            return "ends inside its fields";
        } catch (IllegalArgumentException e) {
            return "is refused by the history (" + e.getMessage() + ")";
        }
    }

    private static String string(ByteBuffer p) {
        int n = p.getInt();
        if (n < 0 || n > p.remaining() / 2) throw new java.nio.BufferUnderflowException();
        char[] c = new char[n];
        for (int i = 0; i < n; i++) c[i] = p.getChar();
        return new String(c);
    }
}
