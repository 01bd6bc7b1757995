package org.keyboardlm.demo;

import android.content.Context;
import android.util.Log;

import java.io.File;
import java.io.IOException;

import org.keyboardlm.core.RecentSentences;
import org.keyboardlm.core.UserHistory;
import org.keyboardlm.core.UserHistoryFile;

/**
 * The user's history (org.keyboardlm.core.UserHistory), one per app user, in the app's private
 * storage ({@code getFilesDir()/user.history}). One object per process, shared by the keyboard
 * and the setup screen (both run in the app's process), so clearing it in the setup screen
 * also clears what the running keyboard holds. Nothing here sends it anywhere, and the app's
 * backup and data-extraction rules (res/xml) keep these files out of backups and device
 * transfers.
 *
 * <p>A damaged file is never silently replaced: {@link UserHistoryFile} keeps it aside as
 * {@code user.history.bad}, the reason is logged, and while that copy exists
 * {@link #damagedCopy} names it for the keyboard and the setup screen to tell the user.
 *
 * <p>With it, in memory only, the user's newest finished sentences ({@link RecentSentences}),
 * on which the keyboard chooses the history's weight; clearing the history forgets them too.
 */
final class UserHistoryStore {
    static final String FILE = "user.history";
    private static final String TAG = "kblm";

    private static UserHistory history;
    /** The history's clock when it was last read or written (0: no file, or a damaged one kept aside). */
    private static long savedClock;
    /** The history's weight when it was last read or written. */
    private static Double savedWeight;
    /** The newest sentences of the history's user, never written (see {@link RecentSentences}). */
    private static RecentSentences recent;
    /** False when a damaged file could not be moved aside: saving would overwrite it. */
    private static boolean writable = true;

    private UserHistoryStore() {
    }

    private static File file(Context context) {
        return new File(context.getFilesDir(), FILE);
    }

    /**
     * The user's history, read on first use; a damaged file is kept aside as
     * {@code user.history.bad} and an empty history starts (see {@link UserHistoryFile}), with
     * the reason in the log.
     */
    static synchronized UserHistory get(Context context) {
        if (history != null) return history;
        UserHistoryFile opened = UserHistoryFile.open(file(context).getPath());
        if (opened.notice != null) Log.w(TAG, opened.notice);
        history = opened.history;
        writable = opened.writable;
        savedClock = opened.loaded ? history.clock() : 0;
        savedWeight = history.weight();
        return history;
    }

    /** The damaged history file kept aside, while it exists (the user is told until they clear it); else null. */
    static File damagedCopy(Context context) {
        File bad = UserHistoryFile.badCopy(file(context).getPath());
        return bad.exists() ? bad : null;
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
        if (!writable) {
            Log.w(TAG, file(context).getPath() + ": not saving the user history over the damaged file that could not be moved aside");
            return;
        }
        try {
            long clock = history.clock();
            history.save(file(context).getPath());
            savedClock = clock;
            savedWeight = weight;
        } catch (IOException | RuntimeException e) {
            Log.w(TAG, "cannot save the user history: " + e);
        }
    }

    /**
     * Forget what the keyboard learnt: the history in memory, its file, a damaged copy kept
     * aside and the sentences kept; false if a file stays.
     */
    static synchronized boolean clear(Context context) {
        if (recent != null) recent.clearHistory();  // the history too, and a weight being chosen is dropped
        else if (history != null) history.clear();
        savedClock = 0;
        savedWeight = null;
        File f = file(context);
        boolean gone = true;
        for (File each : new File[] {f, new File(f.getPath() + ".tmp"), UserHistoryFile.badCopy(f.getPath())}) {
            if (each.exists() && !each.delete()) {
                Log.w(TAG, each.getPath() + ": cannot delete");
                gone = false;
            }
        }
        if (gone) writable = true;  // the damaged file that blocked saving is gone
        return gone;
    }
}
