package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import org.junit.Test;

/**
 * Corrupted copies of every golden model, thousands of them: bytes flipped anywhere, in the
 * flatbuffer's structure (tables, offsets, shapes, indices, not the weights) or in the
 * archive; 32-bit words overwritten; truncations; chunks spliced in from another model,
 * inserted or deleted. Each is loaded as the damage left it (the checksum must refuse it) and
 * resealed (the checksum recomputed, as a crafted file would have it, so the structural checks
 * must). The only outcomes allowed: a ModelFileException of one line naming the file, or a
 * model that loads and steps. Any other exception or error fails the test with the variant.
 * The same kinds of damage as benchmarks/export/model_fuzz.py, which runs more of them.
 */
public class ModelFileFuzzTest {
    private static final String[] KINDS = {"flip", "structure", "word", "archive", "truncate", "splice", "insert", "delete"};
    private static final long[] WORDS = {0, 1, 2, 3, 4, 7, 8, 16, 255, 0xFFFF, 0x7FFFFFFFL, 0x80000000L, 0xFFFFFFFFL,
        0xFFFFFFFEL, 0x10000};
    /** Variants per golden model and kind, each loaded raw and resealed: 8 models x 8 kinds x 2 x this many loads. */
    private static final int PER_KIND = 24;

    /** A golden model, sealed as committed, and the positions of its flatbuffer's structure. */
    private static final class Golden {
        final String name;
        final byte[] data;
        final int flatbufferEnd;
        final int[] structure;

        Golden(File f) throws Exception {
            name = f.getName();
            data = Files.readAllBytes(f.toPath());
            ByteBuffer b = ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN);
            int end = EmbeddedZip.endRecord(b);
            flatbufferEnd = (int) (end - (b.getInt(end + 12) & 0xffffffffL) - (b.getInt(end + 16) & 0xffffffffL));
            boolean[] weights = new boolean[flatbufferEnd];
            FlatBufferReader r = new FlatBufferReader(data);
            int buffers = r.vector(r.root(), 4);
            for (int i = 0; i < r.length(buffers); i++) {
                int vec = r.vector(r.tableAt(buffers, i), 0);
                if (vec != 0 && r.length(vec) >= 64) Arrays.fill(weights, vec + 4, vec + 4 + r.length(vec), true);
            }
            int n = 0;
            int[] at = new int[flatbufferEnd];
            for (int i = 8; i < flatbufferEnd; i++) if (!weights[i]) at[n++] = i;
            structure = Arrays.copyOf(at, n);
        }
    }

    private static List<Golden> goldens() throws Exception {
        File dir = StepEngineGoldenTest.modelFile("cifg_dynamic-range.tflite").getParentFile();
        File[] files = dir.listFiles((d, n) -> n.endsWith(".tflite"));
        Arrays.sort(files);
        List<Golden> out = new ArrayList<Golden>();
        for (File f : files) out.add(new Golden(f));
        return out;
    }

    private static byte[] mutate(Golden g, String kind, Random r, List<Golden> all) {
        byte[] d = g.data.clone();
        int n = d.length;
        switch (kind) {
            case "flip":
                for (int c = 1 + r.nextInt(8); c > 0; c--) d[r.nextInt(n)] ^= (byte) (1 + r.nextInt(255));
                return d;
            case "structure":
                for (int c = 1 + r.nextInt(4); c > 0; c--) d[g.structure[r.nextInt(g.structure.length)]] ^= (byte) (1 + r.nextInt(255));
                return d;
            case "word": {
                int at = g.structure[r.nextInt(g.structure.length)] & ~3;
                long old = ByteBuffer.wrap(d).order(ByteOrder.LITTLE_ENDIAN).getInt(at) & 0xffffffffL;
                long[] near = {old + 1, old - 1, old + 4, old - 4, old + 16, old * 2, g.flatbufferEnd, n, r.nextInt()};
                long v = r.nextBoolean() ? WORDS[r.nextInt(WORDS.length)] : near[r.nextInt(near.length)];
                ByteBuffer.wrap(d).order(ByteOrder.LITTLE_ENDIAN).putInt(at, (int) v);
                return d;
            }
            case "archive":
                for (int c = 1 + r.nextInt(4); c > 0; c--) d[g.flatbufferEnd + r.nextInt(n - g.flatbufferEnd)] ^= (byte) (1 + r.nextInt(255));
                return d;
            case "truncate":
                return Arrays.copyOf(d, r.nextInt(n));
            case "splice": {
                byte[] src = all.get(r.nextInt(all.size())).data;
                int size = 1 + r.nextInt(256);
                System.arraycopy(src, r.nextInt(src.length - size), d, r.nextInt(n - size), size);
                return d;
            }
            case "insert": {
                int at = r.nextInt(n);
                byte[] extra = new byte[1 + r.nextInt(16)];
                r.nextBytes(extra);
                byte[] out = new byte[n + extra.length];
                System.arraycopy(d, 0, out, 0, at);
                System.arraycopy(extra, 0, out, at, extra.length);
                System.arraycopy(d, at, out, at + extra.length, n - at);
                return out;
            }
            default: {  // delete
                int at = r.nextInt(n);
                int cut = Math.min(n - at, 1 + r.nextInt(16));
                byte[] out = new byte[n - cut];
                System.arraycopy(d, 0, out, 0, at);
                System.arraycopy(d, at + cut, out, at, n - at - cut);
                return out;
            }
        }
    }

    /** "loaded" or "refused"; anything else fails, naming the variant. */
    private static String load(String name, byte[] data) {
        try {
            ModelFile m = ModelFile.fromBytes(name, data);
            float[] state = m.engine.initialState();
            m.engine.step(Vocabulary.BOS, state);
            m.engine.stepFull(Vocabulary.BOS, state);
            return "loaded";
        } catch (ModelFileException e) {
            assertTrue(e.getMessage(), e.getMessage().startsWith(name + ": ") && !e.getMessage().contains("\n"));
            return "refused";
        } catch (Throwable t) {
            throw new AssertionError(name + ": neither loaded nor refused with a ModelFileException: " + t, t);
        }
    }

    @Test(timeout = 300_000)
    public void corruptedModelsAreRefusedInOneLineOrLoadAndNothingElse() throws Exception {
        List<Golden> all = goldens();
        assertEquals(8, all.size());
        Random r = new Random(70);
        int[] raw = new int[2];  // loaded, refused
        int[] resealed = new int[2];
        for (String kind : KINDS) {
            for (Golden g : all) {
                for (int i = 0; i < PER_KIND; i++) {
                    byte[] bad = mutate(g, kind, r, all);
                    if (Arrays.equals(bad, g.data)) continue;
                    String name = g.name + "-" + kind + "-" + i;
                    raw[load(name + "-raw.tflite", bad).equals("loaded") ? 0 : 1]++;
                    resealed[load(name + "-resealed.tflite", ModelBytes.seal(bad)).equals("loaded") ? 0 : 1]++;
                }
            }
        }
        // Damage the checksum does not cover cannot load: every raw variant differs from a sealed file.
        assertEquals("a corrupted file loaded although its checksum differs", 0, raw[0]);
        assertTrue("the structural checks refused nothing", resealed[1] > 0);
        System.out.println("ModelFile fuzz: " + (raw[1] + resealed[0] + resealed[1]) + " corrupted files; raw: "
                + raw[1] + " refused; resealed: " + resealed[1] + " refused, " + resealed[0] + " load and step");
    }
}
