package org.keyboardlm.core;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * One user's history file and the history read from it: read once ({@link UserHistoryFile}:
 * a damaged file is kept aside), written when it changed, and cleared. Thread-safe: the
 * keyboard learns on its ranking thread, saves on a separate one ({@link IdleSaver}) and
 * clears from its settings screen.
 *
 * <ul>
 * <li>A save is incremental: it appends the changes since the last save (learnt, unlearnt and
 * removed words, the weight) to the history's journal ({@link HistoryJournal}), a few dozen
 * bytes a word, and fsyncs that append; the history file itself is not rewritten. Nothing is
 * written when nothing changed since the last read or write ({@link UserHistory#changes()}).</li>
 * <li>Compaction: when the journal would grow past {@link #journalLimit()} bytes (or the
 * snapshot's own size, when larger: a save's bytes stay within twice the changes', and loading
 * reads at most as many journal bytes as snapshot bytes), and at {@link #close()}, the save writes
 * a full snapshot instead (the history's JSON, the same file as Python's): a temporary file,
 * fsync, a rename, as before. The journal is first renamed to {@code .journal.old} and deleted
 * once the snapshot is in place, so a crash at any point leaves files that
 * {@link UserHistoryFile#open} reads back to the last save (see there). The records or the
 * snapshot are taken under the history's lock, so learning waits for them only, never for the
 * disk.</li>
 * <li>A clear during a save wins: the save's snapshot, taken before the clear, is not written
 * after it, and the clear deletes the files only once a write under way has finished. So
 * no file holds anything from before the clear once it returns.</li>
 * <li>When a damaged file could not be moved aside, nothing is saved over it until a clear.</li>
 * <li>A read that fails for the file system's reasons (an I/O error, not enough memory) is tried
 * again, {@link #READ_ATTEMPTS} times in all with a doubling pause ({@link UserHistoryFile#readFailed});
 * if every try fails, the empty history it gives is not saved over the unread file, and the file
 * is read again when the keyboard restarts.</li>
 * <li>Damaged files are kept, numbered, in the quarantine ({@link #keptCopies()}); a kept history
 * can be brought back ({@link #restore}), the history it replaces kept in its place.</li>
 * </ul>
 */
public final class HistoryStore {
    /** The default {@link #journalLimit()}. */
    public static final long DEFAULT_JOURNAL_LIMIT = 64 * 1024;
    /** Reads of a file that cannot be read (I/O, memory) before the store gives up until the next start. */
    public static final int READ_ATTEMPTS = 4;
    /** The pause before the second read; it doubles before each later one (100, 200, 400 ms). */
    public static final long READ_RETRY_MILLIS = 100;

    private final String path;
    private final long journalLimit;
    /** Held while a file is written or deleted. */
    private final Object fileLock = new Object();
    // Guarded by this.
    private UserHistory history;
    private RecentSentences recent;
    private boolean writable = true;
    private String notice;
    private long savedChanges;
    private long clears;
    /** Where the history's changes wait for the next save (set on the history read). */
    private final HistoryJournal.Recorder recorder = new HistoryJournal.Recorder();
    /** The snapshot on disk: its length (-1: none yet) and CRC-32; the journal's bytes on disk (0: none). */
    private long snapshotLength = -1;
    private int snapshotCrc;
    private long journalLength;
    /** The next save writes a full snapshot (the journal on disk is behind the history in memory). */
    private boolean compactionDue;
    /** Bytes the last save wrote (tests and benchmarks). */
    private volatile long lastSaveBytes;
    private volatile boolean lastSaveCompacted;
    /** Tests: runs in a save after the snapshot, before the write. */
    volatile Runnable beforeWrite;
    /** Tests: runs before each read after a failed one (after the pause). */
    volatile Runnable beforeRetry;
    /** The pause before the second read (tests shorten it). */
    volatile long retryMillis = READ_RETRY_MILLIS;
    /** Reads made by the last {@link #history()} that read the file. */
    private int readAttempts;

    public HistoryStore(String path) {
        this(path, DEFAULT_JOURNAL_LIMIT);
    }

    /** A store whose journal is compacted past {@code journalLimit} bytes (or the snapshot's size, when larger). */
    public HistoryStore(String path, long journalLimit) {
        if (path == null) throw new IllegalArgumentException("path must not be null");
        if (journalLimit < HistoryJournal.HEADER_LENGTH) {
            throw new IllegalArgumentException("journalLimit must be >= " + HistoryJournal.HEADER_LENGTH + " bytes, got " + journalLimit);
        }
        this.path = path;
        this.journalLimit = journalLimit;
    }

    /** The journal's bound in bytes before a save compacts it (the snapshot's size, when that is larger). */
    public long journalLimit() {
        return journalLimit;
    }

    /** Bytes the last save that wrote wrote (its journal append, or the whole snapshot when it compacted). */
    public long lastSaveBytes() {
        return lastSaveBytes;
    }

    /** True when the last save that wrote wrote a full snapshot. */
    public boolean lastSaveCompacted() {
        return lastSaveCompacted;
    }

    public String path() {
        return path;
    }

    /**
     * The history, read on first use (an empty one when there is no file, a damaged one was kept
     * aside, or it could not be read). A read that fails for the file system's reasons is tried
     * again (see the class comment): the first call may take {@code READ_RETRY_MILLIS * 7} ms then.
     */
    public synchronized UserHistory history() {
        if (history != null) return history;
        UserHistoryFile opened = UserHistoryFile.open(path);
        readAttempts = 1;
        for (long pause = retryMillis; opened.readFailed && readAttempts < READ_ATTEMPTS; pause *= 2) {
            try {
                Thread.sleep(pause);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
            Runnable hook = beforeRetry;
            if (hook != null) hook.run();
            opened = UserHistoryFile.open(path);
            readAttempts++;
        }
        history = opened.history;
        writable = opened.writable;
        notice = opened.readFailed ? opened.notice + " (" + readAttempts + " tries; it is read again when the keyboard"
                + " restarts, and what is learnt until then is not saved)" : opened.notice;
        snapshotLength = opened.snapshotLength;
        snapshotCrc = opened.snapshotCrc;
        journalLength = opened.journalLength;
        compactionDue = opened.compactionDue;
        savedChanges = history.changes();
        history.recordChanges(recorder);
        return history;
    }

    /** Why the file read was not used (a damaged file, kept aside or not), one line; null when it was fine. */
    public synchronized String notice() {
        history();
        return notice;
    }

    /** The user's newest finished sentences for {@link #history()}, in memory only (see {@link RecentSentences}). */
    public synchronized RecentSentences recentSentences() {
        if (recent == null) recent = new RecentSentences(history());
        return recent;
    }

    /** Reads the last read of the file took (1 when the first succeeded; {@link #READ_ATTEMPTS} when all failed); 0 before. */
    public synchronized int readAttempts() {
        return readAttempts;
    }

    /**
     * Run {@code listener} after every change of the history (learnt, unlearnt, removed, weight,
     * cleared), on the thread that made it and under the history's lock: it must be quick and
     * must not call the history ({@link IdleSaver#changed()} is such a listener). Null: none.
     */
    public void setChangeListener(Runnable listener) {
        recorder.setListener(listener);
    }

    /** What the quarantine keeps under one number: the files one read set aside (see {@link #keptCopies()}). */
    public static final class KeptCopy {
        /** Its number, in the order things were kept (1 first). */
        public final int number;
        /** Its files: the history file ({@code N.history}) and journals ({@code N.journal}, {@code N.journal.old}). */
        public final List<File> files;
        /** True when it holds a history file, which {@link HistoryStore#restore} can bring back. */
        public final boolean restorable;
        /** When its newest file was written (milliseconds since 1970). */
        public final long lastModified;
        /** The bytes of its files. */
        public final long bytes;

        KeptCopy(int number, List<File> files, boolean restorable) {
            this.number = number;
            this.files = java.util.Collections.unmodifiableList(files);
            this.restorable = restorable;
            long time = 0;
            long size = 0;
            for (File f : files) {
                time = Math.max(time, f.lastModified());
                size += f.length();
            }
            this.lastModified = time;
            this.bytes = size;
        }

        /** {@code 3: user.history.quarantine/3.history, 3.journal (1234 bytes)}: names and sizes, never content. */
        @Override
        public String toString() {
            StringBuilder b = new StringBuilder().append(number).append(": ");
            for (int i = 0; i < files.size(); i++) {
                b.append(i == 0 ? HistoryQuarantine.relative(files.get(i)) : files.get(i).getName()).append(i + 1 < files.size() ? ", " : "");
            }
            return b.append(" (").append(bytes).append(" bytes)").toString();
        }
    }

    /** What the quarantine keeps, oldest first (empty when nothing was ever kept aside, or after a clear). */
    public List<KeptCopy> keptCopies() {
        List<KeptCopy> out = new ArrayList<KeptCopy>();
        for (Map.Entry<Integer, Map<String, File>> e : HistoryQuarantine.entries(path).entrySet()) {
            out.add(new KeptCopy(e.getKey(), new ArrayList<File>(e.getValue().values()),
                    e.getValue().containsKey(HistoryQuarantine.HISTORY)));
        }
        return out;
    }

    /**
     * The files and directory a clear deletes: the journal (first: it must not outlive its
     * snapshot), a compaction's journal, the history, its temporary file, the quarantine
     * directory with every file kept in it, and the single kept copies of older versions with
     * their temporary files.
     */
    public List<File> files() {
        List<File> out = new ArrayList<File>();
        out.add(UserHistoryFile.journal(path));
        out.add(UserHistoryFile.compactingJournal(path));
        out.add(new File(path));
        out.add(new File(path + ".tmp"));
        out.add(HistoryQuarantine.dir(path));
        for (String kind : new String[] {HistoryQuarantine.HISTORY, HistoryQuarantine.JOURNAL, HistoryQuarantine.COMPACTING}) {
            out.add(HistoryQuarantine.legacy(path, kind));
            if (!HistoryQuarantine.HISTORY.equals(kind)) out.add(new File(HistoryQuarantine.legacy(path, kind).getPath() + ".tmp"));
        }
        return out;
    }

    /**
     * Write what changed since the history was read or written: appended to the journal, or a
     * full snapshot when the journal is due for compaction (see the class comment). Returns true
     * when something was written; false when there was nothing to write or a clear overtook it.
     *
     * @throws IOException a one-line reason naming the file (it cannot be written, or a damaged
     *     file that could not be moved aside is in the way); the next save then writes a full snapshot
     */
    public boolean save() throws IOException {
        return save(false);
    }

    /**
     * The keyboard is going away: write a full snapshot if anything is in the journal or changed,
     * so the next start reads one file. Returns true when something was written.
     */
    public boolean close() throws IOException {
        return save(true);
    }

    private boolean save(boolean compact) throws IOException {
        synchronized (fileLock) {
            String json = null;
            byte[] records = null;
            long changes;
            long generation;
            synchronized (this) {
                if (history == null) return false;
                synchronized (history) {
                    changes = history.changes();
                    boolean full = compact || compactionDue || snapshotLength < 0;
                    if (changes == savedChanges && !compactionDue && !(compact && journalLength > 0)) return false;
                    if (!writable) {
                        throw new IOException(path + ": not saving the user history over the damaged file that could not be moved aside");
                    }
                    HistoryJournal.Pending pending = recorder.drain();
                    long journalAfter = (journalLength > 0 ? journalLength : HistoryJournal.HEADER_LENGTH) + pending.bytes.length;
                    full |= pending.overflowed || journalAfter > Math.max(journalLimit, snapshotLength);
                    if (full) {
                        json = history.toJson();
                        history.sortEntries();  // as the snapshot reads back: the journal after it replays bit for bit
                    }
                    else records = pending.bytes;
                    // Until this write succeeds, what was drained is only in memory: a failed write compacts next time.
                    compactionDue = true;
                }
                generation = clears;
            }
            Runnable hook = beforeWrite;
            if (hook != null) hook.run();
            synchronized (this) {
                if (generation != clears) return false;  // cleared since the snapshot: it must not come back
            }
            long written = json != null ? compact(json.getBytes(StandardCharsets.UTF_8)) : append(records);
            synchronized (this) {
                if (generation == clears) {
                    compactionDue = false;
                    if (changes > savedChanges) savedChanges = changes;
                }
            }
            lastSaveBytes = written;
            lastSaveCompacted = json != null;
            return true;
        }
    }

    /** Append framed records to the journal (its header first when there is none), fsync; the bytes written. */
    private long append(byte[] records) throws IOException {
        File journal = UserHistoryFile.journal(path);
        RandomAccessFile out = new RandomAccessFile(journal, "rw");
        long written = records.length;
        try {
            if (journalLength == 0) {
                out.setLength(0);
                out.write(HistoryJournal.header(snapshotLength, snapshotCrc));
                written += HistoryJournal.HEADER_LENGTH;
                journalLength = HistoryJournal.HEADER_LENGTH;
            }
            out.seek(journalLength);  // over anything a failed append left
            out.write(records);
            out.setLength(journalLength + records.length);
            out.getFD().sync();
        } finally {
            out.close();
        }
        synchronized (this) {
            journalLength += records.length;
        }
        return written;
    }

    /**
     * Write {@code snapshot} as the history file: the journal renamed to {@code .journal.old},
     * the snapshot written atomically, {@code .journal.old} deleted; the bytes written.
     */
    private long compact(byte[] snapshot) throws IOException {
        File journal = UserHistoryFile.journal(path);
        File old = UserHistoryFile.compactingJournal(path);
        if (journal.exists()) {
            if (old.exists()) throw new IOException(path + ": cannot compact the history while " + old.getName() + " exists");
            if (!journal.renameTo(old)) throw new IOException(path + ": cannot rename " + journal.getName() + " to " + old.getName());
        }
        if (compactCrashHook != null) compactCrashHook.run();
        UserHistory.writeAtomically(path, snapshot);
        synchronized (this) {
            snapshotLength = snapshot.length;
            snapshotCrc = HistoryJournal.crc(snapshot, 0, snapshot.length);
            journalLength = 0;
        }
        // Left behind, it is recognised as compacted (it does not belong to the new snapshot) and deleted at the next open.
        old.delete();
        return snapshot.length;
    }

    /**
     * Bring back the history kept as number {@code number} ({@link #keptCopies()}): its file
     * with its journals replayed becomes the history, in place (the keyboard's sessions keep
     * theirs, now holding it), and is written at once as a full snapshot; its kept files are
     * then deleted. The history it replaces is not lost: when it holds anything, it is kept in
     * the quarantine first, under a new number, and can be restored in turn.
     *
     * @throws UserHistoryException one line naming the kept file, when it cannot be used (damaged,
     *     or made with other settings); nothing changed
     * @throws IOException one line naming the file, when the store may not write (a file that could
     *     not be read or kept aside is in the way: clear or restart first) or the write failed
     */
    public void restore(int number) throws UserHistoryException, IOException {
        synchronized (fileLock) {
            UserHistory kept = UserHistoryFile.readKept(path, number);
            List<File> keptFiles = HistoryQuarantine.files(path, number);
            synchronized (this) {
                UserHistory live = history();
                if (!writable) {
                    throw new IOException(path + ": not restoring over a history file that could not be read or kept aside"
                            + " (clear the history or restart the keyboard first)");
                }
                String mismatch = live.otherSettings(kept);
                if (mismatch != null) throw new UserHistoryException(HistoryQuarantine.relative(keptFiles.get(0)) + ": " + mismatch);
                synchronized (live) {
                    if (live.numWords() > 0 || live.weight() != null) {
                        int n = HistoryQuarantine.next(path);
                        HistoryQuarantine.copy(live.toJson().getBytes(StandardCharsets.UTF_8), path, n, HistoryQuarantine.HISTORY);
                    }
                    live.replaceWith(kept);
                    recorder.discard();  // the journal cannot replay a replacement: a snapshot follows
                    compactionDue = true;
                    notice = null;
                }
                if (recent != null) recent.restarted();
            }
            close();  // the snapshot, now (the journal folded in and deleted)
            for (File f : keptFiles) f.delete();
            if (HistoryQuarantine.entries(path).isEmpty()) HistoryQuarantine.deleteAll(path);
        }
    }

    /** Tests: runs in a compaction after the journal was renamed, before the snapshot is written (throw to "crash"). */
    volatile Runnable compactCrashHook;

    /**
     * Forget what the keyboard learnt: the history in memory (its weight too), the sentences kept
     * with it, and the files (after a write under way). Returns false if a file stays (it could
     * not be deleted).
     */
    public boolean clear() {
        synchronized (this) {
            clears++;
            if (recent != null) recent.clearHistory();  // the history too; a weight being chosen is dropped
            else if (history != null) history.clear();
            savedChanges = history != null ? history.changes() : 0;
            recorder.discard();  // the files go: the next save writes a snapshot
            snapshotLength = -1;
            journalLength = 0;
            compactionDue = false;
        }
        boolean gone = true;
        synchronized (fileLock) {
            for (File f : files()) {
                if (f.equals(HistoryQuarantine.dir(path))) gone &= HistoryQuarantine.deleteAll(path);
                else if (f.exists() && !f.delete()) gone = false;
            }
        }
        if (gone) {
            synchronized (this) {
                writable = true;  // the damaged file that blocked saving is gone
            }
        }
        return gone;
    }
}
