package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.Test;

/**
 * UserHistory on its own: decay, bounds under eviction, the top-words list kept up to date,
 * candidates, context counts, the user's weight, clear(), bad arguments, the JSON state
 * (Python's number and string format, odd spellings) and every kind of damaged or foreign
 * file refused in one line naming it.
 */
public class UserHistoryTest {
    static File temp(String name) throws IOException {
        File dir = File.createTempFile("kblm", "");
        dir.delete();
        dir.mkdir();
        dir.deleteOnExit();
        File f = new File(dir, name);
        f.deleteOnExit();
        return f;
    }

    static void write(File f, byte[] bytes) throws IOException {
        FileOutputStream out = new FileOutputStream(f);
        try {
            out.write(bytes);
        } finally {
            out.close();
        }
    }

    static double sum(Map<String, Double> m) {
        double s = 0;
        for (double p : m.values()) s += p;
        return s;
    }

    @Test
    public void pairsRankWhatFollowedThePreviousWordAndUnigramsFillIn() {
        UserHistory h = new UserHistory();
        for (int i = 0; i < 3; i++) h.learn(Arrays.asList("thanks", "john"));
        h.learn(Arrays.asList("thanks", "all"));
        h.learn(Arrays.asList("see", "you", "soon"));
        assertTrue(h.probability("john", "thanks") > h.probability("all", "thanks"));
        assertTrue(h.probability("all", "thanks") > h.probability("soon", "thanks"));
        assertTrue(h.probability("thanks", null) > h.probability("see", null));
        assertEquals(h.probability("thanks", null), h.probability("thanks", UserHistory.START), 0.0);
        for (String prev : new String[] {"thanks", "you", null, "unseen-word"}) assertEquals(1.0, sum(h.distribution(prev)), 1e-12);
        assertEquals(0.0, h.probability("zorblaxen", "thanks"), 0.0);
        assertEquals(3.0, h.count("john", "thanks"), 0.01);  // three recent pairs, barely decayed
        assertEquals(0.0, h.count("zorblaxen"), 0.0);
    }

    @Test
    public void countsHalveEveryHalfLifeOfLearntWords() {
        UserHistory h = new UserHistory(100, 2000, 10000, 2.0);
        h.learn(Arrays.asList("hello", "world"));
        assertEquals(Math.pow(0.5, 1 / 100.0), h.count("hello"), 1e-15);
        assertEquals(1.0, h.count("world", "hello"), 0.0);
        for (int i = 0; i < 50; i++) h.learn(Arrays.asList("w" + i, "x"));
        assertEquals(0.5 * Math.pow(0.5, 1 / 100.0), h.count("hello"), 1e-15);
        assertEquals(0.5, h.count("world", "hello"), 1e-15);
        h.learn(Collections.singletonList("hello"));
        assertEquals(Math.pow(0.5, 102 / 100.0) + 1.0, h.count("hello"), 1e-15);
        assertEquals(103, h.clock());
    }

    @Test
    public void contextCountIsTheDecayedCountOfTheWordsTypedAfterThePreviousWord() {
        UserHistory h = new UserHistory(100, 2000, 10000, 2.0);
        assertEquals(0.0, h.contextCount(null), 0.0);
        h.learn(Arrays.asList("hello", "world"));
        h.learnWord("hello", "there");
        // hello after <s> at clock 1; world and there after hello at clocks 2 and 3.
        assertEquals(Math.pow(0.5, 2 / 100.0), h.contextCount(null), 1e-15);
        assertEquals(h.contextCount(null), h.contextCount(UserHistory.START), 0.0);
        assertEquals(Math.pow(0.5, 1 / 100.0) + 1.0, h.contextCount("hello"), 1e-15);
        assertEquals(h.count("world", "hello") + h.count("there", "hello"), h.contextCount("hello"), 1e-15);
        assertEquals(0.0, h.contextCount("world"), 0.0);  // nothing typed after it
        assertEquals(0.0, h.contextCount("never-typed"), 0.0);
        for (int i = 0; i < 50; i++) h.learn(Arrays.asList("w" + i, "x"));
        assertEquals(0.5 * (Math.pow(0.5, 1 / 100.0) + 1.0), h.contextCount("hello"), 1e-15);
        h.clear();
        assertEquals(0.0, h.contextCount("hello"), 0.0);
    }

