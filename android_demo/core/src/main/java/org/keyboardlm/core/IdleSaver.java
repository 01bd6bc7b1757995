package org.keyboardlm.core;

import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Work the keyboard does only while it is idle (saving the history, choosing its weight), on
 * its own executor, never the ranking thread: {@link #idle()} schedules it after a delay,
 * {@link #busy()} cancels it when the keyboard is used again before it started. Work that has
 * started runs to its end (a save is not torn). So switching fields quickly writes nothing,
 * and the file is written once the keyboard rests.
 */
public final class IdleSaver {
    /** The default delay after the keyboard went idle. */
    public static final long DEFAULT_DELAY_MILLIS = 2000;

    private final ScheduledExecutorService executor;
    private final long delayMillis;
    private final Runnable work;
    private Future<?> pending;

    public IdleSaver(ScheduledExecutorService executor, long delayMillis, Runnable work) {
        if (executor == null || work == null) throw new IllegalArgumentException("executor and work must not be null");
        if (delayMillis < 0) throw new IllegalArgumentException("delayMillis must be >= 0, got " + delayMillis);
        this.executor = executor;
        this.delayMillis = delayMillis;
        this.work = work;
    }

    /** The keyboard went idle (its view closed): the work runs after the delay unless {@link #busy()} comes first. */
    public synchronized void idle() {
        if (pending != null) pending.cancel(false);
        pending = executor.schedule(work, delayMillis, TimeUnit.MILLISECONDS);
    }

    /** The keyboard is in use again: work not yet started is cancelled. Returns true when some was. */
    public synchronized boolean busy() {
        if (pending == null) return false;
        boolean cancelled = pending.cancel(false);
        pending = null;
        return cancelled;
    }

    /** Run the work now, on the executor (the keyboard is going away), in place of any pending run. */
    public synchronized Future<?> now() {
        if (pending != null) pending.cancel(false);
        pending = null;
        return executor.submit(work);
    }
}
