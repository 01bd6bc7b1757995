package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * A model file's phrase table is read as keyboard_lm/inference/model_file.py reads it: the golden
 * file with a table carries it and its gate; one whose table is damaged, foreign (another
 * vocabulary), missing where the metadata describes it, or whose gate is bad is refused with one
 * ModelFileException naming the file; metadata whose "phrases" is null means no table. The bad
 * files are the golden one with its archive rewritten and sealed again (a checksum that matches),
 * so only the table is at fault.
 */
public class PhraseModelFileTest {
    @Rule
    public TemporaryFolder tmp = new TemporaryFolder();

    static byte[] golden() throws Exception {
        String model = (String) PhraseParityGoldenTest.fixture().get("model");
        return Files.readAllBytes(PhraseParityGoldenTest.golden(model).toPath());
    }

    static Map<String, byte[]> entries(byte[] model) throws Exception {
        return EmbeddedZip.read(ByteBuffer.wrap(model).order(ByteOrder.LITTLE_ENDIAN));
    }

    /** {@code model}'s flatbuffer followed by a new archive of {@code entries} (phrases.bin stored), sealed as the exporter seals. */
    static byte[] rebuilt(byte[] model, Map<String, byte[]> entries) throws Exception {
        ByteBuffer b = ByteBuffer.wrap(model).order(ByteOrder.LITTLE_ENDIAN);
        int eocd = EmbeddedZip.endRecord(b);
        int start = eocd - b.getInt(eocd + 12) - b.getInt(eocd + 16);  // the archive's offsets are relative to it
        ByteArrayOutputStream zip = new ByteArrayOutputStream();
        ZipOutputStream z = new ZipOutputStream(zip);
        for (Map.Entry<String, byte[]> e : entries.entrySet()) {
            ZipEntry entry = new ZipEntry(e.getKey());
            if (e.getKey().equals(ModelArchive.PHRASES_FILE)) {
                CRC32 crc = new CRC32();
                crc.update(e.getValue());
                entry.setMethod(ZipEntry.STORED);
                entry.setSize(e.getValue().length);
                entry.setCompressedSize(e.getValue().length);
                entry.setCrc(crc.getValue());
            }
            z.putNextEntry(entry);
            z.write(e.getValue());
            z.closeEntry();
        }
        z.close();
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(model, 0, start);
        out.write(zip.toByteArray());
        byte[] body = out.toByteArray();
        int end = EmbeddedZip.endRecord(ByteBuffer.wrap(body).order(ByteOrder.LITTLE_ENDIAN));
        String prefix = ModelArchive.CHECKSUM_PREFIX;
        int commentLength = prefix.length() + 64;
        body[end + 20] = (byte) commentLength;
        body[end + 21] = (byte) (commentLength >> 8);
        ByteArrayOutputStream sealed = new ByteArrayOutputStream();
        sealed.write(body);
        sealed.write((prefix + sha256(body)).getBytes(StandardCharsets.US_ASCII));
        return sealed.toByteArray();
    }

    static String sha256(byte[] data) throws Exception {
        StringBuilder s = new StringBuilder();
        for (byte x : MessageDigest.getInstance("SHA-256").digest(data)) s.append(String.format("%02x", x & 0xff));
        return s.toString();
    }

    /** The golden file with phrases.bin replaced by {@code table} and the metadata's sha256 made to match it. */
    static byte[] withTable(byte[] model, byte[] table) throws Exception {
        Map<String, byte[]> e = new LinkedHashMap<String, byte[]>(entries(model));
        String meta = new String(e.get("keyboard_lm.json"), StandardCharsets.UTF_8);
        String edited = meta.replaceFirst("\"sha256\": \"[0-9a-f]{64}\"", "\"sha256\": \"" + sha256(table) + "\"");
        assertTrue("the metadata names the table's sha256", !edited.equals(meta));
        e.put("keyboard_lm.json", edited.getBytes(StandardCharsets.UTF_8));
        e.put(ModelArchive.PHRASES_FILE, table);
        return rebuilt(model, e);
    }

    /** The golden file with the first {@code from} of its metadata replaced by {@code to}. */
    static byte[] withMetadata(byte[] model, String from, String to) throws Exception {
        Map<String, byte[]> e = new LinkedHashMap<String, byte[]>(entries(model));
        String meta = new String(e.get("keyboard_lm.json"), StandardCharsets.UTF_8);
        assertTrue(meta.contains(from));
        e.put("keyboard_lm.json", meta.replace(from, to).getBytes(StandardCharsets.UTF_8));
        return rebuilt(model, e);
    }

    static void refused(String name, byte[] data, String start, String expected) {
        try {
            ModelFile.fromBytes(name, data);
            fail(name + " must be refused: " + expected);
        } catch (ModelFileException e) {
            assertTrue(e.getMessage() + " should start with " + start, e.getMessage().startsWith(start));
            assertTrue(e.getMessage() + " should say " + expected, e.getMessage().contains(expected));
            assertTrue(e.getMessage(), !e.getMessage().contains("\n"));
        }
    }

