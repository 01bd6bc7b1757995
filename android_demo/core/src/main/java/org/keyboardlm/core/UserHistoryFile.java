package org.keyboardlm.core;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.util.ArrayList;
import java.util.List;

/**
 * The user history read from its file for the keyboard, never silently lost: a file that
 * cannot be used ({@link UserHistory#load} refuses its content) is kept aside in the history's
 * quarantine ({@code <name>.quarantine/}, numbered: {@link HistoryQuarantine}; an earlier kept
 * file is never replaced), and the keyboard starts an empty history with a one-line
 * {@link #notice} saying what was wrong and where the file went, for the log and for the user.
 * A notice never quotes the file's content, which may be a learnt word. Only when the file
 * cannot be kept aside is the history not {@link #writable}: saving would overwrite the damaged
 * file, which the user may still want to restore or send.
 *
 * <p>A file that cannot be read at all (an I/O error, not enough memory: the file system's
 * trouble, not the content's) is not set aside: the result is {@link #readFailed}, not
 * writable, and nothing is touched, so the caller may read again ({@link HistoryStore} retries
 * with a backoff) and nothing is saved over the unread file.
 *
 * <p>The file is a snapshot, and the changes since it are in its journal
 * ({@link HistoryJournal}, {@code <name>.journal}): the history read is the snapshot with the
 * journal's records replayed. A journal that belongs to the snapshot (its header names the
 * snapshot's length and CRC-32) is replayed up to its first torn or damaged record; when it had
 * such a record, a copy of the whole journal is kept in the quarantine, the journal is cut to
 * the records kept (so they stay on disk, and the next save appends after them), and the notice
 * says how many records were kept and where the damage starts. A journal that does not belong
 * to the snapshot (another file was put in its place, or the snapshot was kept aside as
 * damaged) is kept aside the same way, unreplayed. A {@code <name>.journal.old} is the journal
 * of a compaction that did not finish: replayed when it belongs to the snapshot (the new
 * snapshot was never put in place), deleted when it does not (the new snapshot, which holds its
 * records, was).
 */
public final class UserHistoryFile {
    /** The older name of a single damaged copy ({@code <name>.bad}): adopted into the quarantine on a read, deleted by a clear. */
    public static final String BAD_SUFFIX = ".bad";
    /** Appended to the history file's name: the directory of the numbered kept files. */
    public static final String QUARANTINE_SUFFIX = ".quarantine";

    /** The history read, or an empty one (no file, or a damaged or unreadable one). */
    public final UserHistory history;
    /** True when {@link #history} was read from the file. */
    public final boolean loaded;
    /** False when a damaged file could not be kept aside, or a file could not be read: do not save over it. */
    public final boolean writable;
    /** Null, or one line: what was wrong with the file and what became of it. */
    public final String notice;
    /** True when a file could not be read at all (I/O, memory): nothing was set aside; reading again may succeed. */
    public final boolean readFailed;
    /** The snapshot read: its length and CRC-32 (-1 and 0 when none was read). */
    final long snapshotLength;
    final int snapshotCrc;
    /** Bytes of {@code <name>.journal} that were replayed and stay on disk to append to (0: none). */
    final long journalLength;
    /** Journal records replayed. */
    public final int replayed;
    /** True when the history read holds records not in the snapshot + journal on disk: write a full snapshot next. */
    public final boolean compactionDue;

    private UserHistoryFile(UserHistory history, boolean loaded, boolean writable, String notice, long snapshotLength,
                            int snapshotCrc, long journalLength, int replayed, boolean compactionDue, boolean readFailed) {
        this.history = history;
        this.loaded = loaded;
        this.writable = writable;
        this.notice = notice;
        this.snapshotLength = snapshotLength;
        this.snapshotCrc = snapshotCrc;
        this.journalLength = journalLength;
        this.replayed = replayed;
        this.compactionDue = compactionDue;
        this.readFailed = readFailed;
    }