    @Test
    public void theUsersWeightIsWrittenLastAsPythonDoesReadBackAndForgotten() throws Exception {
        UserHistory h = new UserHistory(10, 5, 5, 2.0);
        h.learn(Arrays.asList("a", "b"));
        assertEquals(null, h.weight());
        String without = h.toJson();
        assertFalse("no weight key while unset, as Python's to_dict", without.contains("\"weight\""));
        h.setWeight(0.2);
        assertEquals(Double.valueOf(0.2), h.weight());
        String with = h.toJson();
        assertEquals(without.substring(0, without.length() - 1) + ",\"weight\":0.2}", with);
        File f = temp("user.history");
        h.save(f.getPath());
        UserHistory back = UserHistory.load(f.getPath());
        assertEquals(Double.valueOf(0.2), back.weight());
        assertEquals(with, back.toJson());
        // Numbers as Python writes them (an integer weight is read as a float, as Python's float(weight)).
        String[][] cases = {{"0", "0.0"}, {"1", "1.0"}, {"0.30000000000000004", "0.30000000000000004"}, {"1e-05", "1e-05"},
                {"5E-1", "0.5"}, {"0.0", "0.0"}};
        for (String[] c : cases) {
            UserHistory x = UserHistory.fromJson(without.substring(0, without.length() - 1) + ",\"weight\":" + c[0] + "}", "w");
            assertEquals(c[0], Double.parseDouble(c[1]), x.weight(), 0.0);
            assertTrue(c[0], x.toJson().endsWith(",\"weight\":" + c[1] + "}"));
        }
        // A JSON null is no weight, as Python's d.get("weight") is None.
        assertEquals(null, UserHistory.fromJson(without.substring(0, without.length() - 1) + ",\"weight\":null}", "w").weight());
        h.setWeight(null);
        assertEquals(without, h.toJson());
        h.setWeight(1.0);
        h.clear();
        assertEquals(null, h.weight());
        assertEquals(new UserHistory(10, 5, 5, 2.0).toJson(), h.toJson());
    }

    @Test
    public void badWeightsInTheFileAreRefusedInOneLineNamingTheFile() throws Exception {
        UserHistory h = new UserHistory(10, 5, 5, 2.0);
        h.learn(Arrays.asList("a", "b", "c"));
        String good = h.toJson();
        String[][] cases = {{"true", "weight: True is not a number in [0, 1]"}, {"false", "weight: False is not a number"},
                {"\"0.2\"", "weight: a string of 3 characters is not a number in [0, 1]"}, {"1.5", "weight: 1.5 is not a number in [0, 1]"},
                {"-0.1", "weight: -0.1 is not a number in [0, 1]"}, {"2", "weight: 2 is not a number"},
                {"NaN", "weight: NaN is not a number"}, {"Infinity", "weight: Infinity is not a number"},
                {"[0.2]", "weight: a list is not a number"}, {"{}", "weight: an object is not a number"}};
        File f = temp("user.history");
        for (String[] c : cases) {
            write(f, (good.substring(0, good.length() - 1) + ",\"weight\":" + c[0] + "}").getBytes(StandardCharsets.UTF_8));
            refused(f, "damaged user history (" + c[1]);
        }
    }

    @Test
    public void boundsHoldUnderEvictionAndTheDistributionStaysWhole() {
        UserHistory h = new UserHistory(1000, 20, 30, 2.0);
        for (int i = 0; i < 5; i++) h.learn(Arrays.asList("regards", "anna"));
        Random r = new Random(1);
        for (int i = 0; i < 400; i++) {
            List<String> s = new ArrayList<String>();
            for (int j = r.nextInt(4); j >= 0; j--) s.add("once" + r.nextInt(300));
            h.learn(s);
            assertTrue(h.numWords() + " words", h.numWords() <= 20);
            assertTrue(h.numPairs() + " pairs", h.numPairs() <= 30);
        }
        assertTrue("frequent beats recent-but-once", h.count("regards") > 0 && h.count("anna", "regards") > 0);
        Map<String, Double> d = h.distribution("regards");
        assertEquals(1.0, sum(d), 1e-12);
        String best = null;
        for (Map.Entry<String, Double> e : d.entrySet()) if (best == null || e.getValue() > d.get(best)) best = e.getKey();
        assertEquals("anna", best);
        for (String prev : h.wordsWithPrefix("")) assertEquals(1.0, sum(h.distribution(prev)), 1e-12);
    }

