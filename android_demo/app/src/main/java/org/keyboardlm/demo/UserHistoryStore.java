package org.keyboardlm.demo;

import android.content.Context;
import android.util.Log;

import java.io.File;

import org.keyboardlm.core.HistoryStore;

/**
 * The user's history store ({@link HistoryStore}, in the core), one per app user, in the app's
 * private storage ({@code getFilesDir()/user.history}). One object per process, shared by the
 * keyboard and the setup screen (both run in the app's process), so clearing it in the setup
 * screen also clears what the running keyboard holds, and a save under way cannot bring it
 * back. Nothing here sends it anywhere, and the app's backup and data-extraction rules
 * (res/xml) keep these files out of backups and device transfers.
 */
final class UserHistoryStore {
    static final String FILE = "user.history";
    private static final String TAG = "kblm";

    private static HistoryStore store;

    private UserHistoryStore() {
    }

    /** The store; the history file is read on the first {@link HistoryStore#history()} (the keyboard's loading thread). */
    static synchronized HistoryStore get(Context context) {
        if (store == null) store = new HistoryStore(new File(context.getFilesDir(), FILE).getPath());
        return store;
    }

    /** The damaged history file kept aside, while it exists (the user is told until they clear it); else null. */
    static File damagedCopy(Context context) {
        return get(context).damagedCopy();
    }

    /**
     * Forget what the keyboard learnt: the history in memory, its file, a damaged copy kept
     * aside and the sentences kept; false if a file stays.
     */
    static boolean clear(Context context) {
        boolean gone = get(context).clear();
        if (!gone) Log.w(TAG, get(context).path() + ": cannot delete every history file");
        return gone;
    }
}
