package org.keyboardlm.core;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;

/**
 * Typo candidates for the word being typed (keyboard_lm/text/typos.py, rule by rule): the
 * prefixes of vocabulary words one keyboard slip away from the typed letters t, each with the
 * factor of its slip in a {@link TypoModel}. The slips: a substitution (a key next to the
 * intended one on the QWERTY layout, or a far one from {@link TypoModel#farMinLetters} typed letters
 * on), a transposition of two adjacent letters, an
 * omission (a letter left out) and an insertion (an extra letter; near when it doubles or is the
 * key next to a neighbouring typed letter, a far one from {@link TypoModel#farMinLetters} on). None before {@link TypoModel#minLetters} letters nor
 * after {@link #MAX_LETTERS}.
 *
 * <p>Built once per vocabulary (the {@link Ranker}'s suggestable words, in code point order, so
 * the words that start with a prefix are one range of them). Substitution and omission are looked
 * up in a deletion-neighbourhood index over prefixes (SymSpell, Garbe 2012) keyed by the position
 * deleted: every prefix p of 2 to {@code MAX_LETTERS + 1} letters is stored under (p without
 * letter j, j) for each j. Keys are 64-bit FNV-1a hashes of the code points and j, sorted with
 * their entry number in the low 24 bits; a hit is checked against the prefix's letters, so a
 * collision cannot add a candidate. About 12 bytes per key: 1.7 MB for the demo's 9,847 words.
 * Transposition and insertion are exact range lookups of t's own variants. Immutable.
 */
final class TypoIndex {
    /** The longest typed word corrected (Python's MAX_LETTERS); the index holds prefixes one letter longer. */
    static final int MAX_LETTERS = 20;
    /** A phone's QWERTY letter rows and their shift right in quarter key widths (Python's QWERTY_ROWS). */
    static final String[] QWERTY_ROWS = {"qwertyuiop", "asdfghjkl", "zxcvbnm"};
    private static final int[] ROW_SHIFT = {0, 1, 3};
    /** Keys at most this far apart, squared, in quarter key widths, are neighbours (Python's NEIGHBOUR_DISTANCE_SQ). */
    static final int NEIGHBOUR_DISTANCE_SQ = 25;
    private static final int[] KEY_X = new int[128];
    private static final int[] KEY_Y = new int[128];
    /** Each letter's neighbours in alphabetical order. */
    private static final int[][] NEIGHBOURS = new int[128][];

    static {
        Arrays.fill(KEY_X, -1000);
        for (int row = 0; row < QWERTY_ROWS.length; row++) {
            for (int col = 0; col < QWERTY_ROWS[row].length(); col++) {
                char c = QWERTY_ROWS[row].charAt(col);
                KEY_X[c] = 4 * col + ROW_SHIFT[row];
                KEY_Y[c] = 4 * row;
            }
        }
        for (int a = 0; a < 128; a++) {
            List<Integer> near = new ArrayList<Integer>();
            for (int b = 0; b < 128; b++) if (neighbours(a, b)) near.add(b);
            NEIGHBOURS[a] = new int[near.size()];
            for (int i = 0; i < near.size(); i++) NEIGHBOURS[a][i] = near.get(i);
        }
    }

    /** True when code points {@code a} and {@code b} are two distinct neighbouring keys of the QWERTY layout. */
    static boolean neighbours(int a, int b) {
        if (a == b || a < 0 || b < 0 || a >= 128 || b >= 128 || KEY_X[a] < 0 || KEY_X[b] < 0) return false;
        int dx = KEY_X[a] - KEY_X[b];
        int dy = KEY_Y[a] - KEY_Y[b];
        return dx * dx + dy * dy <= NEIGHBOUR_DISTANCE_SQ;
    }

    /** A candidate prefix: the first {@code length} letters of word {@code lo}; words {@code [lo, hi)} start with it. */
    static final class Prefix {
        final int lo;
        final int hi;
        final int length;
        final double factor;

        Prefix(int lo, int hi, int length, double factor) {
            this.lo = lo;
            this.hi = hi;
            this.length = length;
            this.factor = factor;
        }
    }

