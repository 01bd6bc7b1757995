package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * The history's storage: saved only when it changed, a clear that overtakes a save, idle
 * saving that the keyboard's use cancels, and the Java-only unlearn and remove operations
 * (which keep the file Python reads).
 */
public class HistoryStoreTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private HistoryStore store() throws IOException {
        return new HistoryStore(new File(tmp.getRoot(), "user.history").getPath());
    }

    @Test
    public void aSaveWritesOnlyWhatChanged() throws Exception {
        HistoryStore store = store();
        UserHistory h = store.history();
        assertFalse("nothing learnt, nothing written", store.save());
        assertFalse(new File(store.path()).exists());
        h.learnWord(null, "printer");
        assertTrue(store.save());
        assertFalse(store.save());
        h.setWeight(0.2);
        assertTrue("a new weight is written", store.save());
        assertTrue(h.removeWord("printer"));
        assertTrue("a removal is written", store.save());
        UserHistory back = UserHistoryFile.open(store.path()).history;  // the snapshot and its journal
        assertEquals(h.toJson(), back.toJson());
        assertEquals(0, back.numWords());
        assertTrue(store.close());
        assertEquals("closing writes one snapshot, as Python reads it", h.toJson(), UserHistory.load(store.path()).toJson());
        assertFalse(UserHistoryFile.journal(store.path()).exists());
    }

    @Test
    public void aClearDuringASaveWinsAndItsSnapshotIsNeverWritten() throws Exception {
        final HistoryStore store = store();
        store.history().learnWord(null, "secret");
        final AtomicInteger hooks = new AtomicInteger();
        store.beforeWrite = new Runnable() {
            @Override
            public void run() {
                // The user clears while the save holds its snapshot (the write lock is reentrant).
                if (hooks.incrementAndGet() == 1) assertTrue(store.clear());
            }
        };
        assertFalse("the cleared snapshot is not written", store.save());
        for (File f : store.files()) assertFalse(f.getName(), f.exists());
        assertEquals(0, store.history().numWords());
        store.history().learnWord(null, "after");
        assertTrue(store.save());
        UserHistory back = UserHistoryFile.open(store.path()).history;
        assertEquals(0.0, back.count("secret"), 0.0);
        assertTrue(back.count("after") > 0);
    }

    @Test
    public void aClearFromAnotherThreadWaitsForTheWriteUnderWayThenDeletesIt() throws Exception {
        final HistoryStore store = store();
        store.history().learnWord(null, "secret");
        final Thread[] clearer = new Thread[1];
        store.beforeWrite = new Runnable() {
            @Override
            public void run() {
                clearer[0] = new Thread(new Runnable() {
                    @Override
                    public void run() {
                        store.clear();
                    }
                });
                clearer[0].start();
                // Let the clear run up to the write lock the save holds.
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
                while (clearer[0].getState() != Thread.State.BLOCKED && System.nanoTime() < end) Thread.yield();
            }
        };
        store.save();
        clearer[0].join(5000);
        for (File f : store.files()) assertFalse(f.getName(), f.exists());
        assertEquals(0, store.history().numWords());
    }

    @Test
    public void aDamagedFileIsKeptAsideAndNamed() throws Exception {
        HistoryStore store = store();
        Files.write(new File(store.path()).toPath(), "not json".getBytes("UTF-8"));
        assertEquals(0, store.history().numWords());
        assertTrue(store.notice(), store.notice().contains("kept aside"));
        assertEquals(1, store.keptCopies().size());
        assertTrue(store.keptCopies().get(0).restorable);
        assertTrue(store.clear());
        assertTrue(store.keptCopies().isEmpty());
        assertFalse(UserHistoryFile.quarantine(store.path()).exists());
    }

    @Test
    public void idleWorkRunsAfterTheDelayUnlessTheKeyboardIsUsedAgain() throws Exception {
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1);
        try {
            final AtomicInteger runs = new AtomicInteger();
            IdleSaver saver = new IdleSaver(executor, 200, new Runnable() {
                @Override
                public void run() {
                    runs.incrementAndGet();
                }
            });
            saver.idle();
            assertTrue("cancelled before it ran", saver.busy());
            saver.idle();
            saver.idle();  // a second idle replaces the first
            Thread.sleep(600);
            assertEquals(1, runs.get());
            saver.now().get(5, TimeUnit.SECONDS);
            assertEquals(2, runs.get());
        } finally {
            executor.shutdownNow();
        }
    }

    @Test
    public void unlearningAWordTakesBackWhatLearningItAdded() throws Exception {
        UserHistory h = new UserHistory();
        h.learn(Arrays.asList("check", "the", "printer"));
        String before = h.toJson();
        h.learnWord("the", "printing");
        long clock = h.clock();
        h.learnWord("printing", "now");
        assertTrue(h.unlearnWord("the", "printing", clock));
        assertEquals(0.0, h.count("printing"), 0.0);
        assertEquals(0.0, h.count("printing", "the"), 0.0);
        assertEquals(h.count("printer", "the") + 0.0, h.contextCount("the"), 1e-9);
        assertTrue("the word after it stays", h.count("now") > 0);
        assertFalse("gone already", h.unlearnWord("the", "printing", clock));
        UserHistory back = UserHistory.fromJson(h.toJson(), "unlearnt");
        assertEquals(h.toJson(), back.toJson());
        assertFalse(before.equals(h.toJson()));
        try {
            h.unlearnWord("the", "printer", h.clock() + 1);
            fail("a clock from the future");
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("learntAt"));
        }
    }

    @Test
    public void unlearningOneOfTwoTypingsKeepsTheOther() {
        UserHistory h = new UserHistory();
        h.learnWord(null, "printer");
        h.learnWord(null, "printer");
        assertTrue(h.unlearnWord(null, "printer", h.clock()));
        assertEquals(Math.pow(0.5, 1 / UserHistory.DEFAULT_HALF_LIFE), h.count("printer"), 1e-9);
    }

    @Test
    public void removingAWordRemovesItAsAWordAndAsAPreviousWord() throws Exception {
        UserHistory h = new UserHistory();
        h.learn(Arrays.asList("my", "gizmo", "works"));
        h.learn(Arrays.asList("the", "gizmo"));
        assertTrue(h.removeWord("gizmo"));
        assertEquals(0.0, h.count("gizmo"), 0.0);
        assertEquals(0.0, h.contextCount("gizmo"), 0.0);
        assertEquals(0.0, h.count("gizmo", "my"), 0.0);
        assertEquals(0.0, h.count("works", "gizmo"), 0.0);
        assertTrue(h.count("works") > 0);
        assertFalse(h.topWords().contains("gizmo"));
        assertFalse(h.removeWord("gizmo"));
        UserHistory back = UserHistory.fromJson(h.toJson(), "removed");
        assertEquals(h.toJson(), back.toJson());
        assertEquals(h.numPairs(), back.numPairs());
    }
}
