package org.keyboardlm.demo;

import android.inputmethodservice.InputMethodService;
import android.view.KeyEvent;
import android.view.inputmethod.InputConnection;

import org.keyboardlm.core.EditorConnection;

/**
 * The core's {@link EditorConnection} over the service's current {@link InputConnection}
 * (fetched per call: it changes with the field); false or null when there is none.
 */
final class InputConnectionEditor implements EditorConnection {
    private final InputMethodService service;

    InputConnectionEditor(InputMethodService service) {
        this.service = service;
    }

    @Override
    public CharSequence getTextBeforeCursor(int n) {
        InputConnection ic = service.getCurrentInputConnection();
        return ic == null ? null : ic.getTextBeforeCursor(n, 0);
    }

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

    @Override
    public void sendDeleteKey() {
        service.sendDownUpKeyEvents(KeyEvent.KEYCODE_DEL);
    }
}
