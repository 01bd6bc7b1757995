package org.keyboardlm.demo;

import android.content.Context;
import android.util.Log;

import java.io.File;
import java.io.IOException;

import org.keyboardlm.core.RecentSentences;
import org.keyboardlm.core.UserHistory;
import org.keyboardlm.core.UserHistoryException;

/**
 * The user's history (org.keyboardlm.core.UserHistory), one per app user, in the app's private
 * storage ({@code getFilesDir()/user.history}). One object per process, shared by the keyboard
 * and the setup screen (both run in the app's process), so clearing it in the setup screen
 * also clears what the running keyboard holds. Nothing here sends it anywhere.
 *
 * <p>With it, in memory only, the user's newest finished sentences ({@link RecentSentences}),
 * on which the keyboard chooses the history's weight; clearing the history forgets them too.
 */
final class UserHistoryStore {
    static final String FILE = "user.history";
    private static final String TAG = "kblm";

    private static UserHistory history;
    /** The history's clock when it was last read or written (0: no file); -1 forces a write. */
    private static long savedClock;
    /** The history's weight when it was last read or written. */
    private static Double savedWeight;
    /** The newest sentences of the history's user, never written (see {@link RecentSentences}). */
    private static RecentSentences recent;

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
                savedWeight = history.weight();
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

    /** The user's newest finished sentences, for the history of {@link #get}; in memory only. */
    static synchronized RecentSentences recentSentences(Context context) {
        UserHistory h = get(context);
        if (recent == null) recent = new RecentSentences(h);
        return recent;
    }

    /** Write the history if it learnt anything, or its weight changed, since it was read or written; failures are logged. */
    static synchronized void save(Context context) {
        if (history == null) return;
        Double weight = history.weight();
        boolean sameWeight = weight == null ? savedWeight == null : weight.equals(savedWeight);
        if (history.clock() == savedClock && sameWeight) return;
        try {
            long clock = history.clock();
            history.save(file(context).getPath());
            savedClock = clock;
            savedWeight = weight;
        } catch (IOException | RuntimeException e) {
            Log.w(TAG, "cannot save the user history: " + e);
        }
    }

    /** Forget what the keyboard learnt: the history in memory, its file and the sentences kept; false if the file stays. */
    static synchronized boolean clear(Context context) {
        if (recent != null) recent.clearHistory();  // the history too, and a weight being chosen is dropped
        else if (history != null) history.clear();
        savedClock = 0;
        savedWeight = null;
        File f = file(context);
        new File(f.getPath() + ".tmp").delete();
        return (!f.exists() || f.delete()) && !f.exists();
    }
}
