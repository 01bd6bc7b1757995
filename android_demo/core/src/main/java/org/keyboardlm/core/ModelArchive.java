package org.keyboardlm.core;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;

/**
 * The keyboard_lm part of an exported .tflite: the zip appended after the
 * flatbuffer (keyboard_lm.json + vocab.txt), found by java.util.zip from the
 * end of the file; checked as keyboard_lm/inference/model_file.py checks it.
 */
public final class ModelArchive {
    public static final String FILE_FORMAT = "keyboard_lm.tflite/1";

    public final String path;
    public final String metadataJson;
    public final List<String> vocab;
    public final int seqLen;

    private ModelArchive(String path, String metadataJson, List<String> vocab, int seqLen) {
        this.path = path;
        this.metadataJson = metadataJson;
        this.vocab = vocab;
        this.seqLen = seqLen;
    }

    public static ModelArchive load(String path) throws ModelFileException {
        File file = new File(path);
        byte[] head = new byte[8];
        try (RandomAccessFile f = new RandomAccessFile(file, "r")) {
            if (f.length() < 8) {
                throw new ModelFileException(path + ": not a TFLite model (shorter than 8 bytes); truncated or foreign file");
            }
            f.readFully(head);
        } catch (IOException e) {
            throw new ModelFileException(path + ": cannot read the model file: " + e.getMessage());
        }
        if (!new String(head, 4, 4, StandardCharsets.ISO_8859_1).equals("TFL3")) {
            throw new ModelFileException(path + ": not a TFLite model (no TFL3 identifier); truncated or foreign file");
        }
        String meta;
        String vocabText;
        try (ZipFile z = new ZipFile(file)) {
            ZipEntry m = z.getEntry("keyboard_lm.json");
            ZipEntry v = z.getEntry("vocab.txt");
            if (m == null || v == null) {
                throw new ModelFileException(path + ": the model has no embedded vocabulary/metadata (not exported by keyboard-lm export)");
            }
            meta = read(z.getInputStream(m));
            vocabText = read(z.getInputStream(v));
        } catch (IOException e) {
            throw new ModelFileException(path + ": the model has no readable embedded vocabulary/metadata (" + e.getMessage()
                    + "); the file is truncated or was not exported by keyboard-lm export");
        }
        String format = stringField(meta, "format");
        if (!FILE_FORMAT.equals(format)) {
            throw new ModelFileException(path + ": unknown model file format " + format + " (expected " + FILE_FORMAT + ")");
        }
        String spec = stringField(meta, "text_spec");
        if (!TextSpec.VERSION.equals(spec)) {
            throw new ModelFileException(path + ": text spec " + spec + ", this version reads " + TextSpec.VERSION);
        }
        List<String> vocab = new ArrayList<String>();
        for (String line : vocabText.split("\n", -1)) {
            if (!line.isEmpty()) vocab.add(line);
        }
        Integer size = intField(meta, "vocab_size");
        if (size == null || size != vocab.size()) {
            throw new ModelFileException(path + ": the embedded vocabulary (" + vocab.size()
                    + " words) does not match the model's metadata (" + size + ")");
        }
        if (vocab.size() < 4 || !vocab.get(0).equals("<pad>") || !vocab.get(1).equals("<bos>")
                || !vocab.get(2).equals("<eos>") || !vocab.get(3).equals("<oov>")) {
            throw new ModelFileException(path + ": special tokens differ from this version's");
        }
        Integer seqLen = intField(meta, "seq_len");
        return new ModelArchive(path, meta, Collections.unmodifiableList(vocab), seqLen == null ? 20 : seqLen);
    }

    private static String read(InputStream in) throws IOException {
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            int n;
            while ((n = in.read(buf)) > 0) out.write(buf, 0, n);
            return new String(out.toByteArray(), StandardCharsets.UTF_8);
        } finally {
            in.close();
        }
    }

    /** The raw text of a scalar value of a top-level key of a JSON object (strings without quotes), or null. */
    static String topLevel(String json, String key) {
        int depth = 0;
        int i = 0;
        int n = json.length();
        while (i < n) {
            char c = json.charAt(i);
            if (c == '"') {
                int j = i + 1;
                StringBuilder b = new StringBuilder();
                while (j < n && json.charAt(j) != '"') {
                    if (json.charAt(j) == '\\') j++;
                    if (j < n) b.append(json.charAt(j));
                    j++;
                }
                int k = j + 1;
                while (k < n && Character.isWhitespace(json.charAt(k))) k++;
                if (depth == 1 && k < n && json.charAt(k) == ':' && b.toString().equals(key)) {
                    k++;
                    while (k < n && Character.isWhitespace(json.charAt(k))) k++;
                    if (k < n && json.charAt(k) == '"') {
                        int e = json.indexOf('"', k + 1);
                        return e < 0 ? null : json.substring(k + 1, e);
                    }
                    int e = k;
                    while (e < n && ",}] \n\r\t".indexOf(json.charAt(e)) < 0) e++;
                    return json.substring(k, e);
                }
                i = j + 1;
                continue;
            }
            if (c == '{' || c == '[') depth++;
            if (c == '}' || c == ']') depth--;
            i++;
        }
        return null;
    }

    static String stringField(String json, String key) {
        return topLevel(json, key);
    }

    static Integer intField(String json, String key) {
        String v = topLevel(json, key);
        if (v == null) return null;
        try {
            return Integer.valueOf(v);
        } catch (NumberFormatException e) {
            return null;
        }
    }
}
