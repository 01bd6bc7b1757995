package org.keyboardlm.core;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;

/**
 * Model file bytes for tests: the checksum comment recomputed as the exporter writes it
 * (keyboard_lm/inference/model_file.py {@code seal}), so a test that changes a file's bytes on
 * purpose reaches the checks behind the checksum, as a crafted file would.
 */
final class ModelBytes {
    private ModelBytes() {}

    /** {@code data} with its zip comment set to the sha256 of every byte before the comment; unchanged without a zip end record. */
    static byte[] seal(byte[] data) throws Exception {
        int end = EmbeddedZip.endRecord(ByteBuffer.wrap(data).order(ByteOrder.LITTLE_ENDIAN));
        if (end < 0) return data;
        byte[] prefix = ModelArchive.CHECKSUM_PREFIX.getBytes(StandardCharsets.US_ASCII);
        int body = end + EmbeddedZip.END_RECORD;
        byte[] out = Arrays.copyOf(data, body + prefix.length + 64);
        int comment = prefix.length + 64;
        out[end + 20] = (byte) comment;
        out[end + 21] = (byte) (comment >> 8);
        MessageDigest md = MessageDigest.getInstance("SHA-256");
        md.update(out, 0, body);
        StringBuilder hex = new StringBuilder();
        for (byte b : md.digest()) hex.append(String.format("%02x", b & 0xff));
        System.arraycopy(prefix, 0, out, body, prefix.length);
        System.arraycopy(hex.toString().getBytes(StandardCharsets.US_ASCII), 0, out, body + prefix.length, 64);
        return out;
    }
}
