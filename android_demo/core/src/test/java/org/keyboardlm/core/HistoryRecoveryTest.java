package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * A history that is never lost: a file that cannot be read for the file system's reasons is read
 * again (bounded, with a pause) instead of being set aside, and never saved over; a kept copy is
 * restored in place, the history it replaces kept in its turn; what was learnt before a clear or
 * a restore is never "unlearnt" from the history after it.
 */
public class HistoryRecoveryTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private String path() {
        return new File(tmp.getRoot(), "user.history").getPath();
    }

    /** The history file as a link to a directory: reading it fails (an IOException), but a rename would replace the link. */
    private File unreadable(String path) throws IOException {
        File dir = tmp.newFolder("not-a-file");
        Files.createSymbolicLink(new File(path).toPath(), dir.toPath());
        return dir;
    }

    @Test
    public void aReadErrorIsRetriedAndASuccessLaterReadsTheFileWithNothingKeptAside() throws Exception {
        final String path = path();
        unreadable(path);
        final UserHistory good = new UserHistory();
        good.learn(Arrays.asList("check", "the", "printer"));
        final HistoryStore store = new HistoryStore(path);
        store.retryMillis = 1;
        final AtomicInteger retries = new AtomicInteger();
        store.beforeRetry = new Runnable() {
            @Override
            public void run() {
                if (retries.incrementAndGet() < 2) return;  // the second retry finds the file readable again
                try {
                    Files.delete(new File(path).toPath());
                    good.save(path);
                } catch (IOException e) {
                    throw new AssertionError(e);
                }
            }
        };
        assertEquals(good.toJson(), store.history().toJson());
        assertEquals(3, store.readAttempts());
        assertNull(store.notice(), store.notice());
        assertFalse("nothing set aside", UserHistoryFile.quarantine(path).exists());
        store.history().learnWord("printer", "now");
        assertTrue(store.save());
    }

    @Test
    public void aFileThatStaysUnreadableIsLeftAsItIsAndNeverSavedOver() throws Exception {
        String path = path();
        unreadable(path);
        HistoryStore store = new HistoryStore(path);
        store.retryMillis = 1;
        assertEquals(0, store.history().numWords());
        assertEquals(HistoryStore.READ_ATTEMPTS, store.readAttempts());
        String notice = store.notice();
        assertTrue(notice, notice.startsWith(path + ": cannot read the user history now ("));
        assertTrue(notice, notice.contains("it is left as it is and nothing is saved over it"));
        assertTrue(notice, notice.endsWith("(4 tries; it is read again when the keyboard restarts, and what is learnt until then is not saved)"));
        assertFalse("a read error is not damage: nothing is set aside", UserHistoryFile.quarantine(path).exists());
        store.history().learnWord(null, "meanwhile");
        for (int i = 0; i < 2; i++) {
            try {
                if (i == 0) store.save();
                else store.close();
                fail("saved over a file it could not read");
            } catch (IOException e) {
                assertTrue(e.getMessage(), e.getMessage().contains("not saving the user history"));
            }
        }
        assertTrue("the unread file is still the link it was", Files.isSymbolicLink(new File(path).toPath()));
        assertTrue(store.keptCopies().isEmpty());
        try {
            store.restore(1);
            fail();
        } catch (UserHistoryException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("no kept history file with that number"));
        }
    }

    @Test
    public void anUnreadableJournalIsRetriedTooAndTheSnapshotIsNotTouched() throws Exception {
        String path = path();
        HistoryStore first = new HistoryStore(path);
        first.history().learnWord(null, "kept");
        assertTrue(first.close());
        byte[] snapshot = Files.readAllBytes(new File(path).toPath());
        File dir = tmp.newFolder("journal-dir");
        Files.createSymbolicLink(UserHistoryFile.journal(path).toPath(), dir.toPath());
        UserHistoryFile opened = UserHistoryFile.open(path);
        assertTrue(opened.readFailed);
        assertFalse(opened.writable);
        assertArrayEquals(snapshot, Files.readAllBytes(new File(path).toPath()));
        assertTrue(Files.isSymbolicLink(UserHistoryFile.journal(path).toPath()));
    }

    /** A history with one word, saved as a file an older version kept aside (user.history.bad), adopted as kept copy 1. */
    private UserHistory keptByAnOlderVersion(String path, String word) throws Exception {
        UserHistory h = new UserHistory();
        h.learn(Arrays.asList("my", word));
        h.setWeight(0.2);
        h.save(path + ".bad");
        return h;
    }

    @Test
    public void aKeptHistoryIsRestoredInPlaceAndTheOneItReplacesIsKeptInItsTurn() throws Exception {
        String path = path();
        HistoryStore store = new HistoryStore(path);
        UserHistory live = store.history();
        live.learn(Arrays.asList("my", "printer"));
        assertTrue(store.close());
        String before = live.toJson();
        UserHistory older = keptByAnOlderVersion(path, "gizmo");

        HistoryStore next = new HistoryStore(path);
        UserHistory h = next.history();
        RecentSentences recent = next.recentSentences();
        recent.add(Arrays.asList("my", "printer"));
        assertEquals(before, h.toJson());
        assertEquals(1, next.keptCopies().size());
        assertTrue(next.keptCopies().get(0).restorable);
        next.restore(1);
        assertSame("the keyboard's sessions keep their object", h, next.history());
        assertEquals(older.toJson(), h.toJson());
        assertEquals("written at once, as one snapshot", older.toJson(), UserHistory.load(path).toJson());
        assertFalse(UserHistoryFile.journal(path).exists());
        assertEquals("the sentences belonged to the history replaced", 0, recent.size());
        assertEquals(Arrays.asList(2), UserHistoryFileTest.numbers(next.keptCopies()));
        assertEquals("the replaced history is kept", before,
                UserHistory.load(HistoryJournalTest.kept(path, 2, "history").getPath()).toJson());

        // Learning goes on in the restored history and is saved incrementally again.
        h.learnWord("gizmo", "works");
        assertTrue(next.save());
        assertFalse(next.lastSaveCompacted());
        assertEquals(h.toJson(), UserHistoryFile.open(path).history.toJson());

        // And back: the one replaced comes back, the restored one (with what it learnt) is kept.
        String restored = h.toJson();
        next.restore(2);
        assertEquals(before, h.toJson());
        assertEquals(Arrays.asList(3), UserHistoryFileTest.numbers(next.keptCopies()));
        assertEquals(restored, UserHistory.load(HistoryJournalTest.kept(path, 3, "history").getPath()).toJson());
    }

    @Test
    public void aDamagedOrForeignKeptCopyIsNotRestoredAndNothingChanges() throws Exception {
        String path = path();
        Files.write(new File(path).toPath(), "{\"format\":\"keyboard_lm.user_history\",\"version\":2}".getBytes(StandardCharsets.UTF_8));
        HistoryStore store = new HistoryStore(path);
        UserHistory h = store.history();
        h.learnWord(null, "typed");
        assertTrue(store.save());
        String live = h.toJson();
        try {
            store.restore(1);
            fail("a newer version's file restored");
        } catch (UserHistoryException e) {
            assertEquals("user.history.quarantine/1.history: user history version 2, this keyboard_lm reads 1", e.getMessage());
        }
        new UserHistory(8.0, 12, 16, 2.0).save(path + ".bad");  // a history made with other settings, kept earlier
        assertEquals(Arrays.asList(1), UserHistoryFileTest.numbers(store.keptCopies()));
        UserHistoryFile.open(path);  // a read adopts it as number 2
        try {
            store.restore(2);
            fail("restored with other settings");
        } catch (UserHistoryException e) {
            assertTrue(e.getMessage(), e.getMessage().startsWith("user.history.quarantine/2.history: it was made with other settings (half-life 8.0"));
        }
        assertEquals(live, h.toJson());
        assertEquals(live, UserHistoryFile.open(path).history.toJson());
        assertEquals("no copy of the live history was made", Arrays.asList(1, 2), UserHistoryFileTest.numbers(store.keptCopies()));
    }

    @Test
    public void aKeptSnapshotIsRestoredWithTheJournalThatBelongsToIt() throws Exception {
        // The files a store writes (a snapshot and its journal), as one read keeps them together.
        String other = new File(tmp.newFolder("elsewhere"), "user.history").getPath();
        HistoryStore writer = new HistoryStore(other);
        writer.history().learnWord(null, "snapshot");
        assertTrue(writer.close());
        writer.history().learnWord("snapshot", "journal");
        assertTrue(writer.save());
        assertFalse(writer.lastSaveCompacted());
        String path = path();
        File quarantine = UserHistoryFile.quarantine(path);
        assertTrue(quarantine.mkdir());
        Files.copy(new File(other).toPath(), new File(quarantine, "4.history").toPath());
        Files.copy(UserHistoryFile.journal(other).toPath(), new File(quarantine, "4.journal").toPath());
        HistoryStore store = new HistoryStore(path);
        store.restore(4);
        assertEquals(writer.history().toJson(), store.history().toJson());
        assertTrue(store.keptCopies().isEmpty());
        assertFalse("an empty quarantine goes", quarantine.exists());
    }

    @Test
    public void aWordLearntBeforeAClearOrARestoreIsNotUnlearntAfterIt() throws Exception {
        Predictor p = TextFieldTest.golden();
        HistoryStore store = new HistoryStore(path());
        UserHistory h = store.history();
        TextField field = new TextField(p, h);
        field.reset(true);
        field.update("", false);
        String text = "";
        for (char c : "check the printer ".toCharArray()) field.update(text += c, true);  // typed: each word learnt as it ends
        assertTrue(h.count("printer") > 0);
        assertTrue(store.clear());
        h.learnWord(null, "after");
        String cleared = h.toJson();
        // Backspacing over the word learnt before the clear: no exception, and the history after it is untouched.
        field.update("check the printer", true);
        field.update("check the printe", true);
        field.update("check the print", true);
        assertEquals(cleared, h.toJson());
    }
}