    @Test
    public void theTopWordsKeptUpToDateEqualAFreshRanking() {
        UserHistory h = new UserHistory(300, 500, 2000, 2.0);
        h.learn(Collections.singletonList("first"));
        assertEquals(Collections.singletonList("first"), h.topWords());  // from here on kept up to date
        Random r = new Random(2);
        for (int i = 0; i < 3000; i++) {
            h.learnWord(null, "w" + (int) Math.abs(r.nextGaussian() * 60));
            if (i % 100 == 0) {
                List<String> fresh = h.topWords(h.numWords());
                assertEquals("after " + i, fresh.subList(0, Math.min(UserHistory.TOP_WORDS, fresh.size())), h.topWords());
            }
        }
        assertEquals(h.topWords(h.numWords()).subList(0, UserHistory.TOP_WORDS), h.topWords());
        List<String> five = h.topWords(5);
        for (int i = 1; i < five.size(); i++) assertTrue(h.count(five.get(i - 1)) >= h.count(five.get(i)));
    }

    @Test
    public void candidatesAreTheWordsAfterThePreviousOneTheTopWordsAndTheOnesAskedFor() {
        UserHistory h = new UserHistory(2000, 2000, 10000, 2.0);
        h.learnWord("see", "rare");
        h.learnWord("y", "asked");
        for (int i = 0; i < 200; i++) h.learnWord("x", "common" + i % 80);  // all counted more, and later
        assertFalse(h.topWords().contains("rare") || h.topWords().contains("asked"));
        Map<String, Double> c = h.candidates("see", Arrays.asList("asked", "not-in-history"));
        assertTrue(c.containsKey("rare"));
        assertTrue(c.containsKey("asked"));
        assertFalse(c.containsKey("not-in-history"));
        assertTrue(c.keySet().containsAll(h.topWords()));
        assertEquals(UserHistory.TOP_WORDS + 2, c.size());
        for (Map.Entry<String, Double> e : c.entrySet()) assertEquals(h.probability(e.getKey(), "see"), e.getValue(), 0.0);
        assertEquals(Arrays.asList("asked"), h.wordsWithPrefix("as"));
    }

    @Test
    public void clearForgetsEverythingAndKeepsTheSettings() throws Exception {
        UserHistory h = new UserHistory(50, 30, 40, 1.5);
        for (int i = 0; i < 100; i++) h.learn(Arrays.asList("a" + i % 40, "b" + i % 7));
        assertEquals(5, h.topWords(5).size());
        h.setWeight(0.4);
        h.clear();
        assertEquals("the user's weight is forgotten too", null, h.weight());
        assertEquals(0, h.numWords());
        assertEquals(0, h.numPairs());
        assertEquals(0, h.clock());
        assertTrue(h.distribution(null).isEmpty());
        assertTrue(h.topWords().isEmpty());
        assertEquals(0.0, h.probability("a1", null), 0.0);
        assertEquals(50.0, h.halfLife, 0.0);
        assertEquals(1.5, h.beta, 0.0);
        UserHistory fresh = new UserHistory(50, 30, 40, 1.5);
        for (UserHistory x : new UserHistory[] {h, fresh}) x.learn(Arrays.asList("after", "clear"));
        assertEquals(fresh.toJson(), h.toJson());
    }

    @Test
    public void badArgumentsAreRefused() {
        UserHistory h = new UserHistory();
        for (String word : new String[] {null, "", UserHistory.START}) {
            try {
                h.learnWord(null, word);
                fail("learnt " + word);
            } catch (IllegalArgumentException e) {
                assertTrue(e.getMessage(), e.getMessage().startsWith("not a word to learn"));
            }
        }
        assertEquals(0, h.clock());
        String[] expected = {"half_life must be > 0", "max_words and max_pairs must be >= 1", "max_words and max_pairs", "beta must be > 0", "half_life"};
        double[][] settings = {{0, 10, 10, 2}, {10, 0, 10, 2}, {10, 10, 0, 2}, {10, 10, 10, 0}, {Double.NaN, 10, 10, 2}};
        for (int i = 0; i < settings.length; i++) {
            try {
                new UserHistory(settings[i][0], (int) settings[i][1], (int) settings[i][2], settings[i][3]);
                fail(expected[i]);
            } catch (IllegalArgumentException e) {
                assertTrue(e.getMessage(), e.getMessage().startsWith(expected[i]));
            }
        }
    }

