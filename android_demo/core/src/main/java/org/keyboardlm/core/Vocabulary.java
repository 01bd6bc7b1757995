package org.keyboardlm.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Word vocabulary read from a model file (keyboard_lm/text/vocabulary.py): tokens in id
 * order, the special tokens first with fixed ids (keyboard_lm/text/spec.py SpecialTokens).
 * Immutable and thread-safe.
 */
public final class Vocabulary {
    public static final int PAD = 0;
    public static final int BOS = 1;
    public static final int EOS = 2;
    public static final int OOV = 3;
    /** The special tokens in id order; never suggested. */
    public static final List<String> SPECIAL_TOKENS =
            Collections.unmodifiableList(java.util.Arrays.asList("<pad>", "<bos>", "<eos>", "<oov>"));

    private final List<String> tokens;
    private final Map<String, Integer> ids;

    /** Checks the entries as Python does; IllegalArgumentException names the first bad entry. */
    public Vocabulary(List<String> tokens) {
        int n = SPECIAL_TOKENS.size();
        if (tokens.size() < n || !tokens.subList(0, n).equals(SPECIAL_TOKENS)) {
            throw new IllegalArgumentException("vocabulary must start with the special tokens " + SPECIAL_TOKENS + ", got "
                    + tokens.subList(0, Math.min(n, tokens.size())));
        }
        Map<String, Integer> seen = new HashMap<String, Integer>(tokens.size() * 2);
        for (int i = 0; i < tokens.size(); i++) {
            String t = tokens.get(i);
            if (t == null || t.isEmpty() || t.indexOf('\n') >= 0 || t.indexOf('\r') >= 0) {
                throw new IllegalArgumentException("vocabulary entry " + i + " is empty or contains a line break");
            }
            Integer before = seen.put(t, i);
            if (before != null) {
                throw new IllegalArgumentException("vocabulary entry " + i + " '" + t + "' duplicates entry " + before);
            }
        }
        this.tokens = Collections.unmodifiableList(new ArrayList<String>(tokens));
        this.ids = seen;
    }

    public int size() {
        return tokens.size();
    }

    public boolean contains(String token) {
        return ids.containsKey(token);
    }

    /** Id of {@code token}, or {@link #OOV}. */
    public int idOf(String token) {
        Integer id = ids.get(token);
        return id == null ? OOV : id;
    }

    public String tokenOf(int id) {
        return tokens.get(id);
    }

    /** All tokens in id order (unmodifiable). */
    public List<String> tokens() {
        return tokens;
    }

    public static boolean isSpecial(int id) {
        return id >= 0 && id < SPECIAL_TOKENS.size();
    }
}