    /** Candidates in code point order: by first word, then length (an ancestor comes before its descendants). */
    static final Comparator<Prefix> ORDER = new Comparator<Prefix>() {
        @Override
        public int compare(Prefix x, Prefix y) {
            return x.lo != y.lo ? Integer.compare(x.lo, y.lo) : Integer.compare(x.length, y.length);
        }
    };

    private static final long ENTRY_BITS = 24;
    private static final long ENTRY_MASK = (1L << ENTRY_BITS) - 1;
    private static final long HASH_MASK = ~ENTRY_MASK;

    private final int[][] words;
    /** Hash (high 40 bits) and entry number (low 24 bits), ascending. */
    private final long[] keys;
    /** Entry number -> first word * 32 + length of the prefix stored. */
    private final int[] postings;

    /** {@code words}: the suggestable words' code points, in code point order (shared, never written). */
    TypoIndex(int[][] words) {
        this.words = words;
        int entries = 0;
        for (int i = 0; i < words.length; i++) {
            for (int len = newFrom(i); len <= Math.min(words[i].length, MAX_LETTERS + 1); len++) entries += len;
        }
        if (entries > ENTRY_MASK) throw new IllegalArgumentException("vocabulary too large for the typo index: " + entries + " keys");
        keys = new long[entries];
        postings = new int[entries];
        int e = 0;
        for (int i = 0; i < words.length; i++) {
            for (int len = newFrom(i); len <= Math.min(words[i].length, MAX_LETTERS + 1); len++) {
                for (int j = 0; j < len; j++) {
                    keys[e] = (hash(words[i], len, j, j) & HASH_MASK) | e;
                    postings[e] = i * 32 + len;
                    e++;
                }
            }
        }
        Arrays.sort(keys);
    }

    /** The shortest prefix length of 2 or more that word {@code i} is the first to have (longer ones are new too). */
    private int newFrom(int i) {
        int common = 0;
        if (i > 0) {
            int[] a = words[i - 1];
            int[] b = words[i];
            while (common < Math.min(a.length, b.length) && a[common] == b[common]) common++;
        }
        return Math.max(2, common + 1);
    }

    /** FNV-1a over the first {@code length} code points without the one at {@code skip} (-1: none), then {@code position}. */
    private static long hash(int[] cps, int length, int skip, int position) {
        long h = 0xcbf29ce484222325L;
        for (int k = 0; k < length; k++) {
            if (k == skip) continue;
            h = (h ^ cps[k]) * 0x100000001b3L;
        }
        return (h ^ (0x110000 + position)) * 0x100000001b3L;
    }

    /** Keys in the index. */
    int size() {
        return keys.length;
    }

    /** (lo, hi): the words that start with the first {@code length} code points of {@code p}; lo == hi for none. */
    int[] range(int[] p, int length) {
        int lo = lowerBound(p, length);
        return new int[] {lo, end(lo, p, length)};  // the words that start with p are contiguous from lo
    }

    private static int comparePrefix(int[] w, int[] p, int length) {
        for (int k = 0; k < Math.min(w.length, length); k++) {
            if (w[k] != p[k]) return w[k] < p[k] ? -1 : 1;
        }
        return Integer.compare(w.length, length);
    }

    private static boolean startsWith(int[] w, int[] p, int length) {
        if (w.length < length) return false;
        for (int k = 0; k < length; k++) if (w[k] != p[k]) return false;
        return true;
    }

