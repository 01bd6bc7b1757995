package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.After;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * The history saved on a schedule while the keyboard stays up: a change schedules one journal
 * flush within the bound (so a crash loses at most that much), more changes before it starts
 * schedule nothing more, the keyboard's use does not cancel it, and a keyboard that learns
 * nothing writes nothing. A clear made off the UI thread waits for a save's write while learning
 * goes on.
 */
public class HistoryFlushTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private final ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1);

    @After
    public void stop() {
        executor.shutdownNow();
    }

    /** The flushes scheduled and not yet started, with their delays. */
    private List<ScheduledFuture<?>> scheduled() {
        List<ScheduledFuture<?>> out = new ArrayList<ScheduledFuture<?>>();
        for (Runnable r : executor.getQueue()) out.add((ScheduledFuture<?>) r);
        return out;
    }

    @Test
    public void aChangeIsOnDiskWithinTheFlushBoundWithoutTheKeyboardGoingIdle() throws Exception {
        String path = new File(tmp.getRoot(), "user.history").getPath();
        new UserHistory().save(path);  // a history file there already: a flush appends to its journal
        final HistoryStore store = new HistoryStore(path);
        final AtomicInteger flushes = new AtomicInteger();
        final IdleSaver saver = new IdleSaver(executor, IdleSaver.DEFAULT_DELAY_MILLIS, new Runnable() {
            @Override
            public void run() {
            }
        }, 300, new Runnable() {
            @Override
            public void run() {
                try {
                    if (store.save()) flushes.incrementAndGet();
                } catch (java.io.IOException e) {
                    throw new AssertionError(e);
                }
            }
        });
        store.setChangeListener(new Runnable() {
            @Override
            public void run() {
                saver.changed();
            }
        });
        UserHistory h = store.history();
        assertTrue("nothing learnt, nothing scheduled", scheduled().isEmpty());
        h.learnWord(null, "long");
        h.learnWord("long", "chat");
        saver.busy();  // the keyboard is in use: only idle work is cancelled
        List<ScheduledFuture<?>> pending = scheduled();
        assertEquals("one flush for both changes", 1, pending.size());
        assertTrue("within the bound", pending.get(0).getDelay(TimeUnit.MILLISECONDS) <= 300);
        pending.get(0).get(10, TimeUnit.SECONDS);
        assertEquals(1, flushes.get());
        assertFalse("a journal append, not a snapshot", store.lastSaveCompacted());
        // A crash now: the next start reads the file as it is, with no close().
        UserHistoryFile reread = UserHistoryFile.open(path);
        assertEquals(h.toJson(), reread.history.toJson());

        // A change after the flush started schedules the next one.
        h.learnWord("chat", "goes");
        assertEquals(1, scheduled().size());
        scheduled().get(0).get(10, TimeUnit.SECONDS);
        assertEquals(2, flushes.get());
        assertEquals(h.toJson(), UserHistoryFile.open(path).history.toJson());
        assertEquals(300, saver.flushMillis());
    }

    @Test
    public void aSaverWithoutAFlushOrShutDownSchedulesNothing() {
        IdleSaver idleOnly = new IdleSaver(executor, 10, new Runnable() {
            @Override
            public void run() {
            }
        });
        idleOnly.changed();
        assertTrue(scheduled().isEmpty());
        assertEquals(0, idleOnly.flushMillis());
        IdleSaver flushing = new IdleSaver(executor, 10, new Runnable() {
            @Override
            public void run() {
            }
        }, 50, new Runnable() {
            @Override
            public void run() {
            }
        });
        executor.shutdownNow();
        flushing.changed();  // the keyboard went away: its last save is its own, and learning does not throw
    }

    @Test
    public void learningGoesOnWhileAClearWaitsForASavesWrite() throws Exception {
        String path = new File(tmp.getRoot(), "user.history").getPath();
        final HistoryStore store = new HistoryStore(path);
        final UserHistory h = store.history();
        h.learnWord(null, "before");
        final CountDownLatch writing = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        store.beforeWrite = new Runnable() {
            @Override
            public void run() {
                writing.countDown();
                try {
                    release.await(10, TimeUnit.SECONDS);  // a slow fsync
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        Thread saver = new Thread(new Runnable() {
            @Override
            public void run() {
                try {
                    store.save();
                } catch (java.io.IOException e) {
                    throw new AssertionError(e);
                }
            }
        });
        saver.start();
        assertTrue(writing.await(10, TimeUnit.SECONDS));
        final boolean[] cleared = new boolean[1];
        Thread clearer = new Thread(new Runnable() {  // the settings screen's background thread
            @Override
            public void run() {
                cleared[0] = store.clear();
            }
        });
        clearer.start();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (clearer.getState() != Thread.State.BLOCKED && clearer.isAlive() && System.nanoTime() < end) Thread.yield();
        // The ranking thread learns meanwhile: it waits for neither the write nor the clear.
        h.learnWord(null, "meanwhile");
        assertEquals("the clear ran on the history before it waited for the file", 1.0, h.count("meanwhile"), 0.0);
        release.countDown();
        saver.join(10000);
        clearer.join(10000);
        assertTrue(cleared[0]);
        for (File f : store.files()) assertFalse(f.getName(), f.exists());
    }
}
