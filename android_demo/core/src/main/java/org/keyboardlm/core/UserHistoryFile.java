package org.keyboardlm.core;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.util.ArrayList;
import java.util.List;

/**
 * The user history read from its file for the keyboard, never silently lost: a file that
 * cannot be used ({@link UserHistory#load} refuses it, or reading it fails otherwise) is kept
 * aside as {@code <name>.bad}, and the keyboard starts an empty history with a one-line
 * {@link #notice} saying what was wrong and where the file went, for the log and for the user.
 * Only when the file cannot be moved aside is the history not {@link #writable}: saving would
 * overwrite the damaged file, which the user may still want to recover or send.
 *
 * <p>The file is a snapshot, and the changes since it are in its journal
 * ({@link HistoryJournal}, {@code <name>.journal}): the history read is the snapshot with the
 * journal's records replayed. A journal that belongs to the snapshot (its header names the
 * snapshot's length and CRC-32) is replayed up to its first torn or damaged record; when it had
 * such a record, a copy of the whole journal is kept aside as {@code <name>.journal.bad}, the
 * journal is cut to the records kept (so they stay on disk, and the next save appends after
 * them), and the notice says how many records were kept and where the damage starts. A journal
 * that does not belong to the snapshot (another file was put in
 * its place, or the snapshot was kept aside as damaged) is kept aside the same way, unreplayed.
 * A {@code <name>.journal.old} is the journal of a compaction that did not finish: replayed
 * when it belongs to the snapshot (the new snapshot was never put in place), deleted when it
 * does not (the new snapshot, which holds its records, was).
 */
public final class UserHistoryFile {
    /** Appended to a damaged file's name when it is kept aside. */
    public static final String BAD_SUFFIX = ".bad";

