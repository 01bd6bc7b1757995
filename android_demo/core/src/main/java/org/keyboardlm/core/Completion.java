package org.keyboardlm.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a completion ranks (keyboard_lm/inference/ranker.py {@code Completion}): the words that
 * start with {@link #prefix}, the normalized letters typed (channel factor 1), and those that
 * start with a typo prefix one slip away ({@link TypoIndex}; its slip's factor, below 1). Made by
 * {@link Ranker#completion}; immutable.
 */
final class Completion {
    final String prefix;
    final int[] typed;
    /** Typo prefixes in code point order; empty where the ranker does not correct typos. */
    final List<TypoIndex.Prefix> typos;
    private final Map<String, Double> factors = new HashMap<String, Double>();
    private final int[] lengths;

    Completion(String prefix, int[] typed, List<TypoIndex.Prefix> typos, TypoIndex index) {
        this.prefix = prefix;
        this.typed = typed;
        this.typos = typos;
        Set<Integer> ls = new TreeSet<Integer>();
        for (TypoIndex.Prefix p : typos) {
            factors.put(index.text(p), p.factor);
            ls.add(p.length);
        }
        lengths = new int[ls.size()];
        int i = 0;
        for (int n : ls) lengths[i++] = n;
    }

    /** The words that start with {@code prefix}, no typo correction. */
    Completion(String prefix) {
        this(prefix, null, Collections.<TypoIndex.Prefix>emptyList(), null);
    }

    /** 1 for a word that starts with the letters typed, else the largest factor of the typo prefixes it starts with, 0 for none. */
    double weight(String word) {
        if (word.startsWith(prefix)) return 1.0;
        double best = 0.0;
        int count = word.codePointCount(0, word.length());
        for (int n : lengths) {
            if (n > count) break;
            Double f = factors.get(word.substring(0, word.offsetByCodePoints(0, n)));
            if (f != null && f > best) best = f;
        }
        return best;
    }

    /** The letters typed and every typo prefix. */
    List<String> prefixes() {
        List<String> out = new ArrayList<String>();
        out.add(prefix);
        out.addAll(factors.keySet());
        return out;
    }
}