    private static UserHistoryFile empty(boolean writable, String notice) {
        return new UserHistoryFile(new UserHistory(), false, writable, notice, -1, 0, 0, 0, false, false);
    }

    /** The quarantine directory of {@code path}, where unusable files are kept, numbered. */
    public static File quarantine(String path) {
        return HistoryQuarantine.dir(path);
    }

    /** The journal of the history file at {@code path}. */
    public static File journal(String path) {
        return new File(path + HistoryJournal.SUFFIX);
    }

    /** The journal of a compaction under way (or interrupted) at {@code path}. */
    public static File compactingJournal(String path) {
        return new File(path + HistoryJournal.COMPACTING_SUFFIX);
    }

    /** Numbers the files one read keeps aside: one number for all of them, taken on the first. */
    private static final class Aside {
        final String path;
        int number;

        Aside(String path) {
            this.path = path;
        }

        private int number() {
            if (number == 0) number = HistoryQuarantine.next(path);
            return number;
        }

        String move(File f, String kind) throws IOException {
            return HistoryQuarantine.relative(HistoryQuarantine.move(f, path, number(), kind));
        }

        String copy(byte[] bytes, String kind) throws IOException {
            return HistoryQuarantine.relative(HistoryQuarantine.copy(bytes, path, number(), kind));
        }
    }

    /** The file's bytes, or null when it does not exist. */
    private static byte[] readIfExists(File f) throws IOException {
        return f.exists() ? UserHistory.readBytes(f.getPath()) : null;
    }

    /** Nothing could be read: nothing is touched, and nothing may be saved over the files. */
    private static UserHistoryFile unread(String path, String why, List<String> notes) {
        notes.add(0, "cannot read the user history now (" + why + "); it is left as it is and nothing is saved over it");
        return new UserHistoryFile(new UserHistory(), false, false, path + ": " + join(notes), -1, 0, 0, 0, false, true);
    }

    /** Read the history at {@code path} and replay its journal (see the class comment). */
    public static UserHistoryFile open(String path) {
        File file = new File(path);
        File journal = journal(path);
        File old = compactingJournal(path);
        List<String> notes = new ArrayList<String>();
        HistoryQuarantine.adoptLegacy(path, notes);
        byte[] snapshot;
        byte[] oldBytes;
        byte[] journalBytes;
        try {
            snapshot = readIfExists(file);
            oldBytes = readIfExists(old);
            journalBytes = readIfExists(journal);
        } catch (IOException e) {
            return unread(path, e.getMessage(), notes);
        } catch (OutOfMemoryError e) {
            return unread(path, "not enough memory to read it", notes);
        }
        Aside aside = new Aside(path);
        if (snapshot == null) {
            if (oldBytes == null && journalBytes == null) return empty(true, notes.isEmpty() ? null : path + ": " + join(notes));
            boolean kept = asideJournals(path, aside, "there is no history file " + file.getName() + " for it", notes);
            return empty(kept, path + ": " + join(notes));
        }
        String problem;
        try {
            UserHistory history = UserHistory.parse(snapshot, path);
            return withJournals(path, aside, history, snapshot.length, HistoryJournal.crc(snapshot, 0, snapshot.length),
                    oldBytes, journalBytes, notes);
        } catch (UserHistoryException e) {
            problem = e.getMessage();
        } catch (OutOfMemoryError e) {
            return unread(path, "not enough memory to read it", notes);
        } catch (RuntimeException e) {
            problem = path + ": cannot read the user history (" + e.getClass().getName() + ")";  // no message: it may quote the file
        }
        List<String> journalNotes = new ArrayList<String>();
        boolean journalsAside = asideJournals(path, aside, "it applies to the damaged file", journalNotes);
        String more = journalNotes.isEmpty() ? "" : "; " + join(journalNotes);
        String before = notes.isEmpty() ? "" : "; " + join(notes);
        try {
            String kept = aside.move(file, HistoryQuarantine.HISTORY);
            return empty(journalsAside, problem + "; kept aside as " + kept + ", starting an empty user history" + more + before);
        } catch (IOException e) {
            return empty(false, problem + "; cannot keep it aside (" + e.getMessage()
                    + "), so an empty user history is used and not saved until the history is cleared" + more + before);
        }
    }