    /** The history read, or an empty one (no file, or a damaged one). */
    public final UserHistory history;
    /** True when {@link #history} was read from the file. */
    public final boolean loaded;
    /** False when a damaged file could not be moved aside: do not save over it. */
    public final boolean writable;
    /** Null, or one line: what was wrong with the file and what became of it. */
    public final String notice;
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
                            int snapshotCrc, long journalLength, int replayed, boolean compactionDue) {
        this.history = history;
        this.loaded = loaded;
        this.writable = writable;
        this.notice = notice;
        this.snapshotLength = snapshotLength;
        this.snapshotCrc = snapshotCrc;
        this.journalLength = journalLength;
        this.replayed = replayed;
        this.compactionDue = compactionDue;
    }

    /** Where a damaged {@code path} is kept. */
    public static File badCopy(String path) {
        return new File(path + BAD_SUFFIX);
    }

    /** The journal of the history file at {@code path}. */
    public static File journal(String path) {
        return new File(path + HistoryJournal.SUFFIX);
    }

    /** The journal of a compaction under way (or interrupted) at {@code path}. */
    public static File compactingJournal(String path) {
        return new File(path + HistoryJournal.COMPACTING_SUFFIX);
    }

    /** Where a damaged journal (or one that belongs to no snapshot) of {@code path} is kept. */
    public static File badJournal(String path) {
        return new File(path + HistoryJournal.SUFFIX + BAD_SUFFIX);
    }

    /** Where a compaction's journal that cannot be used is kept. */
    public static File badCompactingJournal(String path) {
        return new File(path + HistoryJournal.COMPACTING_SUFFIX + BAD_SUFFIX);
    }

    /** Read the history at {@code path} and replay its journal (see the class comment). */
    public static UserHistoryFile open(String path) {
        File file = new File(path);
        File journal = journal(path);
        File old = compactingJournal(path);
        if (!file.exists()) {
            if (!journal.exists() && !old.exists()) return new UserHistoryFile(new UserHistory(), false, true, null, -1, 0, 0, 0, false);
            List<String> notes = new ArrayList<String>();
            boolean aside = asideJournals(path, "there is no history file " + file.getName() + " for it", notes);
            return new UserHistoryFile(new UserHistory(), false, aside, path + ": " + join(notes), -1, 0, 0, 0, false);
        }
        String problem;
        try {
            byte[] bytes = UserHistory.readAll(path);
            UserHistory history = UserHistory.parse(bytes, path);
            return withJournals(path, history, bytes.length, HistoryJournal.crc(bytes, 0, bytes.length));
        } catch (UserHistoryException e) {
            problem = e.getMessage();
        } catch (RuntimeException | OutOfMemoryError e) {
            problem = path + ": cannot read the user history (" + e + ")";
        }
        File bad = badCopy(path);
        boolean replacing = bad.exists();
        List<String> notes = new ArrayList<String>();
        boolean journalsAside = asideJournals(path, "it applies to the damaged file", notes);
        String more = notes.isEmpty() ? "" : "; " + join(notes);
        if (file.renameTo(bad)) {
            return new UserHistoryFile(new UserHistory(), false, journalsAside, problem + "; kept aside as " + bad.getName()
                    + (replacing ? " (replacing an older one)" : "") + ", starting an empty user history" + more, -1, 0, 0, 0, false);
        }
        return new UserHistoryFile(new UserHistory(), false, false, problem + "; cannot move it aside to " + bad.getName()
                + ", so an empty user history is used and not saved until the history is cleared" + more, -1, 0, 0, 0, false);
    }

    /** The snapshot read: replay {@code .journal.old} and {@code .journal} onto it where they belong to it. */
    private static UserHistoryFile withJournals(String path, UserHistory history, long length, int crc) {
        File journal = journal(path);
        File old = compactingJournal(path);
        List<String> notes = new ArrayList<String>();
        boolean writable = true;
        boolean compactionDue = false;
        int replayed = 0;
        long journalLength = 0;
        if (old.exists()) {
            byte[] bytes = read(old, notes);
            writable &= bytes != null;  // unread records must not be compacted away
            HistoryJournal.Replay head = bytes == null ? null : HistoryJournal.readHeader(bytes);
            if (head != null && head.problem == null && (head.baseLength != length || head.baseCrc != crc)) {
                // The compaction put its snapshot in place: the records are in it.
                if (!old.delete()) notes.add("cannot delete " + old.getName() + ", whose records are in the history file");
            } else if (head != null && head.problem == null) {
                // The compaction stopped before its snapshot was in place: the records are only here.
                HistoryJournal.Replay r = HistoryJournal.replay(bytes, history);
                replayed += r.records;
                compactionDue = true;
                if (r.problem != null) writable &= keepPrefix(old, bytes, path, r, notes) >= 0;
                if (journal.exists()) {
                    writable &= aside(journal, path, null, notes);
                    notes.add(journal.getName() + " was not replayed: it cannot follow an unfinished compaction");
                }
                return result(history, path, notes, writable, length, crc, 0, replayed, true);
            } else if (bytes != null) {
                writable &= aside(old, path, head, notes);
            }
        }
        if (journal.exists()) {
            byte[] bytes = read(journal, notes);
            writable &= bytes != null;
            HistoryJournal.Replay head = bytes == null ? null : HistoryJournal.readHeader(bytes);
            if (head != null && head.problem == null && (head.baseLength != length || head.baseCrc != crc)) {
                writable &= aside(journal, path, new HistoryJournal.Replay(head.baseLength, head.baseCrc, 0, 0,
                        "it belongs to another history file (" + head.baseLength + " bytes, not this one's " + length + ")"), notes);
            } else if (head != null && head.problem == null) {
                HistoryJournal.Replay r = HistoryJournal.replay(bytes, history);
                replayed += r.records;
                long kept = r.problem == null ? r.validLength : keepPrefix(journal, bytes, path, r, notes);
                if (kept >= 0) journalLength = kept;
                else writable = false;
            } else if (bytes != null) {
                writable &= aside(journal, path, head, notes);
            }
        }
        return result(history, path, notes, writable, length, crc, journalLength, replayed, compactionDue);
    }

    private static UserHistoryFile result(UserHistory history, String path, List<String> notes, boolean writable, long length,
                                          int crc, long journalLength, int replayed, boolean compactionDue) {
        String notice = notes.isEmpty() ? null : path + ": " + join(notes);
        return new UserHistoryFile(history, true, writable, notice, length, crc, journalLength, replayed, compactionDue);
    }

    private static byte[] read(File f, List<String> notes) {
        try {
            return UserHistory.readAll(f.getPath());
        } catch (UserHistoryException e) {
            notes.add("cannot read " + f.getName() + " (" + e.getMessage() + ")");
            return null;
        }
    }

    /**
     * Keep journal {@code f} aside as {@code .journal.bad}, adding a note of why ({@code r}'s problem
     * and how many records were kept); false when it cannot be moved (it stays, and must not be
     * appended to or deleted: the store is then not writable).
     */
    private static boolean aside(File f, String path, HistoryJournal.Replay r, List<String> notes) {
        File bad = new File(f.getPath() + BAD_SUFFIX);
        boolean replacing = bad.exists();
        if (replacing && !bad.delete()) {
            notes.add(f.getName() + ": " + (r == null ? "set aside" : r.problem) + "; cannot replace " + bad.getName() + ", so it stays");
            return false;
        }
        String what = r == null ? "" : r.problem + (r.records > 0 ? " (the " + r.records + " records before it were kept)" : "") + "; ";
        if (f.renameTo(bad)) {
            notes.add(f.getName() + ": " + what + "kept aside as " + bad.getName() + (replacing ? " (replacing an older one)" : ""));
            return true;
        }
        notes.add(f.getName() + ": " + what + "cannot move it aside to " + bad.getName() + ", so the history is not saved until it is cleared");
        return false;
    }

    /**
     * A journal damaged after {@code r.validLength} bytes: a copy of all of it is kept aside as
     * {@code <journal>.bad} (the damaged bytes too), then the journal is cut to its valid records,
     * which stay on disk to append to. Returns the journal's length, or -1 when the copy could not
     * be written (the journal is then left as it is, and must not be appended to or compacted away).
     */
    private static long keepPrefix(File f, byte[] bytes, String path, HistoryJournal.Replay r, List<String> notes) {
        File bad = new File(f.getPath() + BAD_SUFFIX);
        boolean replacing = bad.exists();
        String what = f.getName() + ": " + r.problem + (r.records > 0 ? " (the " + r.records + " records before it were kept)" : "") + "; ";
        try {
            UserHistory.writeAtomically(bad.getPath(), bytes);
        } catch (IOException e) {
            notes.add(what + "cannot copy it to " + bad.getName() + " (" + e.getMessage() + "), so the history is not saved until it is cleared");
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
        notes.add(what + "copied to " + bad.getName() + (replacing ? " (replacing an older one)" : "") + ", and cut to the records kept");
        return r.validLength;
    }

    /** Keep every journal of {@code path} aside (the snapshot they belong to is gone); false if one stays. */
    private static boolean asideJournals(String path, String why, List<String> notes) {
        boolean all = true;
        for (File f : new File[] {compactingJournal(path), journal(path)}) {
            if (f.exists()) all &= aside(f, path, new HistoryJournal.Replay(-1, 0, 0, 0, why), notes);
        }
        return all;
    }

    private static String join(List<String> notes) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < notes.size(); i++) b.append(i == 0 ? "" : "; ").append(notes.get(i));
        return b.toString();
    }
}
