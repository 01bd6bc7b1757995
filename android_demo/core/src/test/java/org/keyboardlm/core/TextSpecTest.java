package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.junit.Test;

/**
 * The Java text spec reproduces the shared golden vectors, read from
 * tests/golden/text_spec_vectors.json (the system property kblm.textspec names it), which the
 * Python tests check the Python spec against.
 */
public class TextSpecTest {
    private static List<String> strings(Object array) {
        List<String> out = new ArrayList<String>();
        for (Object o : GoldenJson.array(array)) out.add((String) o);
        return out;
    }

    @Test
    public void reproducesEveryGoldenVectorOfTheTextSpec() throws IOException {
        String path = System.getProperty("kblm.textspec");
        assertTrue("system property kblm.textspec names tests/golden/text_spec_vectors.json", path != null);
        List<Object> cases = GoldenJson.array(GoldenJson.object(GoldenJson.read(path)).get("cases"));
        assertEquals(23, cases.size());
        for (Object o : cases) {
            Map<String, Object> c = GoldenJson.object(o);
            String name = (String) c.get("name");
            String input = (String) c.get("input");
            assertEquals(name + ": normalized", c.get("normalized"), TextSpec.normalize(input));
            assertEquals(name + ": tokens", strings(c.get("tokens")), TextSpec.tokenize(input));
            List<List<String>> sentences = new ArrayList<List<String>>();
            for (Object sentence : GoldenJson.array(c.get("sentences"))) sentences.add(strings(sentence));
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
