package org.keyboardlm.core;

/**
 * What {@link InputLogic} needs of the text field it types into: the subset of Android's
 * {@code InputConnection} it uses, with the same meanings, so the keyboard service adapts one
 * to the other in a few lines and a test fakes it over a string. Positions are UTF-16 units.
 *
 * <ul>
 * <li>The composing region is a span the editor marks as "being typed".
 * {@link #setComposingText} replaces it (or the selection, or inserts at the cursor when there
 * is neither) and marks the new text as composing; {@link #commitText} replaces it the same
 * way and marks nothing; {@link #finishComposingText} keeps its text and unmarks it.</li>
 * <li>{@link #deleteSurroundingText} deletes around the selection, not the composing region.</li>
 * <li>After edits (one batch, between {@link #beginBatchEdit} and {@link #endBatchEdit}, counts
 * as one), the editor reports the new selection and composing region later, through the
 * keyboard's {@link InputLogic#updateSelection}.</li>
 * </ul>
 *
 * <p>Each call may cross processes (an IPC on Android), which is why {@link InputLogic} reads
 * the text only when its cached window is not valid.
 */
public interface EditorConnection {
    /** Up to {@code n} units before the selection's start; null when the editor is gone or cannot tell. */
    CharSequence getTextBeforeCursor(int n);

    /** Up to {@code n} units after the selection's end; null when the editor is gone or cannot tell. */
    CharSequence getTextAfterCursor(int n);

    boolean beginBatchEdit();

    boolean endBatchEdit();

    /** Mark {@code [start, end)} (absolute positions) as the composing region. */
    boolean setComposingRegion(int start, int end);

    /** Replace the composing region (else the selection) by {@code text}, marked as composing; {@code newCursorPosition} 1: the cursor after it. */
    boolean setComposingText(CharSequence text, int newCursorPosition);

    /** Keep the composing text as it is, unmarked. */
    boolean finishComposingText();

    /** Replace the composing region (else the selection) by {@code text}, unmarked; {@code newCursorPosition} 1: the cursor after it. */
    boolean commitText(CharSequence text, int newCursorPosition);

    /** Delete {@code before} units before the selection and {@code after} units after it. */
    boolean deleteSurroundingText(int before, int after);

    /** A delete key event, for when there is nothing the keyboard knows of to delete (the editor may still act on it). */
    void sendDeleteKey();
}
