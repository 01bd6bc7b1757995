package org.keyboardlm.core;

import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * When the keyboard writes the history, on its own executor, never the ranking thread:
 *
 * <ul>
 * <li><b>While idle.</b> {@link #idle()} schedules the idle work (saving, choosing the history's
 * weight) after a delay; {@link #busy()} cancels it when the keyboard is used again before it
 * started. Work that has started runs to its end (a save is not torn). So switching fields
 * quickly writes nothing, and the file is written once the keyboard rests.</li>
 * <li><b>While in use.</b> {@link #changed()} (the history changed: {@link HistoryStore#setChangeListener})
 * schedules the flush (a save, which appends what changed to the journal: a few dozen bytes and
 * one fsync) at most {@code flushMillis} later, unless one is scheduled and has not started. So
 * a long chat is on disk while the keyboard stays up, and a crash loses at most the last
 * {@code flushMillis} of learning; typing never waits for it, and a keyboard that learns nothing
 * writes nothing.</li>
 * </ul>
 */
public final class IdleSaver {
    /** The default delay after the keyboard went idle. */
    public static final long DEFAULT_DELAY_MILLIS = 2000;
    /** The default bound on how long a change waits for the disk while the keyboard is in use. */
    public static final long DEFAULT_FLUSH_MILLIS = 5000;

    private final ScheduledExecutorService executor;
    private final long delayMillis;
    private final Runnable work;
    private final long flushMillis;
    private final Runnable flush;
    private Future<?> pending;
    /** A flush is scheduled and has not started. */
    private boolean flushScheduled;
    private final Runnable flushTask = new Runnable() {
        @Override
        public void run() {
            synchronized (IdleSaver.this) {
                flushScheduled = false;  // a change from now on schedules the next flush
            }
            flush.run();
        }
    };

    /** Idle work only: {@link #changed()} does nothing. */
    public IdleSaver(ScheduledExecutorService executor, long delayMillis, Runnable work) {
        this(executor, delayMillis, work, 0, null);
    }

    /**
     * Idle work after {@code delayMillis} of rest, and {@code flush} (null: none) at most
     * {@code flushMillis} after a change while the keyboard is in use.
     */
    public IdleSaver(ScheduledExecutorService executor, long delayMillis, Runnable work, long flushMillis, Runnable flush) {
        if (executor == null || work == null) throw new IllegalArgumentException("executor and work must not be null");
        if (delayMillis < 0) throw new IllegalArgumentException("delayMillis must be >= 0, got " + delayMillis);
        if (flush != null && flushMillis <= 0) throw new IllegalArgumentException("flushMillis must be > 0, got " + flushMillis);
        this.executor = executor;
        this.delayMillis = delayMillis;
        this.work = work;
        this.flushMillis = flushMillis;
        this.flush = flush;
    }

    /** The keyboard went idle (its view closed): the work runs after the delay unless {@link #busy()} comes first. */
    public synchronized void idle() {
        if (pending != null) pending.cancel(false);
        pending = executor.schedule(work, delayMillis, TimeUnit.MILLISECONDS);
    }

    /** The keyboard is in use again: idle work not yet started is cancelled (a flush is not). Returns true when some was. */
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

    /**
     * The history changed (any thread; cheap, safe under the history's lock): the flush runs
     * within {@code flushMillis}, unless one is already scheduled. Nothing after the executor
     * shut down (the keyboard's last save is its own).
     */
    public synchronized void changed() {
        if (flush == null || flushScheduled) return;
        try {
            executor.schedule(flushTask, flushMillis, TimeUnit.MILLISECONDS);
            flushScheduled = true;
        } catch (RejectedExecutionException e) {
            // Shut down: the keyboard is going away and writes its last snapshot itself.
        }
    }

    /** The bound on how long a change waits for the flush (0: no flush). */
    public long flushMillis() {
        return flush == null ? 0 : flushMillis;
    }
}