    @Test
    public void theGoldenFileCarriesItsTableAndGateAndAFileWithoutOneHasNone() throws Exception {
        Map<String, Object> fixture = PhraseParityGoldenTest.fixture();
        ModelFile m = ModelFile.fromBytes("phrases.tflite", golden());
        assertEquals(((Double) fixture.get("contexts")).intValue(), m.phrases.size());
        assertEquals(m.vocab.size(), m.phrases.vocabSize);
        assertEquals("a unigram context of fewer than 4 users has no say", 0.0, m.phraseGate.weight(1, 3), 0.0);
        assertEquals(0.7, m.phraseGate.weight(4, 64), 0.0);
        ModelFile plain = ModelFile.load(PhraseParityGoldenTest.golden((String) fixture.get("base_model")).getPath());
        assertNull(plain.phrases);
        assertNull(plain.phraseGate);
        Session s = new Predictor(plain, Collections.<String>emptyList()).session();
        assertNull(s.phraseMatch());
    }

    @Test
    public void aRebuiltArchiveWithTheSameEntriesLoadsTheSameTable() throws Exception {
        byte[] model = golden();
        ModelFile m = ModelFile.fromBytes("same.tflite", rebuilt(model, entries(model)));
        assertEquals(ModelFile.fromBytes("golden.tflite", model).phrases.size(), m.phrases.size());
    }

    @Test
    public void aDamagedOrForeignTableIsRefusedInOneLineNamingTheFile() throws Exception {
        byte[] model = golden();
        byte[] table = entries(model).get(ModelArchive.PHRASES_FILE);
        int vocab = ModelFile.fromBytes("golden.tflite", model).vocab.size();

        Map<String, byte[]> flipped = new LinkedHashMap<String, byte[]>(entries(model));
        byte[] bad = table.clone();
        bad[bad.length - 1] ^= (byte) 0xff;
        flipped.put(ModelArchive.PHRASES_FILE, bad);
        refused("flip.tflite", rebuilt(model, flipped), "flip.tflite!phrases.bin: ",
                "the phrase table does not match the metadata's sha256; the file is damaged");

        Map<int[], int[]> rows = new LinkedHashMap<int[], int[]>();
        rows.put(new int[] {4}, new int[] {3, 5, 255});
        refused("foreign.tflite", withTable(model, PhraseTableTest.tableBytes(20000, 4, rows)), "foreign.tflite!phrases.bin: ",
                "the table is for a vocabulary of 20000 words, the model has " + vocab);
        refused("short.tflite", withTable(model, java.util.Arrays.copyOf(table, table.length - 1)), "short.tflite!phrases.bin: ",
                "need " + table.length);
        byte[] magic = table.clone();
        magic[0] = 'X';
        refused("magic.tflite", withTable(model, magic), "magic.tflite!phrases.bin: ", "not a phrase table");

        Map<String, byte[]> missing = new LinkedHashMap<String, byte[]>(entries(model));
        missing.remove(ModelArchive.PHRASES_FILE);
        refused("missing.tflite", rebuilt(model, missing), "missing.tflite: ",
                "the metadata describes a phrase table but the file has no phrases.bin");

        refused("gate.tflite", withMetadata(model, "\"gate\": {", "\"gate\": {\"bounds\": [4], \"weights\": [[1.5, 0.0]]}, \"gate_was\": {"),
                "gate.tflite!phrases.bin: ", "phrase gate rows need 2 weights in [0, 1), got [1.5, 0.0]");
        refused("gate7.tflite", withMetadata(model, "\"gate\": {", "\"gate\": 7, \"gate_was\": {"), "gate7.tflite!phrases.bin: ",
                "expected an object with lists 'bounds' and 'weights'");
        refused("word.tflite", withMetadata(model, "\"gate\": {", "\"gate\": {\"bounds\": [\"4\"], \"weights\": []}, \"gate_was\": {"),
                "word.tflite!phrases.bin: ", "the gate's bounds hold \"4\", not a number");
        refused("info.tflite", withMetadata(model, "\"phrases\": {", "\"phrases\": \"phrases.bin\", \"phrases_was\": {"),
                "info.tflite!phrases.bin: ", "does not match the metadata's sha256");

        File onDisk = tmp.newFile("on disk.tflite");
        Files.write(onDisk.toPath(), rebuilt(model, flipped));
        try {
            ModelFile.load(onDisk.getPath());
            fail();
        } catch (ModelFileException e) {
            assertTrue(e.getMessage(), e.getMessage().startsWith(onDisk.getPath() + "!phrases.bin: the phrase table does not match"));
        }
    }

    @Test
    public void metadataWhosePhrasesIsNullCarriesNoTable() throws Exception {
        ModelFile m = ModelFile.fromBytes("null.tflite", withMetadata(golden(), "\"phrases\": {", "\"phrases\": null, \"phrases_was\": {"));
        assertNull("as Python: phrases.bin is ignored when the metadata has no table", m.phrases);
        assertNull(m.phraseGate);
    }
}