    @Test
    public void numbersAreWrittenAsPythonsRepr() {
        String[][] cases = {{"1", "1.0"}, {"2000", "2000.0"}, {"1e-5", "1e-05"}, {"1e-4", "0.0001"}, {"1e16", "1e+16"},
                {"1e15", "1000000000000000.0"}, {"0.1", "0.1"}, {"-2.5", "-2.5"}, {"1e22", "1e+22"}, {"1e23", "1e+23"},
                {"5e-324", "5e-324"}, {"1.7976931348623157e308", "1.7976931348623157e+308"}, {"0.19277635317599257", "0.19277635317599257"},
                {"4.433372004319469e16", "4.433372004319469e+16"}, {"123456789.123", "123456789.123"}, {"0", "0.0"}, {"-0.0", "-0.0"}};
        for (String[] c : cases) assertEquals(c[0], c[1], UserHistory.formatDouble(Double.parseDouble(c[0])));
        assertEquals("NaN", UserHistory.formatDouble(Double.NaN));
        assertEquals("-Infinity", UserHistory.formatDouble(Double.NEGATIVE_INFINITY));
        Random r = new Random(3);
        for (int i = 0; i < 20000; i++) {
            double x = Double.longBitsToDouble(r.nextLong());
            if (Double.isNaN(x) || Double.isInfinite(x)) continue;
            assertEquals(x, Double.parseDouble(UserHistory.formatDouble(x)), 0.0);
        }
        assertEquals(3.0, UserHistory.log2(8.0), 0.0);
        assertEquals(-10.0, UserHistory.log2(Math.pow(2, -10)), 0.0);
        assertEquals(Math.log(3.0) / Math.log(2.0), UserHistory.log2(3.0), 1e-15);
    }

    @Test
    public void oddSpellingsSurviveSaveAndLoad() throws Exception {
        UserHistory h = new UserHistory();
        List<String> odd = Arrays.asList("caf\u00e9", "q\"uote", "back\\slash", "tab\there", "line\nbreak", "ctl\u0001x",
                "\uD83D\uDE00", "lone\uD800", "\u65e5\u672c", "slash/", "\u2028");
        h.learn(odd);
        File f = temp("user.history");
        h.save(f.getPath());
        String text = new String(java.nio.file.Files.readAllBytes(f.toPath()), StandardCharsets.UTF_8);
        assertTrue("non-ASCII is written as is, as Python's ensure_ascii=False", text.contains("caf\u00e9") && text.contains("\uD83D\uDE00"));
        assertTrue(text.contains("\"ctl\\u0001x\"") && text.contains("\"tab\\there\"") && text.contains("\"lone\\ud800\""));
        UserHistory back = UserHistory.load(f.getPath());
        assertEquals(h.toJson(), back.toJson());
        for (String w : odd) assertEquals(w, h.count(w), back.count(w), 0.0);
        assertEquals(h.distribution("slash/"), back.distribution("slash/"));
    }

    /** The word "a" and its count, first met in the words list. */
    private static final String A_COUNT = "\\[\"a\",([0-9.e-]+),";

