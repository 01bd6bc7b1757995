package org.keyboardlm.core;

import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.Assume;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * No learnt word in any log line. The history's notice (which the keyboard logs and shows) is
 * exercised on files damaged so that a learnt word sits exactly where the reader complains; and
 * the app's and the core's sources are read for every log call, each of which may only name
 * files and exception classes.
 */
public class HistoryNoticePrivacyTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    /** A word no path, message or format name holds by chance. */
    private static final String SECRET = "quorblaxwen";

    /** A history file that learnt SECRET, its JSON. */
    private static String learnt() {
        UserHistory h = new UserHistory();
        h.learnWord(null, SECRET);
        h.learnWord(SECRET, "next");
        return h.toJson();
    }

    private static void noSecret(String where, String message) {
        assertNotNull(where, message);
        for (int n = SECRET.length(); n >= 4; n--) {
            for (int i = 0; i + n <= SECRET.length(); i++) {
                assertFalse(where + ": the notice quotes a learnt word: " + message, message.contains(SECRET.substring(i, i + n)));
            }
        }
    }

    @Test
    public void aDamagedHistoryNoticeNeverQuotesALearntWord() throws Exception {
        String good = learnt();
        String word = "\"" + SECRET + "\"";
        String[] damaged = {
            good.replaceFirst("\\[" + word + ",([0-9.e-]+),", "[" + word + "," + word + ","),  // the count is the word
            good.replaceFirst("\\[" + word + ",", "[" + word + "," + word + ","),               // a row one too long
            good.replace("\"format\":\"keyboard_lm.user_history\"", "\"format\":" + word),
            good.replace("\"version\":1", "\"version\":" + word),
            good.replace("\"clock\":2", "\"clock\":" + word),
            good.substring(0, good.length() - 1) + ",\"weight\":" + word + "}",
            good.substring(0, good.indexOf(SECRET) + 5),                                      // cut inside the word
            good.replace(word, "\"" + SECRET + "\u0001\""),                                   // a control character in it
            good + " " + SECRET,                                                              // the word after the document
            "{" + word + ":1}",
        };
        int n = 0;
        for (String text : damaged) {
            String path = new File(tmp.newFolder("case" + n++), "user.history").getPath();
            Files.write(new File(path).toPath(), text.getBytes(StandardCharsets.UTF_8));
            HistoryStore store = new HistoryStore(path);
            store.history();
            noSecret(text, store.notice());
            assertTrue(store.notice(), store.notice().contains("kept aside as user.history.quarantine/1.history"));
            for (HistoryStore.KeptCopy c : store.keptCopies()) noSecret("kept copy", c.toString());
        }
    }

    @Test
    public void aDamagedJournalNoticeNeverQuotesALearntWord() throws Exception {
        String path = new File(tmp.getRoot(), "user.history").getPath();
        HistoryStore store = new HistoryStore(path);
        store.history().learnWord(null, "first");
        assertTrue(store.close());
        store.history().learnWord("first", SECRET);
        store.history().removeWord(SECRET);
        assertTrue(store.save());
        byte[] journal = Files.readAllBytes(UserHistoryFile.journal(path).toPath());
        for (int at = HistoryJournal.HEADER_LENGTH; at < journal.length; at += 7) {
            byte[] bad = journal.clone();
            bad[at] ^= 0x21;
            Files.write(UserHistoryFile.journal(path).toPath(), bad);
            UserHistoryFile opened = UserHistoryFile.open(path);
            if (opened.notice != null) noSecret("journal byte " + at, opened.notice);
            Files.write(UserHistoryFile.journal(path).toPath(), journal);
        }
    }

    /** {@code Log.x(...)} and {@code System.out/err} calls, with their arguments up to the closing parenthesis of the line. */
    private static final Pattern LOG = Pattern.compile("(Log\\.[vdiwe]\\(|System\\.(out|err)\\.|printStackTrace)(.*)");

    @Test
    public void everyLogLineNamesFilesAndExceptionClassesOnly() throws Exception {
        String readme = System.getProperty("kblm.readme");
        Assume.assumeTrue("needs -Dkblm.readme (android_demo/README.md) to find the app's sources", readme != null);
        File demo = new File(readme).getParentFile();
        List<File> sources = new ArrayList<File>();
        collect(new File(demo, "app/src/main/java"), sources);
        collect(new File(demo, "core/src/main/java"), sources);
        collect(new File(demo, "core/src/android/java"), sources);
        assertTrue("sources found under " + demo, sources.size() > 40);
        int calls = 0;
        for (File f : sources) {
            String[] lines = new String(Files.readAllBytes(f.toPath()), StandardCharsets.UTF_8).split("\n");
            for (int i = 0; i < lines.length; i++) {
                Matcher m = LOG.matcher(lines[i]);
                if (!m.find() || lines[i].trim().startsWith("*") || lines[i].trim().startsWith("//")) continue;
                String where = f.getName() + ":" + (i + 1) + ": " + lines[i].trim();
                assertTrue("the core never logs: " + where, f.getPath().contains("app/src"));
                assertFalse("a log call must not print a stack trace or to stdout: " + where, !m.group(1).startsWith("Log."));
                String args = m.group(3);
                // An exception reaches a log line only through describe(): its class, or an IOException's
                // or the core's message (files and reasons). No raw message, toString or concatenated exception.
                assertFalse(where, args.contains("getMessage()") || args.contains("getLocalizedMessage()")
                        || args.contains(".toString()") || args.matches(".*\\+\\s*e\\s*[)+].*"));
                calls++;
            }
        }
        assertTrue("log calls found: " + calls, calls >= 5);
    }

    private static void collect(File dir, List<File> out) {
        File[] files = dir.listFiles();
        if (files == null) return;
        for (File f : files) {
            if (f.isDirectory()) collect(f, out);
            else if (f.getName().endsWith(".java")) out.add(f);
        }
    }
}