    /**
     * The typo prefixes of {@code typed} (the normalized letters being typed, as code points) with
     * the largest factor among the slips that give each, in {@link #ORDER}; the letters as typed
     * are not among them.
     */
    List<Prefix> candidates(int[] typed, TypoModel model) {
        int n = typed.length;
        if (n < model.minLetters || n > MAX_LETTERS) return Collections.emptyList();
        Found found = new Found();
        // A far key for the last letter gives a prefix that starts with typed[:-1], whose words the
        // insertion of that last letter offers with a factor at least farInsertion (Python's rule).
        // Below farMinLetters no far key (nor far extra key) is corrected: neighbouring keys only, everywhere.
        boolean nearOnly = n < model.farMinLetters;
        boolean lastNearOnly = nearOnly || model.farSubstitution <= model.farInsertion;
        int[] q = new int[n + 1];
        for (int i = 0; i < n; i++) {
            if (nearOnly || i == n - 1 && lastNearOnly) {
                System.arraycopy(typed, 0, q, 0, n);
                int c = typed[i];
                if (c < 128) {
                    for (int near : NEIGHBOURS[c]) {
                        q[i] = near;
                        addExact(found, q, n, model.nearSubstitution);
                    }
                }
            } else {  // substitution: p[i] intended, typed[i] hit
                long h = hash(typed, n, i, i) & HASH_MASK;
                for (int at = lowerBound(h); at < keys.length && (keys[at] & HASH_MASK) == h; at++) {
                    int posting = postings[(int) (keys[at] & ENTRY_MASK)];
                    int lo = posting / 32;
                    int length = posting % 32;
                    if (length == n && deletedEquals(lo, length, i, typed, n, i)) {
                        double f = neighbours(words[lo][i], typed[i]) ? model.nearSubstitution : model.farSubstitution;
                        found.add(this, lo, length, f);
                    }
                }
            }
            long h = hash(typed, n, -1, i) & HASH_MASK;  // omission: p[i] left out
            for (int at = lowerBound(h); at < keys.length && (keys[at] & HASH_MASK) == h; at++) {
                int posting = postings[(int) (keys[at] & ENTRY_MASK)];
                int lo = posting / 32;
                int length = posting % 32;
                if (length == n + 1 && deletedEquals(lo, length, i, typed, n, -1)) found.add(this, lo, length, model.omission);
            }
        }
        for (int i = 0; i + 1 < n; i++) {  // transposition of letters i and i + 1
            if (typed[i] == typed[i + 1]) continue;
            System.arraycopy(typed, 0, q, 0, n);
            q[i] = typed[i + 1];
            q[i + 1] = typed[i];
            addExact(found, q, n, model.transposition);
        }
        for (int i = 0; i < n; i++) {  // insertion: typed[i] is extra (a far one from farMinLetters on)
            boolean near = false;
            for (int m = i - 1; m <= i + 1; m += 2) {
                if (m >= 0 && m < n && (typed[m] == typed[i] || neighbours(typed[m], typed[i]))) near = true;
            }
            if (!near && nearOnly) continue;
            System.arraycopy(typed, 0, q, 0, i);
            System.arraycopy(typed, i + 1, q, i, n - i - 1);
            addExact(found, q, n - 1, near ? model.nearInsertion : model.farInsertion);
        }
        List<Prefix> out = new ArrayList<Prefix>(found.count);
        for (int k = 0; k < found.count; k++) {
            int lo = found.lo[k];
            int length = found.length[k];
            if (!(length == n && startsWith(words[lo], typed, n))) out.add(new Prefix(lo, found.hi[k], length, found.factor[k]));
        }
        Collections.sort(out, ORDER);
        return out;
    }

    /** The candidates found so far, each (first word, length) once with its largest factor; a few dozen at most. */
    private static final class Found {
        int count;
        int[] lo = new int[32];
        int[] hi = new int[32];
        int[] length = new int[32];
        double[] factor = new double[32];

        /** Keeps prefix (lo, length) with factor f if f is its largest; its range's end is found once. */
        void add(TypoIndex index, int first, int len, double f) {
            for (int k = 0; k < count; k++) {
                if (lo[k] == first && length[k] == len) {
                    if (f > factor[k]) factor[k] = f;
                    return;
                }
            }
            if (count == lo.length) {
                lo = Arrays.copyOf(lo, 2 * count);
                hi = Arrays.copyOf(hi, 2 * count);
                length = Arrays.copyOf(length, 2 * count);
                factor = Arrays.copyOf(factor, 2 * count);
            }
            lo[count] = first;
            hi[count] = index.end(first, index.words[first], len);
            length[count] = len;
            factor[count++] = f;
        }
    }

    /** Keeps the first {@code length} letters of {@code p} with factor {@code f} if words start with them. */
    private void addExact(Found found, int[] p, int length, double f) {
        int lo = lowerBound(p, length);
        if (lo < words.length && startsWith(words[lo], p, length)) found.add(this, lo, length, f);
    }

    /** The first word at or after {@code lo} that does not start with the first {@code length} code points of {@code p}. */
    private int end(int lo, int[] p, int length) {
        int a = lo;
        int b = words.length;
        while (a < b) {
            int mid = (a + b) >>> 1;
            if (startsWith(words[mid], p, length)) a = mid + 1;
            else b = mid;
        }
        return a;
    }