    /** Each damaged or foreign file, with a part of the expected message. */
    @Test
    public void damagedAndForeignFilesAreRefusedInOneLineNamingTheFile() throws Exception {
        UserHistory h = new UserHistory(10, 5, 5, 2.0);
        h.learn(Arrays.asList("a", "b", "c"));
        String good = h.toJson();
        Object[][] cases = {
            {"garbage", "not a keyboard_lm user history"},
            {"", "not a keyboard_lm user history"},
            {"[1, 2]", "not a keyboard_lm user history (format None)"},
            {"{\"format\": \"other\"}", "not a keyboard_lm user history (format a string of 5 characters)"},
            {good.substring(0, good.length() / 2), "not a keyboard_lm user history"},
            {good + "x", "not a keyboard_lm user history"},
            {good.replace("\"version\":1", "\"version\":2"), "user history version 2, this keyboard_lm reads 1"},
            {good.replace("\"version\":1,", ""), "user history version None"},
            {good.replace(",\"clock\":3", ""), "damaged user history (no field 'clock')"},
            {good.replace("\"clock\":3", "\"clock\":\"3\""), "damaged user history (clock:"},
            {good.replace("\"clock\":3", "\"clock\":2.5"), "damaged user history (clock:"},
            {good.replace("\"clock\":3", "\"clock\":1"), "damaged user history (counts, clocks or bounds out of range)"},
            {good.replaceFirst(A_COUNT, "[\"a\",-$1,"), "damaged user history (counts, clocks or bounds out of range)"},
            {good.replaceFirst(A_COUNT, "[\"a\",NaN,"), "damaged user history (counts, clocks or bounds out of range)"},
            {good.replaceFirst(A_COUNT, "[\"a\",Infinity,"), "damaged user history (counts, clocks or bounds out of range)"},
            {good.replaceFirst(A_COUNT, "[\"a\",1,$1,"), "damaged user history (words: an entry of 4 values, not 3)"},
            {good.replaceFirst(A_COUNT, "[7,$1,"), "damaged user history (words: 7 is not a string)"},
            {good.replace("\"max_words\":5", "\"max_words\":2"), "damaged user history (counts, clocks or bounds out of range)"},
            {good.replace("\"max_pairs\":5", "\"max_pairs\":2"), "damaged user history (counts, clocks or bounds out of range)"},
            {good.replace("\"max_words\":5", "\"max_words\":0"), "damaged user history (max_words and max_pairs must be >= 1"},
            {good.replace("\"half_life\":10.0", "\"half_life\":-1"), "damaged user history (half_life must be > 0 words"},
            {good.replace("\"contexts\":[[\"<s>\"", "\"contexts\":[[\"zz\""), "damaged user history (counts, clocks or bounds out of range)"},
            {good.replace("\"words\":[", "\"words\":{").replace("],\"pairs\"", "},\"pairs\""), "not a keyboard_lm user history"},
            {good.replace("\"words\":", "\"words\":7,\"x\":"), "damaged user history (words: not a list)"},
            {"{\"format\":\"keyboard_lm.user_history\",\"version\":1,\"a\":" + repeat("[", 200) + repeat("]", 200) + "}", "nested deeper"},
            {"\uFEFF" + good, "not a keyboard_lm user history"},
            {good.replace("\"a\"", "\"a\u0001\""), "not a keyboard_lm user history (not JSON: control character"},
        };
        File f = temp("user.history");
        for (Object[] c : cases) {
            write(f, ((String) c[0]).getBytes(StandardCharsets.UTF_8));
            refused(f, (String) c[1]);
        }
        write(f, new byte[] {'{', '"', (byte) 0xff, '"', '}'});
        refused(f, "not a keyboard_lm user history (not UTF-8 text)");
        File missing = new File(f.getParentFile(), "missing.history");
        refused(missing, "cannot read the user history");
        write(f, good.getBytes(StandardCharsets.UTF_8));
        assertEquals(good, UserHistory.load(f.getPath()).toJson());
    }

    static String repeat(String s, int n) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < n; i++) b.append(s);
        return b.toString();
    }

    static void refused(File f, String expected) {
        try {
            UserHistory.load(f.getPath());
            fail(f + " must be refused: " + expected);
        } catch (UserHistoryException e) {
            String m = e.getMessage();
            assertTrue(m, m.startsWith(f.getPath() + ": ") && m.contains(expected));
            assertFalse(m, m.contains("\n"));
        }
    }

    private static final String CORRUPT = "0123456789-.,[]{}\":eE ax\u00ff";

    @Test
    public void randomCorruptionsAreRefusedOrLoadAsAValidHistory() throws Exception {
        UserHistory h = new UserHistory(40, 30, 50, 2.0);
        Random r = new Random(4);
        for (int i = 0; i < 200; i++) h.learnWord("p" + r.nextInt(20), "w" + r.nextInt(60));
        byte[] good = h.toJson().getBytes(StandardCharsets.UTF_8);
        File f = temp("user.history");
        int refused = 0;
        for (int i = 0; i < 400; i++) {
            byte[] bad = good.clone();
            for (int k = 1 + r.nextInt(3); k > 0; k--) bad[r.nextInt(bad.length)] = (byte) CORRUPT.charAt(r.nextInt(CORRUPT.length()));
            if (r.nextInt(4) == 0) bad = Arrays.copyOf(bad, r.nextInt(bad.length));
            write(f, bad);
            try {
                UserHistory back = UserHistory.load(f.getPath());
                assertTrue(back.numWords() <= back.maxWords && back.numPairs() <= back.maxPairs);
                back.learn(Arrays.asList("still", "works"));
                back.distribution(null);
                back.topWords();
            } catch (UserHistoryException e) {
                assertTrue(e.getMessage(), e.getMessage().startsWith(f.getPath() + ": ") && !e.getMessage().contains("\n"));
                refused++;
            }
        }
        System.out.println("UserHistory: 400 random corruptions, " + refused + " refused in one line, the rest load and learn");
    }
}
