package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import java.util.zip.ZipOutputStream;

import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * Reading the model file's embedded zip: the vocabulary agrees with the Python predictor on every
 * word of its golden fixture (tests/golden/predictor_fixture.json, named by kblm.fixture), and
 * truncated, foreign and other-spec files made here from a golden model are refused in one line.
 */
public class ModelArchiveTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    @Test
    public void vocabularyFromTheModelAgreesWithThePythonPredictorOnEveryFixtureWord() throws Exception {
        Map<String, Object> models = GoldenJson.object(GoldenJson.object(
                GoldenJson.read(StepEngineGoldenTest.fixturePath())).get("models"));
        int checked = 0;
        for (Map.Entry<String, Object> model : models.entrySet()) {
            String path = StepEngineGoldenTest.modelFile(model.getKey()).getPath();
            ModelArchive m = ModelArchive.load(path);
            assertEquals(20, m.seqLen);
            Map<String, Object> entry = GoldenJson.object(model.getValue());
            List<Object> items = new ArrayList<Object>(GoldenJson.array(entry.get("contexts")));
            items.addAll(GoldenJson.array(entry.get("completions")));
            for (Object o : items) {
                Map<String, Object> item = GoldenJson.object(o);
                List<Object> ids = GoldenJson.array(item.get("top_ids"));
                List<Object> words = GoldenJson.array(item.get("top_words"));
                for (int i = 0; i < ids.size(); i++) {
                    int id = ((Double) ids.get(i)).intValue();
                    assertEquals(path + " id " + id, words.get(i), m.vocab.get(id));
                    checked++;
                }
            }
        }
        assertTrue("only " + checked + " fixture words", checked > 10);
    }

    @Test
    public void truncatedForeignAndOtherSpecFilesAreRefusedWithOneClearLine() throws Exception {
        List<String[]> cases = badModels(tmp.getRoot());
        assertEquals(5, cases.size());
        for (String[] c : cases) {
            String expected = c[0];
            String path = c[1];
            try {
                ModelArchive.load(path);
                fail(path + " must be refused");
            } catch (ModelFileException e) {
                assertTrue(e.getMessage(), e.getMessage().startsWith(path + ": "));
                assertTrue(e.getMessage() + " should say " + expected, e.getMessage().contains(expected));
                assertTrue(!e.getMessage().contains("\n"));
            }
        }
    }

    /**
     * Files a model reader must refuse, written into {@code dir} from the golden model
     * cifg_dynamic-range.tflite: {expected part of the message, path} for half the file, a foreign
     * file, three bytes, the flatbuffer without its zip, and the flatbuffer with a zip whose
     * metadata names another text spec.
     */
    static List<String[]> badModels(File dir) throws Exception {
        byte[] good = Files.readAllBytes(StepEngineGoldenTest.modelFile("cifg_dynamic-range.tflite").toPath());
        int flatbufferEnd = firstLocalHeader(good);
        List<String[]> cases = new ArrayList<String[]>();
        cases.add(write(dir, "truncated.tflite", Arrays.copyOf(good, good.length / 2), "truncated"));
        cases.add(write(dir, "foreign.tflite", "PK\u0003\u0004 not a model at all".getBytes(StandardCharsets.US_ASCII),
                "no TFL3 identifier"));
        cases.add(write(dir, "tiny.tflite", "TFL".getBytes(StandardCharsets.US_ASCII), "truncated or foreign"));
        cases.add(write(dir, "no_zip.tflite", Arrays.copyOf(good, flatbufferEnd), "truncated"));

        Map<String, byte[]> entries = entries(Arrays.copyOfRange(good, flatbufferEnd, good.length));
        String meta = new String(entries.get("keyboard_lm.json"), StandardCharsets.UTF_8);
        String otherMeta = meta.replaceFirst("\"text_spec\"\\s*:\\s*\"[^\"]*\"", "\"text_spec\": \"kblm-text-0\"");
        assertTrue("the golden model's metadata names its text spec", !otherMeta.equals(meta));
        ByteArrayOutputStream other = new ByteArrayOutputStream();
        other.write(good, 0, flatbufferEnd);
        other.write(zip("keyboard_lm.json", otherMeta.getBytes(StandardCharsets.UTF_8), "vocab.txt", entries.get("vocab.txt")));
        cases.add(write(dir, "other_spec.tflite", other.toByteArray(), "text spec kblm-text-0"));
        return cases;
    }

    private static String[] write(File dir, String name, byte[] data, String expected) throws IOException {
        File f = new File(dir, name);
        Files.write(f.toPath(), data);
        return new String[] {expected, f.getPath()};
    }

    /** Where the embedded zip's first entry starts: the end of the flatbuffer before it. */
    private static int firstLocalHeader(byte[] file) {
        ByteBuffer b = ByteBuffer.wrap(file).order(ByteOrder.LITTLE_ENDIAN);
        int eocd = EmbeddedZip.endRecord(b);
        assertTrue("the golden model has a zip end record", eocd >= 0);
        int entries = b.getShort(eocd + 10) & 0xffff;
        int cdSize = b.getInt(eocd + 12);
        int cdOffset = b.getInt(eocd + 16);
        int delta = eocd - cdSize - cdOffset;  // bytes before the archive, when its offsets are relative to it
        int first = Integer.MAX_VALUE;
        for (int i = 0, p = delta + cdOffset; i < entries; i++) {
            assertEquals(0x02014b50, b.getInt(p));
            first = Math.min(first, b.getInt(p + 42));
            p += 46 + (b.getShort(p + 28) & 0xffff) + (b.getShort(p + 30) & 0xffff) + (b.getShort(p + 32) & 0xffff);
        }
        return delta + first;
    }

    private static Map<String, byte[]> entries(byte[] zip) throws IOException {
        Map<String, byte[]> out = new HashMap<String, byte[]>();
        try (ZipInputStream in = new ZipInputStream(new ByteArrayInputStream(zip))) {
            byte[] buf = new byte[8192];
            for (ZipEntry e; (e = in.getNextEntry()) != null; ) {
                ByteArrayOutputStream data = new ByteArrayOutputStream();
                for (int n; (n = in.read(buf)) > 0; ) data.write(buf, 0, n);
                out.put(e.getName(), data.toByteArray());
            }
        }
        return out;
    }

    /** A zip of stored entries: name, bytes, name, bytes, ... (offsets relative to its own start). */
    private static byte[] zip(Object... nameAndBytes) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (ZipOutputStream z = new ZipOutputStream(out)) {
            for (int i = 0; i < nameAndBytes.length; i += 2) {
                byte[] data = (byte[]) nameAndBytes[i + 1];
                ZipEntry e = new ZipEntry((String) nameAndBytes[i]);
                CRC32 crc = new CRC32();
                crc.update(data);
                e.setMethod(ZipEntry.STORED);
                e.setSize(data.length);
                e.setCompressedSize(data.length);
                e.setCrc(crc.getValue());
                z.putNextEntry(e);
                z.write(data);
                z.closeEntry();
            }
        }
        return out.toByteArray();
    }
}
