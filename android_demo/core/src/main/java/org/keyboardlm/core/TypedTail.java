package org.keyboardlm.core;

/**
 * How much of the end of a field's text before the cursor the keyboard itself typed (keys and
 * tapped suggestions) since anything else changed it. {@link TextField} learns only words that
 * lie wholly inside it, so a paste, an editor's own change or the text a field already holds
 * is never learnt, even when a typed space or a tap later finishes the pasted word.
 *
 * <p>The keyboard sees only the text before the cursor, and reads at most a window of its last
 * characters (the service's {@code WINDOW}). {@link #next} therefore works out each change as
 * an edit at the end: the text before it that both strings share, then the units deleted and
 * the units inserted. A keyboard edit adds its inserted units to the tail and takes its deleted
 * ones off; any other change that inserts something leaves no tail, and one that only deletes
 * (the cursor moved back) keeps what is left of it. When the window is full, an edit moves its
 * start, so when the strings do not share all but their last {@link #MAX_SHIFT} units, the
 * shared text is looked for at shifts of up to {@link #MAX_SHIFT} units; the shift with the
 * smallest edit wins. A change that no such edit explains leaves no tail.
 */
final class TypedTail {
    /** The largest window shift, and the largest edit, one keyboard update is assumed to make. */
    static final int MAX_SHIFT = 128;

    private String text;
    private int length;

    /** A new field: nothing is known yet (its first text is the field's own, not typed). */
    void reset() {
        text = null;
        length = 0;
    }

    /** UTF-16 units at the end of the last text that the keyboard typed. */
    int length() {
        return length;
    }

    /** Where the typed tail of the last text starts (its length when nothing was typed). */
    int start() {
        return text == null ? 0 : text.length() - length;
    }

    /**
     * Follow the field to {@code now}: {@code byKeyboard} true when the keyboard's own keys or
     * taps made the change since the last call (and nothing else did); returns the new length.
     */
    int next(String now, boolean byKeyboard) {
        String before = text;
        text = now;
        if (before == null) return length = 0;
        int[] edit = editAt(before, now, 0);
        if (!explained(edit)) {
            int[] best = null;
            for (int d = 1; d <= MAX_SHIFT; d++) {
                for (int shift : new int[] {d, -d}) {
                    int[] e = editAt(before, now, shift);
                    if (explained(e) && (best == null || e[0] + e[1] < best[0] + best[1])) best = e;
                }
            }
            if (best == null) return length = 0;
            edit = best;
        }
        int deleted = edit[0];
        int inserted = edit[1];
        if (byKeyboard) return length = Math.max(0, length - deleted) + inserted;
        return length = inserted > 0 ? 0 : Math.max(0, length - deleted);
    }

    /** An edit small enough to be one keyboard update. */
    private static boolean explained(int[] edit) {
        return edit[0] <= MAX_SHIFT && edit[1] <= MAX_SHIFT;
    }

    /**
     * {deleted, inserted} at the end when {@code before[i]} is {@code now[i - shift]} up to the
     * first difference (shift > 0: the window's start moved on by shift units; < 0: back).
     */
    static int[] editAt(String before, String now, int shift) {
        int a = Math.max(0, shift);
        int b = Math.max(0, -shift);
        if (a > before.length() || b > now.length()) return new int[] {Integer.MAX_VALUE / 2, Integer.MAX_VALUE / 2};
        int m = 0;
        int n = Math.min(before.length() - a, now.length() - b);
        while (m < n && before.charAt(a + m) == now.charAt(b + m)) m++;
        return new int[] {before.length() - a - m, now.length() - b - m};
    }
}
