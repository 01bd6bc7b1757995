package org.keyboardlm.core;

/**
 * The shift key's state for {@link InputLogic}: one capital, none (shift while auto-caps would
 * give one), or caps lock, which a double tap turns on and the next tap off (LatinIME's shift
 * key: a second tap within the double-tap timeout locks, {@code ViewConfiguration}'s 300 ms by
 * default). Times are the caller's clock in milliseconds ({@code SystemClock.uptimeMillis()} on
 * Android); {@link InputLogic#NO_TIME} never makes a double tap. Not thread-safe (the UI thread).
 */
final class ShiftKey {
    /** Two taps closer than this are a double tap (Android's {@code ViewConfiguration.getDoubleTapTimeout()}). */
    static final long DOUBLE_TAP_MILLIS = 300;

    private boolean once;
    private boolean noAutoCaps;
    private boolean locked;
    /** When the last tap that did not lock came; {@link InputLogic#NO_TIME}: none to pair with. */
    private long lastTap = InputLogic.NO_TIME;

    /** A tap at {@code time}, {@code autoCaps}: whether the field's caps mode gives a capital here. */
    void tap(long time, boolean autoCaps) {
        boolean doubleTap = time != InputLogic.NO_TIME && lastTap != InputLogic.NO_TIME && time - lastTap >= 0
                && time - lastTap < DOUBLE_TAP_MILLIS;
        if (locked) {
            locked = false;
            once = false;
            noAutoCaps = true;  // out of caps lock: the next letter is small, as after shift on an auto-capital
            lastTap = time;
        } else if (doubleTap) {
            locked = true;
            once = false;
            noAutoCaps = false;
            lastTap = InputLogic.NO_TIME;  // a third tap is a tap, which unlocks
        } else {
            if (once || (!noAutoCaps && autoCaps)) {
                once = false;
                noAutoCaps = true;
            } else {
                once = true;
                noAutoCaps = false;
            }
            lastTap = time;
        }
    }

    /** True when the next letter is a capital. */
    boolean shifted(boolean autoCaps) {
        return locked || once || (!noAutoCaps && autoCaps);
    }

    boolean locked() {
        return locked;
    }

    /** A key other than shift was used: a one-letter shift (or its refusal) is spent; caps lock stays. */
    void spent() {
        once = false;
        noAutoCaps = false;
        lastTap = InputLogic.NO_TIME;
    }

    /** A new field: no shift, no caps lock. */
    void reset() {
        spent();
        locked = false;
    }
}
