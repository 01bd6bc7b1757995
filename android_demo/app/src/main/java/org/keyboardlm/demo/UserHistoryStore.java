package org.keyboardlm.demo;

import android.content.Context;

import java.io.File;
import java.io.IOException;
import java.util.List;

import org.keyboardlm.core.HistoryStore;
import org.keyboardlm.core.UserHistoryException;

/**
 * The user's history store ({@link HistoryStore}, in the core), one per app user, in the app's
 * private storage ({@code getFilesDir()/user.history}, its journal, and damaged files kept,
 * numbered, in {@code user.history.quarantine/}). One object per process, shared by the
 * keyboard and the setup screen (both run in the app's process), so clearing or restoring it
 * in the setup screen also changes what the running keyboard holds, and a save under way
 * cannot bring back what was cleared. Nothing here sends it anywhere, and the app's backup and
 * data-extraction rules (res/xml) keep these files out of backups and device transfers.
 *
 * <p>Every call here may wait for the disk (a save's fsync, a first read of the file): the
 * setup screen makes them on a background thread, never the UI thread.
 */
final class UserHistoryStore {
    static final String FILE = "user.history";

    private static HistoryStore store;

    private UserHistoryStore() {
    }

    /** The store; the history file is read on the first {@link HistoryStore#history()} (the keyboard's loading thread). */
    static synchronized HistoryStore get(Context context) {
        if (store == null) store = new HistoryStore(new File(context.getFilesDir(), FILE).getPath());
        return store;
    }

    /** Why the history read was not used as it was (one line naming files, never their content), or null. */
    static String notice(Context context) {
        return get(context).notice();
    }

    /** What the quarantine keeps, oldest first. */
    static List<HistoryStore.KeptCopy> kept(Context context) {
        return get(context).keptCopies();
    }

    /**
     * Forget what the keyboard learnt: the history in memory, its file, the kept copies and the
     * sentences kept; false if a file stays.
     */
    static boolean clear(Context context) {
        return get(context).clear();
    }

    /** Bring back kept copy {@code number} (the history it replaces is kept in its place); throws one line why not. */
    static void restore(Context context, int number) throws IOException, UserHistoryException {
        get(context).restore(number);
    }
}