    /** The first word not before the first {@code length} code points of {@code p}. */
    private int lowerBound(int[] p, int length) {
        int a = 0;
        int b = words.length;
        while (a < b) {
            int mid = (a + b) >>> 1;
            if (comparePrefix(words[mid], p, length) < 0) a = mid + 1;
            else b = mid;
        }
        return a;
    }

    private int lowerBound(long h) {
        int a = 0;
        int b = keys.length;
        while (a < b) {
            int mid = (a + b) >>> 1;
            if (keys[mid] < h) a = mid + 1;
            else b = mid;
        }
        return a;
    }

    /** Whether word {@code lo}'s first {@code length} letters without letter {@code position} are {@code t} without letter {@code skip}. */
    private boolean deletedEquals(int lo, int length, int position, int[] t, int n, int skip) {
        if (length - 1 != (skip < 0 ? n : n - 1)) return false;
        int[] w = words[lo];
        int b = 0;
        for (int a = 0; a < length; a++) {
            if (a == position) continue;
            if (b == skip) b++;
            if (w[a] != t[b]) return false;
            b++;
        }
        return true;
    }

    /**
     * Disjoint ranges {lo, hi} of the words and their factors: every word that starts with
     * {@code typed} (factor 1) or a prefix of {@code typos} (in {@link #ORDER}), each with its
     * largest factor (Python's {@code TypoIndex.cover}). {@code factors} receives one per range.
     */
    List<int[]> cover(int[] typed, List<Prefix> typos, List<Double> factors) {
        List<Prefix> all = new ArrayList<Prefix>(typos.size() + 1);
        all.addAll(typos);
        int[] own = range(typed, typed.length);
        if (own[0] < own[1]) {
            Prefix self = new Prefix(own[0], own[1], typed.length, 1.0);
            int at = Collections.binarySearch(all, self, ORDER);
            all.add(at < 0 ? -at - 1 : at, self);
        }
        List<Prefix> kept = new ArrayList<Prefix>();
        List<Prefix> chain = new ArrayList<Prefix>();  // kept ancestors of the current prefix, innermost last
        for (Prefix p : all) {
            while (!chain.isEmpty() && !encloses(chain.get(chain.size() - 1), p)) chain.remove(chain.size() - 1);
            if (!chain.isEmpty() && p.factor <= chain.get(chain.size() - 1).factor) continue;
            chain.add(p);
            kept.add(p);
        }
        List<int[]> segments = new ArrayList<int[]>();
        List<int[]> enclosing = new ArrayList<int[]>();  // {hi, index in kept, next position not yet given out}
        for (int k = 0; k <= kept.size(); k++) {
            int lo = k < kept.size() ? kept.get(k).lo : Integer.MAX_VALUE;  // the last pass closes every range
            while (!enclosing.isEmpty() && enclosing.get(enclosing.size() - 1)[0] <= lo) {
                int[] e = enclosing.remove(enclosing.size() - 1);
                if (e[2] < e[0]) segment(segments, factors, e[2], e[0], kept.get(e[1]).factor);
            }
            if (k == kept.size()) break;
            Prefix p = kept.get(k);
            if (!enclosing.isEmpty()) {
                int[] parent = enclosing.get(enclosing.size() - 1);
                if (parent[2] < p.lo) segment(segments, factors, parent[2], p.lo, kept.get(parent[1]).factor);
                parent[2] = p.hi;
            }
            enclosing.add(new int[] {p.hi, k, p.lo});
        }
        return segments;
    }

    private static void segment(List<int[]> segments, List<Double> factors, int lo, int hi, double f) {
        segments.add(new int[] {lo, hi});
        factors.add(f);
    }

    /** Whether {@code p}'s words are among {@code ancestor}'s and {@code ancestor} is a proper prefix of {@code p}. */
    private static boolean encloses(Prefix ancestor, Prefix p) {
        return ancestor.lo <= p.lo && p.hi <= ancestor.hi && ancestor.length < p.length;
    }

    /** The candidate's letters. */
    String text(Prefix p) {
        return new String(words[p.lo], 0, p.length);
    }
}
