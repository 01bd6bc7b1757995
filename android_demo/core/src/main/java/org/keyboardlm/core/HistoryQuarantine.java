package org.keyboardlm.core;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Where the history's unusable files are kept: one directory beside the history file,
 * {@code <name>.quarantine/}, each file named for the read that set it aside and what it was
 * ({@code 3.history}, {@code 3.journal}, {@code 3.journal.old}: the third time something was
 * kept). A number is one more than the largest in use, and a file is never moved or written
 * over one that exists, so a later quarantine never replaces an earlier one. One directory,
 * because Android's backup rules exclude paths, not patterns: one rule keeps every kept file
 * out of backups and device transfers.
 *
 * <p>Files kept aside under the older single names ({@code <name>.bad},
 * {@code <name>.journal.bad}, {@code <name>.journal.old.bad}) are adopted on the next read,
 * each under a number of its own ({@link #adoptLegacy}).
 */
final class HistoryQuarantine {
    /** Appended to the history file's name: the directory. */
    static final String SUFFIX = UserHistoryFile.QUARANTINE_SUFFIX;
    /** What a kept file was: the snapshot, its journal, a compaction's journal. */
    static final String HISTORY = "history";
    static final String JOURNAL = "journal";
    static final String COMPACTING = "journal.old";
    /** The older single names, in the order of {@link #HISTORY}, {@link #JOURNAL}, {@link #COMPACTING}. */
    static final String LEGACY_SUFFIX = UserHistoryFile.BAD_SUFFIX;

    private HistoryQuarantine() {
    }

    /** The quarantine directory of the history file at {@code path}. */
    static File dir(String path) {
        return new File(path + SUFFIX);
    }

    /** The older single name of a kept file of this kind. */
    static File legacy(String path, String kind) {
        String suffix = HISTORY.equals(kind) ? "" : JOURNAL.equals(kind) ? HistoryJournal.SUFFIX : HistoryJournal.COMPACTING_SUFFIX;
        return new File(path + suffix + LEGACY_SUFFIX);
    }

    /** The kept files by number (ascending), each number's files by kind; names that are not ours are left out. */
    static TreeMap<Integer, Map<String, File>> entries(String path) {
        TreeMap<Integer, Map<String, File>> out = new TreeMap<Integer, Map<String, File>>();
        String[] names = dir(path).list();
        if (names == null) return out;
        for (String name : names) {
            int dot = name.indexOf('.');
            if (dot < 1 || dot > 9) continue;
            String kind = name.substring(dot + 1);
            if (!HISTORY.equals(kind) && !JOURNAL.equals(kind) && !COMPACTING.equals(kind)) continue;
            int n;
            try {
                n = Integer.parseInt(name.substring(0, dot));
            } catch (NumberFormatException e) {
                continue;
            }
            if (n < 1 || !name.substring(0, dot).equals(Integer.toString(n))) continue;
            Map<String, File> files = out.get(n);
            if (files == null) {
                files = new TreeMap<String, File>();
                out.put(n, files);
            }
            files.put(kind, new File(dir(path), name));
        }
        return out;
    }

    /** One more than the largest number in use (1 when none is). */
    static int next(String path) {
        TreeMap<Integer, Map<String, File>> e = entries(path);
        return e.isEmpty() ? 1 : e.lastKey() + 1;
    }

    /** Where number {@code n}'s file of {@code kind} goes. */
    static File target(String path, int n, String kind) {
        return new File(dir(path), n + "." + kind);
    }

    /**
     * Move {@code f} into the quarantine as number {@code n}'s {@code kind}; the file it became.
     * Throws, naming the file, when the directory cannot be made, the name is taken (never
     * replaced) or the rename fails; {@code f} then stays where it is.
     */
    static File move(File f, String path, int n, String kind) throws IOException {
        File to = prepare(path, n, kind);
        if (!f.renameTo(to)) throw new IOException("cannot move " + f.getName() + " to " + relative(to));
        return to;
    }

    /** Write {@code bytes} into the quarantine as number {@code n}'s {@code kind} (atomically, fsynced); the file. */
    static File copy(byte[] bytes, String path, int n, String kind) throws IOException {
        File to = prepare(path, n, kind);
        UserHistory.writeAtomically(to.getPath(), bytes);
        return to;
    }

    private static File prepare(String path, int n, String kind) throws IOException {
        File dir = dir(path);
        if (!dir.isDirectory() && !dir.mkdirs() && !dir.isDirectory()) throw new IOException("cannot make the directory " + dir.getName());
        File to = target(path, n, kind);
        if (to.exists()) throw new IOException(relative(to) + " exists already and is never replaced");
        return to;
    }

    /** A kept file's name as the notices write it: {@code user.history.quarantine/3.history}. */
    static String relative(File f) {
        File parent = f.getParentFile();
        return (parent == null ? "" : parent.getName() + "/") + f.getName();
    }

    /**
     * Move the files kept under the older single names into the quarantine, each under a new
     * number; a note per file for the notice. A file that cannot be moved stays (a clear still
     * deletes it: {@link HistoryStore#files()} lists the old names).
     */
    static void adoptLegacy(String path, List<String> notes) {
        for (String kind : new String[] {HISTORY, JOURNAL, COMPACTING}) {
            File old = legacy(path, kind);
            if (!old.isFile()) continue;
            try {
                notes.add(old.getName() + " (kept aside earlier) moved to " + relative(move(old, path, next(path), kind)));
            } catch (IOException e) {
                notes.add(old.getName() + " (kept aside earlier) stays: " + e.getMessage());
            }
        }
    }

    /** Delete the quarantine and every file in it; false if something stays. */
    static boolean deleteAll(String path) {
        File dir = dir(path);
        if (!dir.exists()) return true;
        boolean all = true;
        File[] files = dir.listFiles();
        if (files != null) for (File f : files) all &= f.delete() || !f.exists();
        return dir.delete() && all;
    }

    /** Every file kept under number {@code n}, in kind order. */
    static List<File> files(String path, int n) {
        Map<String, File> e = entries(path).get(n);
        return e == null ? new ArrayList<File>() : new ArrayList<File>(e.values());
    }
}
