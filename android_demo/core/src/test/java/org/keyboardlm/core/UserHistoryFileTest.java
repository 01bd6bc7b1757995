package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;

import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * The keyboard's history file: read when it is good, and when it is damaged kept aside in the
 * numbered quarantine and reported, never silently replaced by the next save, and never
 * replacing a file kept earlier.
 */
public class UserHistoryFileTest {
    @Rule
    public TemporaryFolder dir = new TemporaryFolder();

    @Test
    public void noFileGivesAnEmptyHistoryThatMayBeSaved() throws Exception {
        File f = new File(dir.getRoot(), "user.history");
        UserHistoryFile opened = UserHistoryFile.open(f.getPath());
        assertEquals(0, opened.history.numWords());
        assertFalse(opened.loaded);
        assertTrue(opened.writable);
        assertNull(opened.notice);
        assertFalse(UserHistoryFile.quarantine(f.getPath()).exists());
    }

    @Test
    public void aGoodFileIsRead() throws Exception {
        File f = new File(dir.getRoot(), "user.history");
        UserHistory h = new UserHistory();
        h.learn(Arrays.asList("hello", "there"));
        h.save(f.getPath());
        UserHistoryFile opened = UserHistoryFile.open(f.getPath());
        assertTrue(opened.loaded);
        assertNull(opened.notice);
        assertEquals(h.toJson(), opened.history.toJson());
    }

    @Test
    public void aDamagedFileIsKeptAsideNumberedAndNeverReplacesAnEarlierOne() throws Exception {
        File f = new File(dir.getRoot(), "user.history");
        byte[] damaged = "{\"format\":\"keyboard_lm.user_history\",\"version\":1,\"words\":[tru".getBytes(StandardCharsets.UTF_8);
        Files.write(f.toPath(), damaged);
        UserHistoryFile opened = UserHistoryFile.open(f.getPath());
        assertEquals(0, opened.history.numWords());
        assertFalse(opened.loaded);
        assertTrue(opened.writable);
        assertFalse(opened.readFailed);
        assertTrue(opened.notice, opened.notice.startsWith(f.getPath() + ": "));
        assertTrue(opened.notice, opened.notice.endsWith("; kept aside as user.history.quarantine/1.history, starting an empty user history"));
        assertFalse(opened.notice.contains("\n"));
        assertFalse("moved, not copied", f.exists());
        File first = HistoryJournalTest.kept(f.getPath(), 1, "history");
        assertArrayEquals(damaged, Files.readAllBytes(first.toPath()));
        // Saving the new history does not touch the kept copy; a second damaged file takes the next number.
        opened.history.learn(Arrays.asList("new"));
        opened.history.save(f.getPath());
        assertArrayEquals(damaged, Files.readAllBytes(first.toPath()));
        Files.write(f.toPath(), new byte[] {(byte) 0xff, 0x00});
        UserHistoryFile again = UserHistoryFile.open(f.getPath());
        assertTrue(again.notice, again.notice.contains("not UTF-8"));
        assertTrue(again.notice, again.notice.contains("kept aside as user.history.quarantine/2.history"));
        assertArrayEquals("the first stays as it was", damaged, Files.readAllBytes(first.toPath()));
        assertArrayEquals(new byte[] {(byte) 0xff, 0x00}, Files.readAllBytes(HistoryJournalTest.kept(f.getPath(), 2, "history").toPath()));
        // Numbers follow the largest in use, so a gap (a kept file deleted by hand) is never refilled.
        assertTrue(first.delete());
        Files.write(f.toPath(), "garbage".getBytes(StandardCharsets.UTF_8));
        assertTrue(UserHistoryFile.open(f.getPath()).notice.contains("user.history.quarantine/3.history"));
        assertEquals(Arrays.asList(2, 3), numbers(new HistoryStore(f.getPath()).keptCopies()));
    }

    @Test
    public void copiesKeptByAnOlderVersionAreAdoptedUnderTheirOwnNumbers() throws Exception {
        File f = new File(dir.getRoot(), "user.history");
        byte[] oldBad = "an old damaged history".getBytes(StandardCharsets.UTF_8);
        byte[] oldJournal = "an old damaged journal".getBytes(StandardCharsets.UTF_8);
        Files.write(new File(f.getPath() + ".bad").toPath(), oldBad);
        Files.write(new File(f.getPath() + ".journal.bad").toPath(), oldJournal);
        UserHistoryFile opened = UserHistoryFile.open(f.getPath());
        assertTrue(opened.writable);
        assertTrue(opened.notice, opened.notice.contains("user.history.bad (kept aside earlier) moved to user.history.quarantine/1.history"));
        assertTrue(opened.notice, opened.notice.contains("user.history.journal.bad (kept aside earlier) moved to user.history.quarantine/2.journal"));
        assertFalse(new File(f.getPath() + ".bad").exists());
        assertArrayEquals(oldBad, Files.readAllBytes(HistoryJournalTest.kept(f.getPath(), 1, "history").toPath()));
        assertArrayEquals(oldJournal, Files.readAllBytes(HistoryJournalTest.kept(f.getPath(), 2, "journal").toPath()));
        assertNull("adopted once", UserHistoryFile.open(f.getPath()).notice);
    }

    @Test
    public void aDamagedFileThatCannotBeKeptAsideIsNeverSavedOver() throws Exception {
        File f = new File(dir.getRoot(), "user.history");
        Files.write(f.toPath(), "not json".getBytes(StandardCharsets.UTF_8));
        // A file where the quarantine directory would go: it cannot be made, even as root.
        Files.write(UserHistoryFile.quarantine(f.getPath()).toPath(), new byte[] {1});
        UserHistoryFile opened = UserHistoryFile.open(f.getPath());
        assertFalse(opened.writable);
        assertTrue(opened.notice, opened.notice.contains("cannot keep it aside (cannot make the directory user.history.quarantine)"));
        assertEquals("not json", new String(Files.readAllBytes(f.toPath()), StandardCharsets.UTF_8));
        assertEquals(0, opened.history.numWords());
        HistoryStore store = new HistoryStore(f.getPath());
        store.history().learnWord(null, "new");
        try {
            store.save();
            fail("saved over the damaged file");
        } catch (java.io.IOException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("not saving the user history over the damaged file"));
        }
        assertEquals("not json", new String(Files.readAllBytes(f.toPath()), StandardCharsets.UTF_8));
    }

    static java.util.List<Integer> numbers(java.util.List<HistoryStore.KeptCopy> kept) {
        java.util.List<Integer> out = new java.util.ArrayList<Integer>();
        for (HistoryStore.KeptCopy c : kept) out.add(c.number);
        return out;
    }
}
