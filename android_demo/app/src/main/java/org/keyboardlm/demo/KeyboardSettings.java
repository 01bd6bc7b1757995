package org.keyboardlm.demo;

import android.content.Context;
import android.content.SharedPreferences;

/**
 * The keyboard's settings, set on the setup screen and read by the keyboard when a field or its
 * view starts: key previews and haptic feedback (both on by default, as in AOSP LatinIME), and
 * "pause learning" (off: the keyboard learns in the fields {@code FieldPolicy} allows). The
 * file holds these three switches only, nothing the user typed.
 */
final class KeyboardSettings {
    static final String FILE = "settings";
    static final String KEY_PREVIEWS = "key_previews";
    static final String HAPTICS = "haptic_feedback";
    static final String PAUSE_LEARNING = "pause_learning";

    private KeyboardSettings() {
    }

    static SharedPreferences prefs(Context context) {
        return context.getSharedPreferences(FILE, Context.MODE_PRIVATE);
    }

    /** A pressed character key shows its letter above the finger. */
    static boolean keyPreviews(Context context) {
        return prefs(context).getBoolean(KEY_PREVIEWS, true);
    }

    /** A pressed key vibrates briefly. */
    static boolean haptics(Context context) {
        return prefs(context).getBoolean(HAPTICS, true);
    }

    /** Nothing typed is learnt (from the next field on); suggestions still use what was learnt. */
    static boolean learningPaused(Context context) {
        return prefs(context).getBoolean(PAUSE_LEARNING, false);
    }

    static void set(Context context, String key, boolean value) {
        prefs(context).edit().putBoolean(key, value).apply();
    }
}
