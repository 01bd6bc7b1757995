package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.Test;

/**
 * The Java UserHistory reproduces the Python one (tests/golden/user_history_vectors.json,
 * written by tests/golden/make_user_history_vectors.py, handed over as -Dkblm.userhistory):
 * learning the golden sentences with the golden settings (decay and both evictions happen)
 * gives the golden state, counts to 1e-12 relative and clocks exactly; every case's full
 * next-word distribution (to 1e-12), context_count (to 1e-12) and top_words(5) (exactly); the
 * golden state, loaded, predicts the same and carries the user's weight, written back as the
 * same bytes Python wrote; and a state saved by Java reads back as the same history.
 */
public class UserHistoryGoldenTest {
    static final double TOLERANCE = 1e-12;

    static Map<String, Object> golden() throws Exception {
        String path = System.getProperty("kblm.userhistory");
        assertTrue("system property kblm.userhistory names tests/golden/user_history_vectors.json", path != null);
        return GoldenJson.object(GoldenJson.read(path));
    }

    /** The golden sentences learnt with the golden settings, then the user's weight set (as the generator does). */
    static UserHistory learnt(Map<String, Object> golden) {
        Map<String, Object> s = GoldenJson.object(golden.get("settings"));
        UserHistory h = new UserHistory((Double) s.get("half_life"), ((Double) s.get("max_words")).intValue(),
                ((Double) s.get("max_pairs")).intValue(), (Double) s.get("beta"));
        for (Object sentence : GoldenJson.array(golden.get("sentences"))) {
            List<String> words = new ArrayList<String>();
            for (Object w : GoldenJson.array(sentence)) words.add((String) w);
            h.learn(words);
        }
        h.setWeight(goldenWeight(golden));
        return h;
    }

    /** The state's "weight" (the golden file must carry one). */
    static Double goldenWeight(Map<String, Object> golden) {
        Object w = GoldenJson.object(golden.get("state")).get("weight");
        assertTrue("the golden state carries the user's weight", w instanceof Double);
        return (Double) w;
    }

