package org.keyboardlm.demo;

import android.content.Context;
import android.util.Log;

import java.io.File;
import java.io.IOException;

import org.keyboardlm.core.UserHistory;
import org.keyboardlm.core.UserHistoryException;

/**
 * The user's history (org.keyboardlm.core.UserHistory), one per app user, in the app's private
 * storage ({@code getFilesDir()/user.history}). One object per process, shared by the keyboard
 * and the setup screen (both run in the app's process), so clearing it in the setup screen
 * also clears what the running keyboard holds. Nothing here sends it anywhere.
 */
final class UserHistoryStore {
    static final String FILE = "user.history";
    private static final String TAG = "kblm";

    private static UserHistory history;
    /** The history's clock when it was last read or written (0: no file); -1 forces a write. */
    private static long savedClock;

    private UserHistoryStore() {
    }

    private static File file(Context context) {
        return new File(context.getFilesDir(), FILE);
    }

    /** The user's history, read on first use; a damaged file is logged and replaced by an empty history. */
    static synchronized UserHistory get(Context context) {
        if (history != null) return history;
        File f = file(context);
        savedClock = 0;
        if (f.isFile()) {
            try {
                history = UserHistory.load(f.getPath());
                savedClock = history.clock();
            } catch (UserHistoryException e) {
                Log.w(TAG, e.getMessage() + "; starting an empty user history");
                savedClock = -1;  // the next save replaces the damaged file
            } catch (RuntimeException | OutOfMemoryError e) {
                Log.w(TAG, f.getPath() + ": cannot read the user history (" + e + "); starting an empty one");
                savedClock = -1;
            }
        }
        if (history == null) history = new UserHistory();
        return history;
    }

    /** Write the history if it learnt anything since it was read or written; failures are logged. */
    static synchronized void save(Context context) {
        if (history == null || history.clock() == savedClock) return;
        try {
            long clock = history.clock();
            history.save(file(context).getPath());
            savedClock = clock;
        } catch (IOException | RuntimeException e) {
            Log.w(TAG, "cannot save the user history: " + e);
        }
    }

    /** Forget what the keyboard learnt: the history in memory and its file; false if the file stays. */
    static synchronized boolean clear(Context context) {
        if (history != null) history.clear();
        savedClock = 0;
        File f = file(context);
        new File(f.getPath() + ".tmp").delete();
        return (!f.exists() || f.delete()) && !f.exists();
    }
}
