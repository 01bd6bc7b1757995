package org.keyboardlm.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * What a completion ranks (keyboard_lm/inference/ranker.py {@code Completion}): the words that
 * start with {@link #prefix}, the normalized letters typed (channel factor 1), and those that
 * start with a typo prefix one slip away ({@link TypoIndex}; its slip's factor, below 1). Made by
 * {@link Ranker#completion}, which keeps the last few; immutable (the cover of its candidates is
 * computed once, at the first ranking).
 */
final class Completion {
    final String prefix;
    /** The letters typed as code points (null without typo correction). */
    final int[] typed;
    /** Typo prefixes in code point order; empty where the ranker does not correct typos. */
    final List<TypoIndex.Prefix> typos;
    private final TypoIndex index;
    /** Each vocabulary id's place among the ranker's sorted suggestable words, -1 for a word never suggested. */
    private final int[] sortedPosition;

    Completion(String prefix, int[] typed, List<TypoIndex.Prefix> typos, TypoIndex index, int[] sortedPosition) {
        this.prefix = prefix;
        this.typed = typed;
        this.typos = typos;
        this.index = index;
        this.sortedPosition = sortedPosition;
    }

    /** The words that start with {@code prefix}, no typo correction. */
    Completion(String prefix) {
        this(prefix, null, Collections.<TypoIndex.Prefix>emptyList(), null, null);
    }

    /**
     * 1 for a word that starts with the letters typed, else the largest factor of the typo prefixes
     * it starts with, 0 for none. {@code id}: the word's vocabulary id, -1 outside the vocabulary
     * (typo prefixes are the vocabulary's: such a word joins by the letters typed only). A typo
     * prefix's words are one range of the sorted words, so no string is compared.
     */
    double weight(String word, int id) {
        if (word.startsWith(prefix)) return 1.0;
        if (id < 0 || typos.isEmpty() || sortedPosition[id] < 0) return 0.0;
        int at = sortedPosition[id];
        double best = 0.0;
        for (TypoIndex.Prefix p : typos) {
            if (p.lo <= at && at < p.hi && p.factor > best) best = p.factor;
        }
        return best;
    }

    /** The cover of {@link #typos} ({@link TypoIndex#cover}), once computed. */
    private volatile TypoCover cover;

    /** The disjoint ranges of words this completion ranks and their factors ({@link TypoIndex#cover}), computed at the first call. */
    TypoCover cover() {
        TypoCover c = cover;
        if (c == null) {  // two threads may both compute it: the same answer
            c = index.cover(typed, typos);
            cover = c;
        }
        return c;
    }

    /** The letters typed and every typo prefix. */
    List<String> prefixes() {
        List<String> out = new ArrayList<String>();
        out.add(prefix);
        for (TypoIndex.Prefix p : typos) out.add(index.text(p));
        return out;
    }
}