    /** The weight's number exactly as Python's json module wrote it in the golden file (Python's repr). */
    static String goldenWeightText() throws Exception {
        String text = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(System.getProperty("kblm.userhistory"))),
                java.nio.charset.StandardCharsets.UTF_8);
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("\"weight\":\\s*([-+0-9.eE]+)").matcher(text);
        assertTrue("the golden file holds a weight", m.find());
        String found = m.group(1);
        assertTrue("the golden file holds one weight", !m.find());
        return found;
    }

    /** Java writes the weight as Python does: the last key, the same number text. */
    static void writesTheGoldenWeight(String where, UserHistory h) throws Exception {
        String json = h.toJson();
        String tail = ",\"weight\":" + goldenWeightText() + "}";
        assertTrue(where + ": the JSON ends with " + tail + ": ..." + json.substring(Math.max(0, json.length() - 60)), json.endsWith(tail));
        assertEquals(where + ": weight written once", json.indexOf("\"weight\""), json.lastIndexOf("\"weight\""));
    }

    static void close(String where, double want, double got) {
        assertTrue(where + ": want " + want + ", got " + got,
                Math.abs(want - got) <= TOLERANCE * Math.max(Math.abs(want), Math.abs(got)) || want == got);
    }

    /** Two parsed states: the same keys, settings, clocks and spellings exactly, counts to 1e-12 relative. */
    static void sameState(String where, Map<String, Object> want, Map<String, Object> got) {
        assertEquals(where + " keys", new java.util.TreeSet<String>(want.keySet()), new java.util.TreeSet<String>(got.keySet()));
        for (String key : want.keySet()) {
            Object w = want.get(key);
            Object g = got.get(key);
            if (w instanceof List) {
                List<Object> wl = GoldenJson.array(w);
                List<Object> gl = GoldenJson.array(g);
                assertEquals(where + " " + key + " entries", wl.size(), gl.size());
                for (int i = 0; i < wl.size(); i++) {
                    Object wi = wl.get(i);
                    if (!(wi instanceof List)) {  // "total": [count, clock]
                        sameRow(where + " " + key, wl, gl);
                        break;
                    }
                    sameRow(where + " " + key + "[" + i + "]", GoldenJson.array(wi), GoldenJson.array(gl.get(i)));
                }
            } else {
                assertEquals(where + " " + key, w, g);
            }
        }
    }

    /** [spelling..., count, clock]: the count is the one before the clock. */
    private static void sameRow(String where, List<Object> want, List<Object> got) {
        assertEquals(where, want.size(), got.size());
        int n = want.size();
        for (int i = 0; i < n; i++) {
            if (i == n - 2) close(where + " count", (Double) want.get(i), (Double) got.get(i));
            else assertEquals(where + " value " + i, want.get(i), got.get(i));
        }
    }

    static void predictsTheGoldenCases(String where, Map<String, Object> golden, UserHistory h) {
        int cases = 0;
        for (Object o : GoldenJson.array(golden.get("cases"))) {
            Map<String, Object> c = GoldenJson.object(o);
            String prev = (String) c.get("previous");
            String at = where + " after " + (prev == null ? "<s>" : prev);
            Map<String, Object> want = GoldenJson.object(c.get("distribution"));
            Map<String, Double> got = h.distribution(prev);
            assertEquals(at + " words", new java.util.TreeSet<String>(want.keySet()), new java.util.TreeSet<String>(got.keySet()));
            double sum = 0;
            for (Map.Entry<String, Object> e : want.entrySet()) {
                close(at + " p(" + e.getKey() + ")", (Double) e.getValue(), got.get(e.getKey()));
                close(at + " probability(" + e.getKey() + ")", (Double) e.getValue(), h.probability(e.getKey(), prev));
                sum += got.get(e.getKey());
            }
            assertEquals(at + " sums to 1", 1.0, sum, 1e-12);
            assertEquals(at + " top_words(5)", c.get("top_words"), h.topWords(5));
            assertTrue(at + ": the golden case has a context_count", c.get("context_count") instanceof Double);
            close(at + " context_count", (Double) c.get("context_count"), h.contextCount(prev));
            Map<String, Double> candidates = h.candidates(prev, new ArrayList<String>());
            for (Map.Entry<String, Double> e : candidates.entrySet()) {
                close(at + " candidate " + e.getKey(), (Double) want.get(e.getKey()), e.getValue());
            }
            cases++;
        }
        assertTrue(where + ": the golden file has cases", cases >= 5);
    }

    @Test
    public void learningTheGoldenSentencesGivesTheGoldenStateAndPredictions() throws Exception {
        Map<String, Object> g = golden();
        UserHistory h = learnt(g);
        Map<String, Object> state = GoldenJson.object(g.get("state"));
        java.util.Set<String> distinct = new java.util.HashSet<String>();
        for (Object sentence : GoldenJson.array(g.get("sentences"))) for (Object w : GoldenJson.array(sentence)) distinct.add((String) w);
        assertTrue("the golden sentences pass the word bound", distinct.size() > h.maxWords && h.numWords() <= h.maxWords);
        sameState("learnt", state, GoldenJson.object(GoldenJson.parse(h.toJson())));
        writesTheGoldenWeight("learnt", h);
        predictsTheGoldenCases("learnt", g, h);
        assertEquals(h.contextCount(null), h.contextCount(UserHistory.START), 0.0);
    }

    @Test
    public void theGoldenStateLoadsAndPredictsTheSame() throws Exception {
        Map<String, Object> g = golden();
        Map<String, Object> state = GoldenJson.object(g.get("state"));
        UserHistory loaded = UserHistory.fromJson(json(state), "golden state");
        assertEquals("the weight is read from the state", goldenWeight(g), loaded.weight());
        sameState("loaded", state, GoldenJson.object(GoldenJson.parse(loaded.toJson())));
        writesTheGoldenWeight("loaded", loaded);
        assertEquals("written and read again: the same bytes", loaded.toJson(), UserHistory.fromJson(loaded.toJson(), "again").toJson());
        predictsTheGoldenCases("loaded", g, loaded);
        // Learning on continues as in the history that was saved (decay and evictions included).
        UserHistory h = learnt(g);
        for (UserHistory x : new UserHistory[] {h, loaded}) {
            for (int i = 0; i < 30; i++) x.learn(java.util.Arrays.asList("thanks", "w" + (i % 7), "anna"));
        }
        sameState("continued", GoldenJson.object(GoldenJson.parse(h.toJson())), GoldenJson.object(GoldenJson.parse(loaded.toJson())));
    }

    @Test
    public void aSavedStateReadsBackAsTheSameHistory() throws Exception {
        Map<String, Object> g = golden();
        UserHistory h = learnt(g);
        File file = File.createTempFile("kblm", ".history");
        try {
            h.save(file.getPath());
            assertTrue("no temporary file is left", !new File(file.getPath() + ".tmp").exists());
            UserHistory back = UserHistory.load(file.getPath());
            assertEquals(h.toJson(), back.toJson());
            assertEquals("the weight is saved and loaded", goldenWeight(g), back.weight());
            writesTheGoldenWeight("saved and loaded", back);
            predictsTheGoldenCases("saved and loaded", g, back);
        } finally {
            file.delete();
        }
    }

    /** A parsed golden value as JSON text (GoldenJson numbers are doubles; Double.toString reads back exactly). */
    static String json(Object o) {
        StringBuilder b = new StringBuilder();
        write(b, o);
        return b.toString();
    }

    private static void write(StringBuilder b, Object o) {
        if (o == null) {
            b.append("null");
        } else if (o instanceof String) {
            UserHistory.appendString(b, (String) o);
        } else if (o instanceof Double) {
            b.append(Double.toString((Double) o));
        } else if (o instanceof List) {
            b.append('[');
            boolean first = true;
            for (Object x : GoldenJson.array(o)) {
                if (!first) b.append(',');
                first = false;
                write(b, x);
            }
            b.append(']');
        } else if (o instanceof Map) {
            b.append('{');
            boolean first = true;
            for (Map.Entry<String, Object> e : GoldenJson.object(o).entrySet()) {
                if (!first) b.append(',');
                first = false;
                UserHistory.appendString(b, e.getKey());
                b.append(':');
                write(b, e.getValue());
            }
            b.append('}');
        } else {
            b.append(o);
        }
    }
}
