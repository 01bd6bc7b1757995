package org.keyboardlm.core;

import java.io.File;

/**
 * The user history read from its file for the keyboard, never silently lost: a file that
 * cannot be used ({@link UserHistory#load} refuses it, or reading it fails otherwise) is kept
 * aside as {@code <name>.bad}, and the keyboard starts an empty history with a one-line
 * {@link #notice} saying what was wrong and where the file went, for the log and for the user.
 * Only when the file cannot be moved aside is the history not {@link #writable}: saving would
 * overwrite the damaged file, which the user may still want to recover or send.
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

    private UserHistoryFile(UserHistory history, boolean loaded, boolean writable, String notice) {
        this.history = history;
        this.loaded = loaded;
        this.writable = writable;
        this.notice = notice;
    }

    /** Where a damaged {@code path} is kept. */
    public static File badCopy(String path) {
        return new File(path + BAD_SUFFIX);
    }

    /** Read the history at {@code path}: no file gives an empty history; a damaged one is kept aside (see the class comment). */
    public static UserHistoryFile open(String path) {
        File file = new File(path);
        if (!file.exists()) return new UserHistoryFile(new UserHistory(), false, true, null);
        String problem;
        try {
            return new UserHistoryFile(UserHistory.load(path), true, true, null);
        } catch (UserHistoryException e) {
            problem = e.getMessage();
        } catch (RuntimeException | OutOfMemoryError e) {
            problem = path + ": cannot read the user history (" + e + ")";
        }
        File bad = badCopy(path);
        boolean replacing = bad.exists();
        if (file.renameTo(bad)) {
            return new UserHistoryFile(new UserHistory(), false, true, problem + "; kept aside as " + bad.getName()
                    + (replacing ? " (replacing an older one)" : "") + ", starting an empty user history");
        }
        return new UserHistoryFile(new UserHistory(), false, false, problem + "; cannot move it aside to " + bad.getName()
                + ", so an empty user history is used and not saved until the history is cleared");
    }
}
