package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.junit.Test;

/**
 * The Java text spec reproduces the shared golden vectors (tests/golden/text_spec_vectors.json).
 * tests/test_android_core.py passes them as a line file: per case, hex UTF-8 fields
 * name, input, normalized, tokens (joined by U+0001), sentences (tokens joined by U+0001,
 * sentences by U+0002), via the system property kblm.vectors.
 */
public class TextSpecTest {
    private static String hex(String h) {
        byte[] b = new byte[h.length() / 2];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) Integer.parseInt(h.substring(2 * i, 2 * i + 2), 16);
        }
        return new String(b, StandardCharsets.UTF_8);
    }

    private static List<String> split(String s, String sep) {
        return s.isEmpty() ? new ArrayList<String>() : Arrays.asList(s.split(sep, -1));
    }

    @Test
    public void reproducesEveryGoldenVectorOfTheTextSpec() throws IOException {
        String path = System.getProperty("kblm.vectors");
        assertTrue("system property kblm.vectors names the golden vector file", path != null);
        List<String> lines = Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8);
        assertEquals(23, lines.size());
        for (String line : lines) {
            String[] f = line.split(" ", -1);
            String name = hex(f[0]);
            String input = hex(f[1]);
            assertEquals(name + ": normalized", hex(f[2]), TextSpec.normalize(input));
            assertEquals(name + ": tokens", split(hex(f[3]), "\u0001"), TextSpec.tokenize(input));
            List<List<String>> sentences = new ArrayList<List<String>>();
            for (String sentence : split(hex(f[4]), "\u0002")) {
                sentences.add(split(sentence, "\u0001"));
            }
            assertEquals(name + ": sentences", sentences, TextSpec.sentences(input));
        }
    }

    @Test
    public void completionOrderComparesCodePointsNotUtf16Units() {
        // U+FF5E (one UTF-16 unit) sorts after U+1F600 in UTF-16 unit order, before it in code point order.
        String bmp = "\uff5e";
        String astral = new String(Character.toChars(0x1F600));
        assertTrue(bmp.compareTo(astral) > 0);
        assertTrue(TextSpec.compareCodePoints(bmp, astral) < 0);
        assertTrue(TextSpec.compareCodePoints("ab", "abc") < 0);
        assertEquals(0, TextSpec.compareCodePoints("don't", "don't"));
    }

    @Test
    public void nullTextIsRefusedWithAClearError() {
        try {
            TextSpec.tokenize(null);
        } catch (IllegalArgumentException e) {
            assertTrue(e.getMessage().contains("text"));
            return;
        }
        throw new AssertionError("tokenize(null) must throw IllegalArgumentException");
    }
}
