package org.keyboardlm.core;

import java.util.List;

/**
 * What a completion with typo prefixes scans (keyboard_lm/text/typos.py {@code TypoIndex.cover}):
 * disjoint ranges of the sorted words, each with one channel factor, that hold every word starting
 * with the letters typed (factor 1) or with a typo prefix, once, with the largest factor among
 * the prefixes it starts with. Range s is words [{@code lo[s]}, {@code hi[s]}) with factor
 * {@code factor[s]}, s below {@link #size}. Immutable once made; computed once per completion.
 */
final class TypoCover {
    final int size;
    final int[] lo;
    final int[] hi;
    final double[] factor;

    private TypoCover(int size, int[] lo, int[] hi, double[] factor) {
        this.size = size;
        this.lo = lo;
        this.hi = hi;
        this.factor = factor;
    }

    /**
     * The cover of {@code typos} (in {@link TypoIndex#ORDER}) and the typed letters' own range
     * [{@code ownLo}, {@code ownHi}) of {@code typedLength} letters (empty: no word starts with them).
     * A prefix whose kept ancestor has a factor at least as large adds nothing; the rest nest (a
     * prefix's words are one range, inside its ancestors'), and a word takes the factor of the
     * innermost range holding it.
     */
    static TypoCover of(List<TypoIndex.Prefix> typos, int ownLo, int ownHi, int typedLength) {
        int n = typos.size() + 1;
        int[] lo = new int[n];
        int[] hi = new int[n];
        int[] length = new int[n];
        double[] factor = new double[n];
        int kept = 0;
        int[] chain = new int[n];  // the kept ancestors of the current prefix, innermost last
        int depth = 0;
        boolean ownDone = ownLo >= ownHi;
        for (int t = 0; t < typos.size() || !ownDone; ) {
            TypoIndex.Prefix p = t < typos.size() ? typos.get(t) : null;
            // the typed letters take their place in code point order, before their descendants
            boolean own = !ownDone && (p == null || ownLo < p.lo || ownLo == p.lo && typedLength < p.length);
            int pLo = own ? ownLo : p.lo;
            int pHi = own ? ownHi : p.hi;
            int pLength = own ? typedLength : p.length;
            double f = own ? 1.0 : p.factor;
            if (own) ownDone = true;
            else t++;
            while (depth > 0 && !encloses(lo[chain[depth - 1]], hi[chain[depth - 1]], length[chain[depth - 1]], pLo, pHi, pLength)) {
                depth--;
            }
            if (depth > 0 && f <= factor[chain[depth - 1]]) continue;  // every word here has a factor at least as large
            lo[kept] = pLo;
            hi[kept] = pHi;
            length[kept] = pLength;
            factor[kept] = f;
            chain[depth++] = kept++;
        }
        // Each kept range gives out the words its kept descendants do not hold: at most two ranges per prefix.
        int[] segLo = new int[2 * kept];
        int[] segHi = new int[2 * kept];
        double[] segFactor = new double[2 * kept];
        int size = 0;
        int[] enclosing = new int[kept];  // the kept ranges open around the current one, innermost last
        int[] next = new int[kept];  // each one's first word not yet given out
        depth = 0;
        for (int k = 0; k <= kept; k++) {
            int at = k < kept ? lo[k] : Integer.MAX_VALUE;  // the last pass closes every range
            while (depth > 0 && hi[enclosing[depth - 1]] <= at) {
                int e = enclosing[--depth];
                if (next[e] < hi[e]) {
                    segLo[size] = next[e];
                    segHi[size] = hi[e];
                    segFactor[size++] = factor[e];
                }
            }
            if (k == kept) break;
            if (depth > 0) {
                int parent = enclosing[depth - 1];
                if (next[parent] < lo[k]) {
                    segLo[size] = next[parent];
                    segHi[size] = lo[k];
                    segFactor[size++] = factor[parent];
                }
                next[parent] = hi[k];
            }
            next[k] = lo[k];
            enclosing[depth++] = k;
        }
        return new TypoCover(size, segLo, segHi, segFactor);
    }

    /** Whether range [lo, hi) of a prefix of {@code length} letters holds that of a longer prefix [pLo, pHi): its ancestor. */
    private static boolean encloses(int lo, int hi, int length, int pLo, int pHi, int pLength) {
        return lo <= pLo && pHi <= hi && length < pLength;
    }
}
