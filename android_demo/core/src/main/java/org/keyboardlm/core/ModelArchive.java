package org.keyboardlm.core;

import java.io.IOException;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The keyboard_lm part of an exported .tflite: the zip appended after the
 * flatbuffer (keyboard_lm.json + vocab.txt), read from the file's bytes by
 * {@link EmbeddedZip}; checked as keyboard_lm/inference/model_file.py checks it.
 * Also how a model file's bytes are obtained: a path is mapped into memory ({@link #map}),
 * a stream read into one array ({@link #readStream}).
 *
 * <p>A file may carry a phrase table ({@code phrases.bin}, see {@link PhraseTable}) when its
 * metadata has a {@code "phrases"} object ({@code sha256} of the table, the {@code gate}, ...).
 * It is refused, in one line naming the file, when the metadata describes a table the archive
 * lacks, when the table's sha256 differs from the metadata's, when it is for another vocabulary
 * size, or when it or its gate is damaged, as keyboard_lm/inference/model_file.py refuses it.
 *
 * <p>The checksum comes first ({@link #verifyChecksum}): the zip's end-of-central-directory
 * comment is {@code keyboard_lm-sha256:<64 hex>}, the sha256 of every byte before the comment
 * (flatbuffer, zip entries, central directory, end record), and a file whose digest differs
 * is refused before anything reads its archive or its flatbuffer. A file without a comment
 * (exported before the checksum existed) is accepted, and checked like any other.
 */
public final class ModelArchive {
    public static final String FILE_FORMAT = "keyboard_lm.tflite/1";
    /** The zip comment holding the checksum: this prefix, then 64 lowercase hex digits. */
    static final String CHECKSUM_PREFIX = "keyboard_lm-sha256:";
    /** Larger than any keyboard model (the paper-size CIFG is 1.4 MB), as in Python. */
    static final int MAX_FILE_BYTES = 256 << 20;
    /** The phrase table's entry in the archive (Python's PHRASES_FILE). */
    static final String PHRASES_FILE = "phrases.bin";

    public final String path;
    public final String metadataJson;
    public final List<String> vocab;
    public final Vocabulary vocabulary;
    public final int seqLen;
    /** The file's phrase table and its gate; both null for a file without one. */
    public final PhraseTable phrases;
    public final PhraseGate phraseGate;

    private ModelArchive(String path, String metadataJson, Vocabulary vocabulary, int seqLen, PhraseTable phrases,
                         PhraseGate phraseGate) {
        this.path = path;
        this.metadataJson = metadataJson;
        this.vocabulary = vocabulary;
        this.vocab = vocabulary.tokens();
        this.seqLen = seqLen;
        this.phrases = phrases;
        this.phraseGate = phraseGate;
    }

    /** Read and check {@code path}; every problem is a ModelFileException naming the file. */
    public static ModelArchive load(String path) throws ModelFileException {
        return fromBuffer(path, map(path));
    }

    /**
     * The file at {@code path} mapped into memory, read-only: its bytes are read in place, never
     * copied onto the heap. The mapping outlives the file handle (closed here) and goes when
     * the buffer is collected.
     */
    static ByteBuffer map(String path) throws ModelFileException {
        if (path == null) throw new IllegalArgumentException("path must not be null");
        // java.io, not java.nio.file (not in Android API 23).
        try (RandomAccessFile f = new RandomAccessFile(path, "r")) {
            long n = f.length();
            if (n > MAX_FILE_BYTES) {
                throw new ModelFileException(path + ": " + n + " bytes, larger than any keyboard model (" + MAX_FILE_BYTES
                        + " at most); not a model file");
            }
            return f.getChannel().map(FileChannel.MapMode.READ_ONLY, 0, n);
        } catch (IOException e) {
            throw new ModelFileException(path + ": cannot read the model file: " + e.getMessage());
        }
    }

    /**
     * The rest of {@code in} in one heap array (the stream is not closed), wrapped without a
     * further copy; {@code name} names the stream in errors.
     */
    static ByteBuffer readStream(String name, InputStream in) throws ModelFileException {
        if (in == null) throw new IllegalArgumentException("in must not be null");
        try {
            // available() is the asset's size for an Android asset stream: then one array, filled once.
            int available = in.available();
            byte[] data = new byte[available >= (1 << 16) && available <= MAX_FILE_BYTES ? available + 1 : 1 << 16];
            int n = 0;
            while (true) {
                if (n == data.length) {
                    if (data.length > MAX_FILE_BYTES) {
                        throw new ModelFileException(name + ": the stream holds more than " + MAX_FILE_BYTES
                                + " bytes, more than any keyboard model; not a model file");
                    }
                    data = Arrays.copyOf(data, (int) Math.min(MAX_FILE_BYTES + 1L, data.length * 3L / 2));
                }
                int got = in.read(data, n, data.length - n);
                if (got < 0) break;
                n += got;
            }
            return ByteBuffer.wrap(data, 0, n);
        } catch (IOException e) {
            throw new ModelFileException(name + ": cannot read the model stream: " + e.getMessage());
        }
    }

    /** Check the bytes of a model file; {@code path} names it in error messages. */
    public static ModelArchive fromBytes(String path, byte[] data) throws ModelFileException {
        if (data == null) throw new IllegalArgumentException("data must not be null");
        return fromBuffer(path, ByteBuffer.wrap(data));
    }

    /**
     * Check the model file in {@code buffer}, from its position to its limit (the position is
     * not moved); {@code path} names it in error messages.
     */
    public static ModelArchive fromBuffer(String path, ByteBuffer buffer) throws ModelFileException {
        if (buffer == null) throw new IllegalArgumentException("buffer must not be null");
        try {
            return check(path, buffer.slice().order(ByteOrder.LITTLE_ENDIAN));
        } catch (InternalError e) {
            throw unreadable(path, e);
        }
    }

    /**
     * What HotSpot throws when a page of a mapped file is gone (the file was truncated after it
     * was mapped), as a ModelFileException naming the file.
     */
    static ModelFileException unreadable(String path, InternalError e) {
        return new ModelFileException(path + ": the model file became unreadable while it was read (" + e.getMessage()
                + "); was it truncated or replaced?");
    }

    private static ModelArchive check(String path, ByteBuffer data) throws ModelFileException {
        if (data.remaining() < 8) {
            throw new ModelFileException(path + ": not a TFLite model (shorter than 8 bytes); truncated or foreign file");
        }
        if (data.get(4) != 'T' || data.get(5) != 'F' || data.get(6) != 'L' || data.get(7) != '3') {
            throw new ModelFileException(path + ": not a TFLite model (no TFL3 identifier); truncated or foreign file");
        }
        verifyChecksum(path, data);
        Map<String, byte[]> files;
        try {
            files = EmbeddedZip.read(data);
        } catch (EmbeddedZip.Bad e) {
            throw new ModelFileException(path + ": the model has no readable embedded vocabulary/metadata (" + e.getMessage()
                    + "); the file is truncated or was not exported by keyboard-lm export");
        }
        byte[] m = files.get("keyboard_lm.json");
        byte[] v = files.get("vocab.txt");
        if (m == null || v == null) {
            throw new ModelFileException(path + ": the model has no embedded vocabulary/metadata (not exported by keyboard-lm export)");
        }
        String meta = new String(m, StandardCharsets.UTF_8);
        String vocabText = new String(v, StandardCharsets.UTF_8);
        String format = stringField(meta, "format");
        if (!FILE_FORMAT.equals(format)) {
            throw new ModelFileException(path + ": unknown model file format " + format + " (expected " + FILE_FORMAT + ")");
        }
        String spec = stringField(meta, "text_spec");
        if (!TextSpec.VERSION.equals(spec)) {
            throw new ModelFileException(path + ": text spec " + spec + ", this version reads " + TextSpec.VERSION);
        }
        if (!vocabText.endsWith("\n")) {
            throw new ModelFileException(path + ": the embedded vocabulary is empty or truncated (no final newline)");
        }
        Vocabulary vocabulary;
        try {
            vocabulary = new Vocabulary(Arrays.asList(vocabText.substring(0, vocabText.length() - 1).split("\n", -1)));
        } catch (IllegalArgumentException e) {
            String message = e.getMessage();
            if (message.startsWith("vocabulary must start with the special tokens")) {
                throw new ModelFileException(path + ": special tokens differ from this version's (" + message + ")");
            }
            throw new ModelFileException(path + "!vocab.txt: " + message);
        }
        Integer size = intField(meta, "vocab_size");
        if (size == null || size != vocabulary.size()) {
            throw new ModelFileException(path + ": the embedded vocabulary (" + vocabulary.size()
                    + " words) does not match the model's metadata (" + size + ")");
        }
        String sha = stringField(meta, "vocab_sha256");
        if (sha != null && !sha.equals(sha256(v))) {
            throw new ModelFileException(path + ": the embedded vocabulary does not match the model's metadata (vocab_sha256)");
        }
        Integer seqLen = intField(meta, "seq_len");
        if (seqLen != null && seqLen < 1) {
            throw new ModelFileException(path + ": seq_len " + seqLen + " in the model's metadata is not positive");
        }
        Object info = phrasesInfo(path, meta);
        if (info == null) return new ModelArchive(path, meta, vocabulary, seqLen == null ? 20 : seqLen, null, null);
        byte[] table = files.get(PHRASES_FILE);
        if (table == null) {
            throw new ModelFileException(path + ": the metadata describes a phrase table but the file has no " + PHRASES_FILE);
        }
        String where = path + "!" + PHRASES_FILE;
        if (!(info instanceof Map) || !sha256(table).equals(((Map<?, ?>) info).get("sha256"))) {
            throw new ModelFileException(where + ": the phrase table does not match the metadata's sha256; the file is damaged");
        }
        PhraseTable phrases = PhraseTable.fromBytes(table, vocabulary.size(), where);
        PhraseGate gate = PhraseGate.fromJson(((Map<?, ?>) info).get("gate"), where);
        return new ModelArchive(path, meta, vocabulary, seqLen == null ? 20 : seqLen, phrases, gate);
    }

    /**
     * The metadata's "phrases" value (an object for a file with a table), or null when it has none
     * or it is JSON null. The metadata is parsed in full only when it names the key: a file
     * without a table is read as it always was.
     */
    private static Object phrasesInfo(String path, String meta) throws ModelFileException {
        if (topLevel(meta, "phrases") == null) return null;
        Object root;
        try {
            root = new UserHistory.Json(meta).document();
        } catch (IllegalArgumentException e) {
            throw new ModelFileException(path + ": the model's metadata is " + e.getMessage());
        }
        return root instanceof Map ? ((Map<?, ?>) root).get("phrases") : null;
    }

    /**
     * Verify the checksum comment of the model file in {@code data} (little-endian, index 0 the
     * file's first byte, read in place): true if the file has one, false if it was exported
     * without one. A missing zip end record, a comment that is not a checksum, or a digest that
     * differs is a ModelFileException naming {@code path}.
     */
    static boolean verifyChecksum(String path, ByteBuffer data) throws ModelFileException {
        int end = EmbeddedZip.endRecord(data);
        if (end < 0) {
            throw new ModelFileException(path + ": the model has no readable embedded vocabulary/metadata (no zip end record); "
                    + "the file is truncated or was not exported by keyboard-lm export");
        }
        int body = end + EmbeddedZip.END_RECORD;
        int commentLength = data.limit() - body;
        if (commentLength == 0) return false;
        byte[] comment = new byte[commentLength];
        ByteBuffer c = data.duplicate();
        c.position(body);
        c.get(comment);
        String text = new String(comment, StandardCharsets.ISO_8859_1);
        if (!text.matches(java.util.regex.Pattern.quote(CHECKSUM_PREFIX) + "[0-9a-f]{64}")) {
            String shown = text.length() > 40 ? text.substring(0, 40) : text;
            throw new ModelFileException(path + ": the model's checksum record is damaged (\""
                    + shown.replaceAll("[^\\x20-\\x7e]", "?") + "\"); the file is corrupt: export or copy it again");
        }
        String expected = text.substring(CHECKSUM_PREFIX.length());
        ByteBuffer covered = data.duplicate();
        covered.position(0);
        covered.limit(body);
        String actual = hex(digest(covered));
        if (!actual.equals(expected)) {
            throw new ModelFileException(path + ": checksum mismatch (sha256 " + actual.substring(0, 12) + "..., the file says "
                    + expected.substring(0, 12) + "...): the file was damaged or modified after export; export or copy it again");
        }
        return true;
    }

    private static byte[] digest(ByteBuffer data) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(data);
            return md.digest();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);  // every Java and Android runtime has SHA-256
        }
    }

    private static String hex(byte[] d) {
        StringBuilder b = new StringBuilder();
        for (byte x : d) b.append(String.format("%02x", x & 0xff));
        return b.toString();
    }

    private static String sha256(byte[] data) {
        return hex(digest(ByteBuffer.wrap(data)));
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
