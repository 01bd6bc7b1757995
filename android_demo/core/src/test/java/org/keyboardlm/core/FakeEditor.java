package org.keyboardlm.core;

import java.util.ArrayList;
import java.util.List;

/**
 * A text field for {@link InputLogic} tests: an {@link EditorConnection} over a StringBuilder
 * with a selection and a composing region, following Android's {@code BaseInputConnection}
 * (composing text replaces the composing region, else the selection; deletions shift the
 * region). Like Android, it reports the selection and composing region after each batch of
 * edits (or each edit outside a batch) when they changed, and the reports wait in
 * {@link #updates} until the test delivers them ({@link #deliver}), as the UI thread would.
 * The user's and the app's own changes ({@link #moveCursor}, {@link #select}, {@link #paste},
 * {@link #setText}) are reported the same way.
 */
final class FakeEditor implements EditorConnection {
    final StringBuilder text = new StringBuilder();
    int selStart;
    int selEnd;
    int compStart = -1;
    int compEnd = -1;
    /** Text reads (IPCs on Android). */
    int reads;
    int deleteKeys;
    private int batch;
    private int[] reported;
    /** Pending selection reports: old start, old end, new start, new end, composing start, composing end. */
    final List<int[]> updates = new ArrayList<int[]>();

    FakeEditor(String initial) {
        text.append(initial);
        selStart = selEnd = initial.length();
        reported = state();
    }

    /** The text with the cursor as {@code |} (a selection as {@code [..]}, the composing region as {@code <..>}, a cursor at its end as {@code <..|>}). */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i <= text.length(); i++) {
            if (i == compStart) b.append('<');
            if (i == selStart && selStart == selEnd) b.append('|');
            else if (i == selStart) b.append('[');
            else if (i == selEnd) b.append(']');
            if (i == compEnd && compEnd >= 0) b.append('>');
            if (i < text.length()) b.append(text.charAt(i));
        }
        return b.toString();
    }

    /** The text alone. */
    String plain() {
        return text.toString();
    }

    /** Deliver the pending reports to {@code logic}, as Android's onUpdateSelection. */
    void deliver(InputLogic logic) {
        while (!updates.isEmpty()) {
            int[] u = updates.remove(0);
            logic.updateSelection(u[0], u[1], u[2], u[3], u[4], u[5]);
        }
    }

    // -- the user and the app ----------------------------------------------------------------

    void moveCursor(int position) {
        selStart = selEnd = position;
        changed();
    }

    void select(int start, int end) {
        selStart = start;
        selEnd = end;
        changed();
    }

    /** Text inserted at the cursor by the app (a paste): not the keyboard's. */
    void paste(String s) {
        replace(selStart, selEnd, s);
        selStart = selEnd = selStart + s.length();
        changed();
    }

    /** The app replaces the whole text ({@code setText}): the cursor goes to the end, no composing region. */
    void setText(String s) {
        text.setLength(0);
        text.append(s);
        selStart = selEnd = s.length();
        compStart = compEnd = -1;
        changed();
    }

    // -- EditorConnection --------------------------------------------------------------------

    @Override
    public CharSequence getTextBeforeCursor(int n) {
        reads++;
        return text.substring(Math.max(0, selStart - n), selStart);
    }

    @Override
    public CharSequence getTextAfterCursor(int n) {
        reads++;
        return text.substring(selEnd, Math.min(text.length(), selEnd + n));
    }

    @Override
    public boolean beginBatchEdit() {
        batch++;
        return true;
    }

    @Override
    public boolean endBatchEdit() {
        if (batch == 0) throw new IllegalStateException("endBatchEdit without beginBatchEdit");
        batch--;
        changed();
        return true;
    }

    @Override
    public boolean setComposingRegion(int start, int end) {
        int a = Math.max(0, Math.min(start, end));
        int b = Math.min(text.length(), Math.max(start, end));
        if (a == b) {
            compStart = compEnd = -1;
        } else {
            compStart = a;
            compEnd = b;
        }
        changed();
        return true;
    }

    @Override
    public boolean setComposingText(CharSequence t, int newCursorPosition) {
        if (newCursorPosition != 1) throw new UnsupportedOperationException("the fake editor only puts the cursor after the text");
        int start = compStart >= 0 ? compStart : selStart;
        int end = compStart >= 0 ? compEnd : selEnd;
        replace(start, end, t.toString());
        if (t.length() == 0) {
            compStart = compEnd = -1;
        } else {
            compStart = start;
            compEnd = start + t.length();
        }
        selStart = selEnd = start + t.length();
        changed();
        return true;
    }

    @Override
    public boolean finishComposingText() {
        compStart = compEnd = -1;
        changed();
        return true;
    }

    @Override
    public boolean commitText(CharSequence t, int newCursorPosition) {
        if (newCursorPosition != 1) throw new UnsupportedOperationException("the fake editor only puts the cursor after the text");
        int start = compStart >= 0 ? compStart : selStart;
        int end = compStart >= 0 ? compEnd : selEnd;
        replace(start, end, t.toString());
        compStart = compEnd = -1;
        selStart = selEnd = start + t.length();
        changed();
        return true;
    }

    @Override
    public boolean deleteSurroundingText(int before, int after) {
        int a = Math.min(text.length(), selEnd + after);
        delete(selEnd, a);
        int b = Math.max(0, selStart - before);
        delete(b, selStart);
        changed();
        return true;
    }

    @Override
    public void sendDeleteKey() {
        deleteKeys++;
        if (selEnd > selStart) {
            delete(selStart, selEnd);
        } else if (selStart > 0) {
            delete(selStart - Character.charCount(text.codePointBefore(selStart)), selStart);
        }
        changed();
    }

    // -- internals ---------------------------------------------------------------------------

    private void replace(int start, int end, String s) {
        delete(start, end);
        text.insert(start, s);
        selStart = shiftInsert(selStart, start, s.length());
        selEnd = shiftInsert(selEnd, start, s.length());
        if (compStart >= 0) {
            compStart = shiftInsert(compStart, start, s.length());
            compEnd = shiftInsert(compEnd, start, s.length());
        }
    }

    private static int shiftInsert(int pos, int at, int n) {
        return pos > at ? pos + n : pos;
    }

    private void delete(int start, int end) {
        if (end <= start) return;
        text.delete(start, end);
        selStart = shiftDelete(selStart, start, end);
        selEnd = shiftDelete(selEnd, start, end);
        if (compStart >= 0) {
            compStart = shiftDelete(compStart, start, end);
            compEnd = shiftDelete(compEnd, start, end);
            if (compStart == compEnd) compStart = compEnd = -1;
        }
    }

    private static int shiftDelete(int pos, int start, int end) {
        if (pos >= end) return pos - (end - start);
        return Math.min(pos, start);
    }

    private int[] state() {
        return new int[] {selStart, selEnd, compStart, compEnd};
    }

    private void changed() {
        if (batch > 0) return;
        int[] now = state();
        if (java.util.Arrays.equals(now, reported)) return;
        updates.add(new int[] {reported[0], reported[1], now[0], now[1], now[2], now[3]});
        reported = now;
    }
}