    /**
     * The snapshot read: replay {@code .journal.old} and {@code .journal} ({@code oldBytes},
     * {@code journalBytes}: their bytes, null when absent) onto it where they belong to it.
     */
    private static UserHistoryFile withJournals(String path, Aside aside, UserHistory history, long length, int crc,
                                                byte[] oldBytes, byte[] journalBytes, List<String> notes) {
        File journal = journal(path);
        File old = compactingJournal(path);
        boolean writable = true;
        int replayed = 0;
        long journalLength = 0;
        if (oldBytes != null) {
            HistoryJournal.Replay head = HistoryJournal.readHeader(oldBytes);
            if (head.problem == null && (head.baseLength != length || head.baseCrc != crc)) {
                // The compaction put its snapshot in place: the records are in it.
                if (!old.delete()) notes.add("cannot delete " + old.getName() + ", whose records are in the history file");
            } else if (head.problem == null) {
                // The compaction stopped before its snapshot was in place: the records are only here.
                HistoryJournal.Replay r = HistoryJournal.replay(oldBytes, history);
                replayed += r.records;
                if (r.problem != null) writable &= keepPrefix(old, oldBytes, aside, HistoryQuarantine.COMPACTING, r, notes) >= 0;
                if (journalBytes != null) {
                    writable &= aside(journal, aside, HistoryQuarantine.JOURNAL, null, notes);
                    notes.add(journal.getName() + " was not replayed: it cannot follow an unfinished compaction");
                }
                return result(history, path, notes, writable, length, crc, 0, replayed, true);
            } else {
                writable &= aside(old, aside, HistoryQuarantine.COMPACTING, head, notes);
            }
        }
        if (journalBytes != null) {
            HistoryJournal.Replay head = HistoryJournal.readHeader(journalBytes);
            if (head.problem == null && (head.baseLength != length || head.baseCrc != crc)) {
                writable &= aside(journal, aside, HistoryQuarantine.JOURNAL, new HistoryJournal.Replay(head.baseLength, head.baseCrc, 0, 0,
                        "it belongs to another history file (" + head.baseLength + " bytes, not this one's " + length + ")"), notes);
            } else if (head.problem == null) {
                HistoryJournal.Replay r = HistoryJournal.replay(journalBytes, history);
                replayed += r.records;
                long kept = r.problem == null ? r.validLength : keepPrefix(journal, journalBytes, aside, HistoryQuarantine.JOURNAL, r, notes);
                if (kept >= 0) journalLength = kept;
                else writable = false;
            } else {
                writable &= aside(journal, aside, HistoryQuarantine.JOURNAL, head, notes);
            }
        }
        return result(history, path, notes, writable, length, crc, journalLength, replayed, false);
    }

    private static UserHistoryFile result(UserHistory history, String path, List<String> notes, boolean writable, long length,
                                          int crc, long journalLength, int replayed, boolean compactionDue) {
        String notice = notes.isEmpty() ? null : path + ": " + join(notes);
        return new UserHistoryFile(history, true, writable, notice, length, crc, journalLength, replayed, compactionDue, false);
    }

    /**
     * Keep journal {@code f} aside in the quarantine as {@code kind}, adding a note of why
     * ({@code r}'s problem and how many records were kept); false when it cannot be moved (it
     * stays, and must not be appended to or deleted: the store is then not writable).
     */
    private static boolean aside(File f, Aside aside, String kind, HistoryJournal.Replay r, List<String> notes) {
        String what = r == null ? "" : r.problem + (r.records > 0 ? " (the " + r.records + " records before it were kept)" : "") + "; ";
        try {
            notes.add(f.getName() + ": " + what + "kept aside as " + aside.move(f, kind));
            return true;
        } catch (IOException e) {
            notes.add(f.getName() + ": " + what + "cannot keep it aside (" + e.getMessage() + "), so the history is not saved until it is cleared");
            return false;
        }
    }

