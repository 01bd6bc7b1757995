package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.junit.Test;

/**
 * The phrase table's file format and lookup, against Python's: the FNV-1a context hash and the
 * golden table's lookups on the fixed vectors of tests/golden/phrase_fixture.json, a table
 * written here read back, the gate's buckets, and every damaged table refused in one line that
 * starts with where it was read from.
 */
public class PhraseTableTest {
    /**
     * A phrases.bin as Python's {@code PhraseTable.to_bytes} writes it: {@code rows} maps each
     * context to {users, next id, score, next id, score, ...}; contexts are sorted by hash here.
     */
    static byte[] tableBytes(int vocabSize, int maxOrder, Map<int[], int[]> rows) {
        TreeMap<Long, int[][]> byHash = new TreeMap<Long, int[][]>();
        int entries = 0;
        for (Map.Entry<int[], int[]> r : rows.entrySet()) {
            byHash.put(PhraseTable.contextHash(r.getKey(), 0, r.getKey().length) & 0xffffffffL, new int[][] {r.getKey(), r.getValue()});
            entries += (r.getValue().length - 1) / 2;
        }
        int c = byHash.size();
        ByteBuffer b = ByteBuffer.allocate(PhraseTable.HEADER_BYTES + 7 * c + 3 * entries).order(ByteOrder.LITTLE_ENDIAN);
        b.put(new byte[] {'K', 'L', 'P', 'T'}).putShort((short) 1).put((byte) maxOrder).put((byte) 0);
        b.putInt(vocabSize).putInt(c).putInt(entries);
        for (long h : byHash.keySet()) b.putInt((int) h);
        for (int[][] r : byHash.values()) b.putShort((short) r[1][0]);
        for (int[][] r : byHash.values()) b.put((byte) ((r[1].length - 1) / 2));
        for (int[][] r : byHash.values()) for (int i = 1; i < r[1].length; i += 2) b.putShort((short) r[1][i]);
        for (int[][] r : byHash.values()) for (int i = 2; i < r[1].length; i += 2) b.put((byte) r[1][i]);
        return b.array();
    }

    /** A small table (as tests/test_phrase_table.py's small_table): (<bos> 5) -> 7, 8; (5) -> 9; (7 8 9) -> 4. */
    static byte[] small() {
        Map<int[], int[]> rows = new java.util.LinkedHashMap<int[], int[]>();
        rows.put(new int[] {1, 5}, new int[] {10, 7, 153, 8, 77});
        rows.put(new int[] {5}, new int[] {100, 9, 102});
        rows.put(new int[] {7, 8, 9}, new int[] {3, 4, 255});
        return tableBytes(50, 4, rows);
    }

    @Test
    public void theContextHashIsPythonsFnv1aOnTheFixtureVectors() throws Exception {
        List<Object> vectors = GoldenJson.array(PhraseParityGoldenTest.fixture().get("hashes"));
        assertTrue(vectors.size() >= 5);
        for (Object o : vectors) {
            Map<String, Object> v = GoldenJson.object(o);
            List<Object> ids = GoldenJson.array(v.get("ids"));
            int[] a = new int[ids.size() + 2];
            for (int i = 0; i < ids.size(); i++) a[i + 1] = ((Double) ids.get(i)).intValue();
            long want = ((Double) v.get("hash")).longValue();
            assertEquals("hash of " + ids, want, PhraseTable.contextHash(a, 1, ids.size()) & 0xffffffffL);
        }
    }

    @Test
    public void theGoldenTableLooksUpWhatPythonLooksUp() throws Exception {
        Map<String, Object> fixture = PhraseParityGoldenTest.fixture();
        ModelFile model = ModelFile.load(PhraseParityGoldenTest.golden((String) fixture.get("model")).getPath());
        assertEquals(((Double) fixture.get("contexts")).intValue(), model.phrases.size());
        int found = 0;
        for (Object o : GoldenJson.array(fixture.get("lookups"))) {
            Map<String, Object> v = GoldenJson.object(o);
            List<Object> ids = GoldenJson.array(v.get("ids"));
            int[] context = new int[ids.size()];
            for (int i = 0; i < context.length; i++) context[i] = ((Double) ids.get(i)).intValue();
            PhraseTable.Entry e = model.phrases.lookup(context, context.length);
            if (v.get("found") == null) {
                assertNull("no stored context ends " + ids, e);
                continue;
            }
            Map<String, Object> want = GoldenJson.object(v.get("found"));
            String where = "lookup " + ids;
            assertEquals(where, ((Double) want.get("n")).intValue(), e.n);
            assertEquals(where, ((Double) want.get("users")).intValue(), e.users);
            List<Object> next = GoldenJson.array(want.get("ids"));
            List<Object> q = GoldenJson.array(want.get("q"));
            assertEquals(where, next.size(), e.ids().length);
            for (int i = 0; i < next.size(); i++) {
                assertEquals(where, ((Double) next.get(i)).intValue(), e.ids()[i]);
                assertEquals(where + " q is float32 score / 255 exactly", ((Double) q.get(i)).floatValue(), e.q()[i], 0f);
            }
            found++;
        }
        assertTrue("the vectors find stored contexts", found >= 10);
    }

