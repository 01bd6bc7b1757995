package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;

import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * The keyboard's history file: read when it is good, and when it is damaged kept aside as
 * {@code .bad} and reported, never silently replaced by the next save.
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
        assertFalse(UserHistoryFile.badCopy(f.getPath()).exists());
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
    public void aDamagedFileIsKeptAsideAsBadAndReportedInOneLine() throws Exception {
        File f = new File(dir.getRoot(), "user.history");
        byte[] damaged = "{\"format\":\"keyboard_lm.user_history\",\"version\":1,\"words\":[tru".getBytes(StandardCharsets.UTF_8);
        Files.write(f.toPath(), damaged);
        UserHistoryFile opened = UserHistoryFile.open(f.getPath());
        assertEquals(0, opened.history.numWords());
        assertFalse(opened.loaded);
        assertTrue(opened.writable);
        assertTrue(opened.notice, opened.notice.startsWith(f.getPath() + ": "));
        assertTrue(opened.notice, opened.notice.endsWith("; kept aside as user.history.bad, starting an empty user history"));
        assertFalse(opened.notice.contains("\n"));
        assertFalse("moved, not copied", f.exists());
        File bad = UserHistoryFile.badCopy(f.getPath());
        assertArrayEquals(damaged, Files.readAllBytes(bad.toPath()));
        // Saving the new history does not touch the damaged copy; a second damaged file replaces it, saying so.
        opened.history.learn(Arrays.asList("new"));
        opened.history.save(f.getPath());
        assertArrayEquals(damaged, Files.readAllBytes(bad.toPath()));
        Files.write(f.toPath(), new byte[] {(byte) 0xff, 0x00});
        UserHistoryFile again = UserHistoryFile.open(f.getPath());
        assertTrue(again.notice, again.notice.contains("not UTF-8"));
        assertTrue(again.notice, again.notice.contains("kept aside as user.history.bad (replacing an older one)"));
        assertArrayEquals(new byte[] {(byte) 0xff, 0x00}, Files.readAllBytes(bad.toPath()));
    }

    @Test
    public void aDamagedFileThatCannotBeMovedAsideIsNeverSavedOver() throws Exception {
        File f = new File(dir.getRoot(), "user.history");
        Files.write(f.toPath(), "not json".getBytes(StandardCharsets.UTF_8));
        File bad = UserHistoryFile.badCopy(f.getPath());
        assertTrue(bad.mkdir());  // a non-empty directory where the copy would go: the rename fails, even as root
        assertTrue(new File(bad, "x").createNewFile());
        UserHistoryFile opened = UserHistoryFile.open(f.getPath());
        assertFalse(opened.writable);
        assertTrue(opened.notice, opened.notice.contains("cannot move it aside to user.history.bad"));
        assertEquals("not json", new String(Files.readAllBytes(f.toPath()), StandardCharsets.UTF_8));
        assertEquals(0, opened.history.numWords());
    }
}
