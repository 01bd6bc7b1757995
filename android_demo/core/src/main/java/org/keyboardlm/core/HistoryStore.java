package org.keyboardlm.core;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * One user's history file and the history read from it: read once ({@link UserHistoryFile}:
 * a damaged file is kept aside), written when it changed, and cleared. Thread-safe: the
 * keyboard learns on its ranking thread, saves on a separate one ({@link IdleSaver}) and
 * clears from its settings screen.
 *
 * <ul>
 * <li>A save takes a snapshot of the history (its JSON, the same file as Python's) under the
 * history's lock, so learning waits only for the snapshot, never for the disk; it then writes
 * the snapshot atomically (a temporary file, fsync, a rename). Nothing is written when nothing
 * changed since the last read or write ({@link UserHistory#changes()}: learning, unlearning, a
 * removed word, the weight).</li>
 * <li>A clear during a save wins: the save's snapshot, taken before the clear, is not written
 * after it, and the clear deletes the files only once a write under way has finished. So
 * no file holds anything from before the clear once it returns.</li>
 * <li>When a damaged file could not be moved aside, nothing is saved over it until a clear.</li>
 * </ul>
 */
public final class HistoryStore {
    private final String path;
    /** Held while a file is written or deleted. */
    private final Object fileLock = new Object();
    // Guarded by this.
    private UserHistory history;
    private RecentSentences recent;
    private boolean writable = true;
    private String notice;
    private long savedChanges;
    private long clears;
    /** Tests: runs in a save after the snapshot, before the write. */
    volatile Runnable beforeWrite;

    public HistoryStore(String path) {
        if (path == null) throw new IllegalArgumentException("path must not be null");
        this.path = path;
    }

    public String path() {
        return path;
    }

    /** The history, read on first use (an empty one when there is no file or a damaged one was kept aside). */
    public synchronized UserHistory history() {
        if (history != null) return history;
        UserHistoryFile opened = UserHistoryFile.open(path);
        history = opened.history;
        writable = opened.writable;
        notice = opened.notice;
        savedChanges = history.changes();
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

    /** The damaged file kept aside, while it exists; else null. */
    public File damagedCopy() {
        File bad = UserHistoryFile.badCopy(path);
        return bad.exists() ? bad : null;
    }

    /** The files a clear deletes: the history, its temporary file, a damaged copy. */
    public List<File> files() {
        List<File> out = new ArrayList<File>();
        out.add(new File(path));
        out.add(new File(path + ".tmp"));
        out.add(UserHistoryFile.badCopy(path));
        return out;
    }

    /**
     * Write the history if it changed since it was read or written. Returns true when it was
     * written; false when there was nothing to write or a clear overtook it.
     *
     * @throws IOException a one-line reason naming the file (it cannot be written, or a damaged
     *     file that could not be moved aside is in the way)
     */
    public boolean save() throws IOException {
        String json;
        long changes;
        long generation;
        synchronized (this) {
            if (history == null) return false;
            synchronized (history) {
                changes = history.changes();
                if (changes == savedChanges) return false;
                if (!writable) {
                    throw new IOException(path + ": not saving the user history over the damaged file that could not be moved aside");
                }
                json = history.toJson();
            }
            generation = clears;
        }
        synchronized (fileLock) {
            Runnable hook = beforeWrite;
            if (hook != null) hook.run();
            synchronized (this) {
                if (generation != clears) return false;  // cleared since the snapshot: it must not come back
            }
            UserHistory.writeAtomically(path, json.getBytes(StandardCharsets.UTF_8));
            synchronized (this) {
                if (generation == clears && changes > savedChanges) savedChanges = changes;
            }
            return true;
        }
    }

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
        }
        boolean gone = true;
        synchronized (fileLock) {
            for (File f : files()) if (f.exists() && !f.delete()) gone = false;
        }
        if (gone) {
            synchronized (this) {
                writable = true;  // the damaged file that blocked saving is gone
            }
        }
        return gone;
    }
}
