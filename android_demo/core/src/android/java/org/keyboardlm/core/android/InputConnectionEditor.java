package org.keyboardlm.core.android;

import android.inputmethodservice.InputMethodService;
import android.view.KeyEvent;
import android.view.inputmethod.InputConnection;

import org.keyboardlm.core.EditorConnection;
import org.keyboardlm.core.InputLogic;

/**
 * The core's {@link EditorConnection} over an {@link InputMethodService}'s current
 * {@link InputConnection}, for {@link InputLogic#startInput}. The connection is fetched on every
 * call, because it changes with the field; with none (the field is gone) the text reads return
 * null and the edits return false, as {@link EditorConnection} allows.
 *
 * <p>The one class of this library that uses Android's API: it ships in the same jar, compiled
 * against Android's API as a compile-only dependency, and is loaded only by a keyboard that
 * uses it. Every call it makes exists from API level 9 on.
 */
public final class InputConnectionEditor implements EditorConnection {
    private final InputMethodService service;

    /** An editor over {@code service}'s current input connection. */
    public InputConnectionEditor(InputMethodService service) {
        if (service == null) throw new IllegalArgumentException("service must not be null");
        this.service = service;
    }

    /** {@inheritDoc} Null when the service has no input connection. */
    @Override
    public CharSequence getTextBeforeCursor(int n) {
        InputConnection ic = service.getCurrentInputConnection();
        return ic == null ? null : ic.getTextBeforeCursor(n, 0);
    }

    /** {@inheritDoc} Null when the service has no input connection. */
    @Override
    public CharSequence getTextAfterCursor(int n) {
        InputConnection ic = service.getCurrentInputConnection();
        return ic == null ? null : ic.getTextAfterCursor(n, 0);
    }

    @Override
    public boolean beginBatchEdit() {
        InputConnection ic = service.getCurrentInputConnection();
        return ic != null && ic.beginBatchEdit();
    }

    @Override
    public boolean endBatchEdit() {
        InputConnection ic = service.getCurrentInputConnection();
        return ic != null && ic.endBatchEdit();
    }

    @Override
    public boolean setComposingRegion(int start, int end) {
        InputConnection ic = service.getCurrentInputConnection();
        return ic != null && ic.setComposingRegion(start, end);
    }

    @Override
    public boolean setComposingText(CharSequence text, int newCursorPosition) {
        InputConnection ic = service.getCurrentInputConnection();
        return ic != null && ic.setComposingText(text, newCursorPosition);
    }

    @Override
    public boolean finishComposingText() {
        InputConnection ic = service.getCurrentInputConnection();
        return ic != null && ic.finishComposingText();
    }

    @Override
    public boolean commitText(CharSequence text, int newCursorPosition) {
        InputConnection ic = service.getCurrentInputConnection();
        return ic != null && ic.commitText(text, newCursorPosition);
    }

    @Override
    public boolean deleteSurroundingText(int before, int after) {
        InputConnection ic = service.getCurrentInputConnection();
        return ic != null && ic.deleteSurroundingText(before, after);
    }

    /** A delete key press and release ({@code KEYCODE_DEL}) through the service. */
    @Override
    public void sendDeleteKey() {
        service.sendDownUpKeyEvents(KeyEvent.KEYCODE_DEL);
    }
}