    /**
     * A journal damaged after {@code r.validLength} bytes: a copy of all of it is kept in the
     * quarantine (the damaged bytes too), then the journal is cut to its valid records, which stay
     * on disk to append to. Returns the journal's length, or -1 when the copy could not be written
     * (the journal is then left as it is, and must not be appended to or compacted away).
     */
    private static long keepPrefix(File f, byte[] bytes, Aside aside, String kind, HistoryJournal.Replay r, List<String> notes) {
        String what = f.getName() + ": " + r.problem + (r.records > 0 ? " (the " + r.records + " records before it were kept)" : "") + "; ";
        String kept;
        try {
            kept = aside.copy(bytes, kind);
        } catch (IOException e) {
            notes.add(what + "cannot copy it aside (" + e.getMessage() + "), so the history is not saved until it is cleared");
            return -1;
        }
        try {
            RandomAccessFile out = new RandomAccessFile(f, "rw");
            try {
                out.setLength(r.validLength);
                out.getFD().sync();
            } finally {
                out.close();
            }
        } catch (IOException e) {
            // The next append writes over the damaged tail anyway (it starts at the valid length).
            notes.add(f.getName() + ": cannot cut it to its valid records (" + e.getMessage() + ")");
        }
        notes.add(what + "copied to " + kept + ", and cut to the records kept");
        return r.validLength;
    }

    /** Keep every journal of {@code path} aside (the snapshot they belong to is gone); false if one stays. */
    private static boolean asideJournals(String path, Aside aside, String why, List<String> notes) {
        boolean all = true;
        if (compactingJournal(path).exists()) {
            all &= aside(compactingJournal(path), aside, HistoryQuarantine.COMPACTING, new HistoryJournal.Replay(-1, 0, 0, 0, why), notes);
        }
        if (journal(path).exists()) {
            all &= aside(journal(path), aside, HistoryQuarantine.JOURNAL, new HistoryJournal.Replay(-1, 0, 0, 0, why), notes);
        }
        return all;
    }

    /**
     * The history kept as number {@code number} in the quarantine of {@code path}, read as the
     * history file it was: its snapshot with its journals replayed where they belong to it (a
     * torn tail stops the replay, as on a read). Nothing is moved or written. Throws, in one
     * line naming the kept file, when there is no such snapshot or it cannot be used.
     */
    static UserHistory readKept(String path, int number) throws UserHistoryException {
        File snapshot = HistoryQuarantine.target(path, number, HistoryQuarantine.HISTORY);
        if (!snapshot.isFile()) throw new UserHistoryException(HistoryQuarantine.relative(snapshot) + ": no kept history file with that number");
        byte[] bytes;
        try {
            bytes = UserHistory.readBytes(snapshot.getPath());
        } catch (IOException e) {
            throw new UserHistoryException(HistoryQuarantine.relative(snapshot) + ": cannot read it (" + e.getMessage() + ")");
        }
        UserHistory history = UserHistory.parse(bytes, HistoryQuarantine.relative(snapshot));
        long length = bytes.length;
        int crc = HistoryJournal.crc(bytes, 0, bytes.length);
        for (String kind : new String[] {HistoryQuarantine.COMPACTING, HistoryQuarantine.JOURNAL}) {
            File f = HistoryQuarantine.target(path, number, kind);
            if (!f.isFile()) continue;
            byte[] journal;
            try {
                journal = UserHistory.readBytes(f.getPath());
            } catch (IOException e) {
                throw new UserHistoryException(HistoryQuarantine.relative(f) + ": cannot read it (" + e.getMessage() + ")");
            }
            HistoryJournal.Replay head = HistoryJournal.readHeader(journal);
            if (head.problem == null && head.baseLength == length && head.baseCrc == crc) HistoryJournal.replay(journal, history);
        }
        return history;
    }

    private static String join(List<String> notes) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < notes.size(); i++) b.append(i == 0 ? "" : "; ").append(notes.get(i));
        return b.toString();
    }
}