    @Test
    public void aTableReadsBackWhatWasWrittenAndFindsTheLongestContext() throws Exception {
        PhraseTable t = PhraseTable.fromBytes(small(), 50, "t.bin");
        assertEquals(3, t.size());
        assertEquals(4, t.maxOrder);
        PhraseTable.Entry e = t.lookup(new int[] {0, 1, 5}, 3);
        assertEquals(2, e.n);
        assertEquals(10, e.users);
        assertArrayEquals(new int[] {7, 8}, e.ids());
        assertArrayEquals(new float[] {153 / 255f, 77 / 255f}, e.q(), 0f);
        assertEquals(1, t.lookup(new int[] {3, 5}, 2).n);
        assertNull("no stored context ends with 3", t.lookup(new int[] {5, 3}, 2));
        assertEquals(3, t.lookup(new int[] {7, 8, 9}, 3).n);
        assertEquals("only the first length ids count", 2, t.lookup(new int[] {1, 5, 99}, 2).n);
        assertNull("a context spanning an unknown word is not looked up", t.lookup(new int[] {-1, 8, 9}, 3));
        assertEquals("a shorter context after the unknown word still matches", 1, t.lookup(new int[] {-1, 5}, 2).n);
        assertNull(t.lookup(new int[0], 0));
    }

    @Test
    public void theGateBucketsByUsersAsBisectRight() {
        PhraseGate g = new PhraseGate(new long[] {4, 16, 64}, new double[][] {{0.0, 0.1, 0.2, 0.3}, {0.2, 0.3, 0.4, 0.5}});
        assertEquals(0.0, g.weight(1, 3), 0.0);
        assertEquals(0.1, g.weight(1, 4), 0.0);
        assertEquals(0.3, g.weight(2, 15), 0.0);
        assertEquals(0.4, g.weight(2, 16), 0.0);
        assertEquals(0.5, g.weight(2, 65535), 0.0);
        assertEquals("no row for n = 3", 0.0, g.weight(3, 100), 0.0);
        assertEquals(0.0, g.weight(0, 100), 0.0);
        for (double[][] bad : new double[][][] {{{0.0, 1.0, 0.0, 0.0}}, {{0.0, 0.1}}, {{Double.NaN, 0, 0, 0}}}) {
            try {
                new PhraseGate(new long[] {4, 16, 64}, bad);
                fail("weights " + Arrays.deepToString(bad) + " must be refused");
            } catch (IllegalArgumentException e) {
                assertTrue(e.getMessage(), e.getMessage().startsWith("phrase gate rows need 4 weights in [0, 1)"));
            }
        }
        try {
            new PhraseGate(new long[] {16, 4}, new double[][] {});
            fail();
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage(), e.getMessage().contains("ascending positive counts, got [16, 4]"));
        }
    }

    static byte[] edited(byte[] data, int at, int value) {
        byte[] out = data.clone();
        out[at] = (byte) value;
        return out;
    }

    static void refused(byte[] data, int vocabSize, String expected) {
        try {
            PhraseTable.fromBytes(data, vocabSize, "m.tflite!phrases.bin");
            fail("must be refused: " + expected);
        } catch (ModelFileException e) {
            assertTrue(e.getMessage(), e.getMessage().startsWith("m.tflite!phrases.bin: "));
            assertTrue(e.getMessage() + " should say " + expected, e.getMessage().contains(expected));
            assertTrue(e.getMessage(), !e.getMessage().contains("\n"));
        }
    }

    @Test
    public void aDamagedOrForeignTableIsRefusedInOneLine() throws Exception {
        byte[] good = small();
        int c = 3;
        int e = 4;
        int counts = PhraseTable.HEADER_BYTES + 6 * c;
        int ids = counts + c;
        int scores = ids + 2 * e;
        refused(Arrays.copyOf(good, 10), 50, "10 bytes, shorter than the 20-byte header");
        refused(edited(good, 3, 'X'), 50, "not a phrase table (magic b'KLPX')");
        refused(edited(good, 4, 9), 50, "phrase table version 9, this version reads 1");
        refused(edited(good, 6, 5), 50, "max_order 5 outside [1, 4]");
        refused(edited(good, 6, 0), 50, "max_order 0 outside [1, 4]");
        refused(good, 60, "the table is for a vocabulary of 50 words, the model has 60");
        refused(Arrays.copyOf(good, good.length + 1), 50, "the header's 3 contexts and 4 entries need " + good.length);
        refused(Arrays.copyOf(good, good.length - 1), 50, "need " + good.length);
        refused(edited(good, 15, 0x7f), 50, "need");  // a context count near 2^31: no allocation, one line
        byte[] swapped = good.clone();
        System.arraycopy(good, PhraseTable.HEADER_BYTES, swapped, PhraseTable.HEADER_BYTES + 4, 4);
        System.arraycopy(good, PhraseTable.HEADER_BYTES + 4, swapped, PhraseTable.HEADER_BYTES, 4);
        refused(swapped, 50, "context hashes are not strictly ascending");
        refused(edited(good, counts, 0), 50, "next-word counts do not add up to 4 entries");
        refused(edited(good, counts, 3), 50, "next-word counts do not add up to 4 entries");
        refused(edited(good, ids + 1, 1), 50, "outside the vocabulary [0, 50)");
        refused(edited(good, scores, 0), 50, "a zero score or user count");
        refused(edited(edited(good, PhraseTable.HEADER_BYTES + 4 * c, 0), PhraseTable.HEADER_BYTES + 4 * c + 1, 0), 50,
                "a zero score or user count");
    }
}
