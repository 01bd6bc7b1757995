package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import org.junit.Assume;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * The history saved incrementally: a save appends the changes to the journal, a compaction
 * writes a full snapshot, and reading is the snapshot with the journal replayed. A torn or
 * damaged journal keeps its valid records and is kept aside and reported; a crash at any step
 * of a compaction leaves files that read back to the last save.
 */
public class HistoryJournalTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    private static final String[] WORDS = {"the", "printer", "is", "out", "of", "paper", "again", "please", "check",
        "it", "now", "zorblax", "café", "naïve", "\ud83d\ude00", "don't", "x\ud800y", "a b"};

    private String path() {
        return new File(tmp.getRoot(), "user.history").getPath();
    }

    /** A history small enough that words and pairs are evicted and counts decay within a test. */
    private String smallHistoryFile() throws IOException {
        String path = path();
        new UserHistory(8.0, 12, 16, 2.0).save(path);
        return path;
    }

    /** One random change, as the keyboard makes them (learnt words, an unlearnt one, a removal, the weight). */
    private static void change(UserHistory h, Random r, List<long[]> learnt, List<String[]> pairs) {
        int op = r.nextInt(20);
        if (op < 15) {
            String prev = r.nextInt(4) == 0 ? null : WORDS[r.nextInt(WORDS.length)];
            String word = WORDS[r.nextInt(WORDS.length)];
            h.learnWord(prev, word);
            learnt.add(new long[] {h.clock()});
            pairs.add(new String[] {prev, word});
        } else if (op < 17 && !learnt.isEmpty()) {
            int i = learnt.size() - 1 - r.nextInt(Math.min(3, learnt.size()));
            h.unlearnWord(pairs.get(i)[0], pairs.get(i)[1], learnt.get(i)[0]);
        } else if (op < 18) {
            h.removeWord(WORDS[r.nextInt(WORDS.length)]);
        } else {
            h.setWeight(r.nextInt(3) == 0 ? null : Double.valueOf(r.nextInt(6) / 10.0));
        }
    }

    /** Number {@code n}'s kept file of {@code kind} in the quarantine of {@code path}. */
    static File kept(String path, int n, String kind) {
        return new File(UserHistoryFile.quarantine(path), n + "." + kind);
    }

    private static String reread(String path) {
        UserHistoryFile opened = UserHistoryFile.open(path);
        assertNull(opened.notice, opened.notice);
        return opened.history.toJson();
    }

    @Test
    public void aReplayEqualsTheHistoryInMemoryAcrossSavesAndCompactions() throws Exception {
        for (long limit : new long[] {1 << 30, 600}) {
            tmp.delete();
            tmp.create();
            String path = smallHistoryFile();
            HistoryStore store = new HistoryStore(path, limit);
            UserHistory h = store.history();
            Random r = new Random(46 + limit);
            List<long[]> learnt = new ArrayList<long[]>();
            List<String[]> pairs = new ArrayList<String[]>();
            int appends = 0;
            int compactions = 0;
            for (int field = 0; field < 150; field++) {
                int n = 1 + r.nextInt(12);
                for (int i = 0; i < n; i++) change(h, r, learnt, pairs);
                if (store.save()) {
                    if (store.lastSaveCompacted()) compactions++;
                    else appends++;
                }
                assertEquals("after field " + field + " (journal limit " + limit + ")", h.toJson(), reread(path));
            }
            assertTrue(appends > 100);
            if (limit < 1000) assertTrue("compacted: " + compactions, compactions >= 5);
            else assertEquals(0, compactions);
            // A store opened on those files goes on appending where the last one stopped.
            HistoryStore again = new HistoryStore(path, limit);
            assertEquals(h.toJson(), again.history().toJson());
            again.history().learnWord("the", "printer");
            assertTrue(again.save());
            h.learnWord("the", "printer");
            assertEquals(h.toJson(), reread(path));
        }
    }

    @Test
    public void aTornTailKeepsTheRecordsBeforeItAndTheWholeJournalIsKeptAside() throws Exception {
        String path = smallHistoryFile();
        HistoryStore store = new HistoryStore(path);
        UserHistory h = store.history();
        h.learn(Arrays.asList("check", "the", "printer"));
        assertTrue(store.save());
        assertFalse(store.lastSaveCompacted());
        String kept = h.toJson();
        File journal = UserHistoryFile.journal(path);
        long at = journal.length();  // where the next record starts
        h.learnWord("printer", "now");
        assertTrue(store.save());
        byte[] whole = Files.readAllBytes(journal.toPath());
        // A crash in the middle of the last append: its record is cut short.
        byte[] torn = Arrays.copyOf(whole, whole.length - 5);
        Files.write(journal.toPath(), torn);
        UserHistoryFile opened = UserHistoryFile.open(path);
        assertEquals(opened.notice, kept, opened.history.toJson());
        assertEquals(3, opened.replayed);
        assertTrue(opened.notice, opened.notice.startsWith(path + ": user.history.journal: a torn record at byte " + at + " ("));
        assertTrue(opened.notice, opened.notice.endsWith(
                "(the 3 records before it were kept); copied to user.history.quarantine/1.journal, and cut to the records kept"));
        assertFalse(opened.notice.contains("\n"));
        assertArrayEquals("the damaged journal is kept byte for byte", torn,
                Files.readAllBytes(kept(path, 1, "journal").toPath()));
        assertEquals("the kept records stay in the journal", at, journal.length());

        // Opened again (no save in between: another crash), the kept records are still there, and saves append after them.
        HistoryStore next = new HistoryStore(path);
        assertEquals(kept, next.history().toJson());
        assertNull(next.notice());
        next.history().learnWord("printer", "again");
        assertTrue(next.save());
        assertFalse(next.lastSaveCompacted());
        assertEquals(next.history().toJson(), reread(path));
        assertTrue("the kept copy stays until a clear", kept(path, 1, "journal").exists());
        assertTrue(next.clear());
        for (File f : next.files()) assertFalse(f.getName(), f.exists());
    }

    @Test
    public void aDamagedRecordInTheMiddleStopsTheReplayThere() throws Exception {
        String path = smallHistoryFile();
        HistoryStore store = new HistoryStore(path);
        UserHistory h = store.history();
        h.learnWord(null, "check");
        assertTrue(store.save());
        String kept = h.toJson();
        long firstAppend = UserHistoryFile.journal(path).length();
        h.learnWord("check", "the");
        assertTrue(store.save());
        h.learnWord("the", "printer");
        assertTrue(store.save());
        byte[] bytes = Files.readAllBytes(UserHistoryFile.journal(path).toPath());
        bytes[(int) firstAppend + 12] ^= 0x40;  // inside the second record's payload
        Files.write(UserHistoryFile.journal(path).toPath(), bytes);
        UserHistoryFile opened = UserHistoryFile.open(path);
        assertEquals(kept, opened.history.toJson());
        assertEquals(1, opened.replayed);
        assertTrue(opened.notice, opened.notice.contains("a damaged record at byte " + firstAppend + " (checksum mismatch)"));
    }

    @Test
    public void aJournalOfAnotherHistoryFileIsKeptAsideUnreplayed() throws Exception {
        String path = smallHistoryFile();
        HistoryStore store = new HistoryStore(path);
        store.history().learnWord(null, "secret");
        assertTrue(store.save());
        byte[] journal = Files.readAllBytes(UserHistoryFile.journal(path).toPath());
        // Another file put in place of the snapshot (pushed from Python, say): the journal is not its own.
        UserHistory other = new UserHistory();
        other.learnWord(null, "other");
        other.save(path);
        UserHistoryFile opened = UserHistoryFile.open(path);
        assertEquals(other.toJson(), opened.history.toJson());
        assertTrue(opened.notice, opened.notice.contains("it belongs to another history file"));
        assertArrayEquals(journal, Files.readAllBytes(kept(path, 1, "journal").toPath()));
        // A damaged snapshot takes its journal aside with it.
        HistoryStore s2 = new HistoryStore(path);
        s2.history().learnWord(null, "more");
        assertTrue(s2.save());
        Files.write(new File(path).toPath(), "not json".getBytes("UTF-8"));
        UserHistoryFile damaged = UserHistoryFile.open(path);
        assertEquals(0, damaged.history.numWords());
        assertTrue(damaged.notice, damaged.notice.contains("kept aside as user.history.quarantine/2.history"));
        assertTrue(damaged.notice, damaged.notice.contains("user.history.journal: it applies to the damaged file; kept aside as user.history.quarantine/2.journal"));
        assertArrayEquals("the first kept journal is still there", journal, Files.readAllBytes(kept(path, 1, "journal").toPath()));
        // Foreign bytes where a journal should be.
        Files.write(UserHistoryFile.journal(path).toPath(), "hello".getBytes("UTF-8"));
        new UserHistory().save(path);
        UserHistoryFile foreign = UserHistoryFile.open(path);
        assertTrue(foreign.notice, foreign.notice.contains("a journal header needs 39 bytes, the file has 5"));
    }

    @Test
    public void aCrashBeforeTheCompactedSnapshotIsInPlaceReplaysTheRenamedJournal() throws Exception {
        String path = smallHistoryFile();
        HistoryStore store = new HistoryStore(path);
        UserHistory h = store.history();
        h.learn(Arrays.asList("check", "the", "printer"));
        assertTrue(store.save());
        h.learn(Arrays.asList("the", "paper"));
        assertTrue(store.save());
        String saved = h.toJson();
        h.learnWord("paper", "again");
        store.compactCrashHook = new Runnable() {
            @Override
            public void run() {
                throw new IllegalStateException("power cut");
            }
        };
        try {
            store.close();
            fail("the compaction should have crashed");
        } catch (IllegalStateException e) {
            assertEquals("power cut", e.getMessage());
        }
        // Left behind: the old snapshot and the renamed journal; the unsaved word is lost, nothing else.
        assertFalse(UserHistoryFile.journal(path).exists());
        assertTrue(UserHistoryFile.compactingJournal(path).exists());
        UserHistoryFile opened = UserHistoryFile.open(path);
        assertNull(opened.notice);
        assertEquals(saved, opened.history.toJson());
        assertTrue(opened.compactionDue);
        HistoryStore next = new HistoryStore(path);
        assertEquals(saved, next.history().toJson());
        assertTrue("the replayed records are written as a snapshot", next.save());
        assertTrue(next.lastSaveCompacted());
        assertFalse(UserHistoryFile.compactingJournal(path).exists());
        assertEquals(saved, UserHistory.load(path).toJson());
    }

    @Test
    public void aCrashAfterTheCompactedSnapshotIsInPlaceDropsTheRenamedJournalWhoseRecordsItHolds() throws Exception {
        String path = smallHistoryFile();
        HistoryStore store = new HistoryStore(path);
        UserHistory h = store.history();
        h.learn(Arrays.asList("check", "the", "printer"));
        assertTrue(store.save());
        File journal = UserHistoryFile.journal(path);
        File copy = new File(tmp.getRoot(), "journal-before-compaction");
        Files.copy(journal.toPath(), copy.toPath());
        assertTrue(store.close());
        // The crash came after the snapshot's rename, before the renamed journal was deleted.
        Files.copy(copy.toPath(), UserHistoryFile.compactingJournal(path).toPath(), StandardCopyOption.REPLACE_EXISTING);
        UserHistoryFile opened = UserHistoryFile.open(path);
        assertNull(opened.notice);
        assertEquals(0, opened.replayed);
        assertEquals("not replayed twice", h.toJson(), opened.history.toJson());
        assertFalse(UserHistoryFile.compactingJournal(path).exists());
        // And a journal appended but never compacted (a crash between the write and the compaction) is replayed.
        HistoryStore next = new HistoryStore(path);
        next.history().learnWord("printer", "now");
        assertTrue(next.save());
        assertFalse(next.lastSaveCompacted());
        assertEquals(next.history().toJson(), reread(path));
    }

    @Test
    public void aSaveAfterAFieldAppendsFarFewerBytesThanAFullRewrite() throws Exception {
        // A full history (2,000 words, 10,000 pairs at most), as after long use.
        String path = path();
        UserHistory full = new UserHistory();
        Random r = new Random(7);
        for (int i = 0; i < 30000; i++) full.learnWord("w" + r.nextInt(3000), "w" + r.nextInt(3000));
        full.save(path);
        long snapshot = new File(path).length();
        HistoryStore store = new HistoryStore(path);
        UserHistory h = store.history();
        long journalBefore = 0;
        for (int field = 0; field < 20; field++) {
            // One field: a 12-word message, then the field is left and the keyboard saves when idle.
            List<String> message = new ArrayList<String>();
            for (int i = 0; i < 12; i++) message.add("w" + r.nextInt(3000));
            h.learn(message);
            assertTrue(store.save());
            assertFalse(store.lastSaveCompacted());
            long bytes = store.lastSaveBytes();
            long journal = UserHistoryFile.journal(path).length();
            assertEquals(journal - journalBefore, bytes);
            journalBefore = journal;
            // 12 learn records: an 8-byte frame, type, clock and two short UTF-16 words each, and the header once.
            assertTrue("a field's save wrote " + bytes + " bytes", bytes <= 12 * 48 + HistoryJournal.HEADER_LENGTH);
            assertTrue("a field's save wrote " + bytes + " of the snapshot's " + snapshot + " bytes", bytes * 200 < snapshot);
        }
        assertEquals(h.toJson(), reread(path));
    }

    @Test
    public void theRecorderOverflowsIntoAFullSnapshot() throws Exception {
        String path = smallHistoryFile();
        HistoryStore store = new HistoryStore(path);
        UserHistory h = store.history();
        StringBuilder big = new StringBuilder();
        for (int i = 0; i < 3000; i++) big.append('x');
        for (int i = 0; i < 200; i++) h.learnWord(null, big.toString() + i);  // 200 x 6 KB of records: past the bound
        assertTrue(store.save());
        assertTrue(store.lastSaveCompacted());
        assertEquals(h.toJson(), reread(path));
    }

    @Test
    public void theAppsBackupRulesExcludeEveryFileTheStoreWrites() throws Exception {
        String readme = System.getProperty("kblm.readme");
        Assume.assumeTrue("needs -Dkblm.readme (android_demo/README.md) to find the app's res/xml", readme != null);
        File xml = new File(new File(readme).getParentFile(), "app/src/main/res/xml");
        for (String rules : new String[] {"backup_rules.xml", "data_extraction_rules.xml"}) {
            String text = new String(Files.readAllBytes(new File(xml, rules).toPath()), "UTF-8");
            for (File f : new HistoryStore("user.history").files()) {
                String exclude = "<exclude domain=\"file\" path=\"" + f.getName() + "\" />";
                int sections = rules.startsWith("backup") ? 1 : 2;  // cloud-backup and device-transfer
                assertEquals(rules + " excludes " + f.getName(), sections, text.split(java.util.regex.Pattern.quote(exclude), -1).length - 1);
            }
        }
    }

    @Test
    public void badSettingsAreRefusedByName() {
        try {
            new HistoryStore(path(), 10);
            fail();
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().startsWith("journalLimit must be >= 39 bytes, got 10"));
        }
    }
}
