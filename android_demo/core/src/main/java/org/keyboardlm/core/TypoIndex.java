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
 * the words that start with a prefix are one range of them). Every prefix of 1 to
 * {@code MAX_LETTERS + 1} letters is numbered once, with its range of words, and found by its
 * letters in an open-addressing hash table: a lookup reads one or two slots, where a binary search
 * over the words reads a dozen words scattered in the heap (a keystroke's lookups are cache misses,
 * and those were most of its cost). Substitution and omission are looked up in a
 * deletion-neighbourhood index over prefixes (SymSpell, Garbe 2012) keyed by the position deleted:
 * every prefix p of 2 to {@code MAX_LETTERS + 1} letters is stored under (p without letter j, j)
 * for each j, so one lookup of t without letter i gives every prefix that differs from t in letter
 * i alone, by a neighbouring key or a far one. Keys are 64-bit FNV-1a hashes of the code points and
 * j (39 bits kept), sorted with their entry number in the low 24 bits and bucketed by their top
 * bits; a hit is checked against the prefix's letters, so a collision cannot add a candidate.
 * Transposition and insertion are exact lookups of t's own variants.
 *
 * <p>Built for a {@link TypoModel}, the index also stores the candidates of every prefix of the
 * vocabulary of {@link TypoModel#minLetters} to {@link #MAX_LETTERS} letters (4 bytes a
 * candidate, 2.3 candidates a prefix): the letters a user types are mostly such prefixes, and a
 * keystroke then reads their list, the one {@link #lookUp} gives, instead of a dozen lookups.
 * Immutable.
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

    static {
        Arrays.fill(KEY_X, -1000);
        for (int row = 0; row < QWERTY_ROWS.length; row++) {
            for (int col = 0; col < QWERTY_ROWS[row].length(); col++) {
                char c = QWERTY_ROWS[row].charAt(col);
                KEY_X[c] = 4 * col + ROW_SHIFT[row];
                KEY_Y[c] = 4 * row;
            }
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
    /** The hash bits a deletion key keeps: the sign bit cleared, so that sorted keys are in bucket order. */
    private static final long HASH_MASK = ~ENTRY_MASK & Long.MAX_VALUE;
    private static final long TAG_MASK = 0xffffffff00000000L;
    /** A stored candidate: its prefix number in the low bits, its slip's factor (an index of {@link #factors}) above. */
    private static final int SLIP_SHIFT = 28;

    private final int[][] words;
    /** Prefix k: the first {@code prefixLength[k]} letters of word {@code prefixLo[k]}; words [lo, {@code prefixHi[k]}) start with it. */
    private final int[] prefixLo;
    private final int[] prefixHi;
    private final byte[] prefixLength;
    /** Open addressing, linear probing: (a prefix hash's high 32 bits << 32) | (k + 1); 0 is an empty slot. */
    private final long[] prefixSlots;
    /** Hash (39 bits) and entry number (low 24 bits), ascending. */
    private final long[] keys;
    /** Entry number -> the prefix stored under it. */
    private final int[] postings;
    /** The first key of each bucket (the keys' top bits above {@link #bucketShift}), one more at the end. */
    private final int[] buckets;
    private final int bucketShift;
    /** The model whose candidates are stored (null: none); its factors, by slip. */
    private final TypoModel model;
    private final double[] factors;
    /** Prefix k's stored candidates: {@code stored[storedStart[k] .. storedStart[k + 1])}, in {@link #ORDER}. */
    private final int[] storedStart;
    private final int[] stored;

    /** {@code words}: the suggestable words' code points, in code point order (shared, never written); no candidates stored. */
    TypoIndex(int[][] words) {
        this(words, null);
    }

    /** As {@link #TypoIndex(int[][])}, storing the candidates {@code model} gives every prefix of the words (null: none). */
    TypoIndex(int[][] words, TypoModel model) {
        this.words = words;
        // The prefixes, numbered in code point order: word i holds those longer than what it shares with word i - 1.
        int count = 0;
        int entries = 0;
        for (int i = 0; i < words.length; i++) {
            for (int len = common(i - 1, i) + 1; len <= Math.min(words[i].length, MAX_LETTERS + 1); len++) {
                count++;
                if (len >= 2) entries += len;
            }
        }
        if (entries > ENTRY_MASK || count >= 1 << SLIP_SHIFT) {
            throw new IllegalArgumentException("vocabulary too large for the typo index: " + entries + " keys");
        }
        prefixLo = new int[count];
        prefixHi = new int[count];
        prefixLength = new byte[count];
        int[] open = new int[MAX_LETTERS + 2];  // length -> the current word's prefix of that length
        for (int i = 0, k = 0; i < words.length; i++) {
            int top = Math.min(words[i].length, MAX_LETTERS + 1);
            for (int len = common(i - 1, i) + 1; len <= top; len++, k++) {
                prefixLo[k] = i;
                prefixLength[k] = (byte) len;
                open[len] = k;
            }
            for (int len = common(i, i + 1) + 1; len <= top; len++) prefixHi[open[len]] = i + 1;  // word i + 1 leaves them
        }
        prefixSlots = new long[Math.max(16, Integer.highestOneBit(Math.max(1, count)) * 4)];  // at most half full
        for (int k = 0; k < count; k++) {
            long h = mix(hash(words[prefixLo[k]], prefixLength[k], -1, -1));
            int s = (int) h & (prefixSlots.length - 1);
            while (prefixSlots[s] != 0) s = (s + 1) & (prefixSlots.length - 1);
            prefixSlots[s] = (h & TAG_MASK) | (k + 1);
        }
        keys = new long[entries];
        postings = new int[entries];
        int e = 0;
        for (int k = 0; k < count; k++) {
            for (int j = 0; prefixLength[k] >= 2 && j < prefixLength[k]; j++) {
                keys[e] = (hash(words[prefixLo[k]], prefixLength[k], j, j) & HASH_MASK) | e;
                postings[e++] = k;
            }
        }
        Arrays.sort(keys);
        int bits = Math.max(1, 31 - Integer.numberOfLeadingZeros(Math.max(1, entries)) - 2);  // about 4 keys a bucket
        bucketShift = 63 - bits;
        buckets = new int[(1 << bits) + 1];
        for (int at = 0, b = 0; b <= 1 << bits; b++) {
            while (at < entries && (int) (keys[at] >>> bucketShift) < b) at++;
            buckets[b] = at;
        }
        this.model = model;
        if (model == null) {
            factors = null;
            storedStart = stored = null;
            return;
        }
        factors = new double[] {model.nearSubstitution, model.farSubstitution, model.transposition, model.omission,
                                model.nearInsertion, model.farInsertion};
        storedStart = new int[count + 1];
        int[] out = new int[count * 3];
        int size = 0;
        Found found = new Found();
        int[] scratch = new int[MAX_LETTERS + 1];
        for (int k = 0; k < count; k++) {
            storedStart[k] = size;
            int len = prefixLength[k];
            if (len < model.minLetters || len > MAX_LETTERS) continue;
            found.count = 0;
            find(words[prefixLo[k]], len, model, found, scratch);
            if (size + found.count > out.length) out = Arrays.copyOf(out, Math.max(2 * out.length, size + found.count));
            for (int j = 0; j < found.count; j++) out[size++] = found.prefix[j] | slip(found.factor[j]) << SLIP_SHIFT;
        }
        storedStart[count] = size;
        stored = Arrays.copyOf(out, size);
    }

    /** The index in {@link #factors} of factor {@code f} of the stored model. */
    private int slip(double f) {
        for (int s = 0; s < factors.length; s++) if (factors[s] == f) return s;
        throw new IllegalStateException("not a factor of the typo model: " + f);
    }

    /** How many code points words {@code a} and {@code b} share at their start (0 when either is out of range). */
    private int common(int a, int b) {
        if (a < 0 || b >= words.length) return 0;
        int[] x = words[a];
        int[] y = words[b];
        int c = 0;
        while (c < Math.min(x.length, y.length) && x[c] == y[c]) c++;
        return c;
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

    /** A finalizer (SplitMix64's), so that the low bits of a prefix's hash pick its slot evenly. */
    private static long mix(long h) {
        h = (h ^ (h >>> 30)) * 0xbf58476d1ce4e5b9L;
        h = (h ^ (h >>> 27)) * 0x94d049bb133111ebL;
        return h ^ (h >>> 31);
    }

    /** Keys in the deletion index. */
    int size() {
        return keys.length;
    }

    /** Candidates stored, over every prefix. */
    int storedCandidates() {
        return stored == null ? 0 : stored.length;
    }

    /** The number of the prefix made of the first {@code length} code points of {@code p}; -1 when no word starts with them. */
    private int prefix(int[] p, int length) {
        if (length < 1 || length > MAX_LETTERS + 1) return -1;
        long h = mix(hash(p, length, -1, -1));
        for (int s = (int) h & (prefixSlots.length - 1); ; s = (s + 1) & (prefixSlots.length - 1)) {
            long slot = prefixSlots[s];
            if (slot == 0) return -1;
            if ((slot & TAG_MASK) == (h & TAG_MASK)) {
                int k = (int) slot - 1;
                if (prefixLength[k] == length && startsWith(words[prefixLo[k]], p, length)) return k;
            }
        }
    }

    private static boolean startsWith(int[] w, int[] p, int length) {
        if (w.length < length) return false;
        for (int k = 0; k < length; k++) if (w[k] != p[k]) return false;
        return true;
    }

    /**
     * The typo prefixes of {@code typed} (the normalized letters being typed, as code points) with
     * the largest factor among the slips that give each, in {@link #ORDER}; the letters as typed
     * are not among them. Read from the stored lists where {@code typed} is a prefix of the
     * vocabulary and {@code model} the index's, else {@link #lookUp looked up}: the same list.
     */
    List<Prefix> candidates(int[] typed, TypoModel model) {
        int n = typed.length;
        if (n < model.minLetters || n > MAX_LETTERS) return Collections.emptyList();
        int k = model == this.model ? prefix(typed, n) : -1;
        if (k < 0) return lookUp(typed, model);
        List<Prefix> out = new ArrayList<Prefix>(storedStart[k + 1] - storedStart[k]);
        for (int j = storedStart[k]; j < storedStart[k + 1]; j++) {
            int p = stored[j] & ((1 << SLIP_SHIFT) - 1);
            out.add(new Prefix(prefixLo[p], prefixHi[p], prefixLength[p], factors[stored[j] >>> SLIP_SHIFT]));
        }
        return out;
    }

    /** {@link #candidates} found by lookups in the index, never from the stored lists. */
    List<Prefix> lookUp(int[] typed, TypoModel model) {
        int n = typed.length;
        if (n < model.minLetters || n > MAX_LETTERS) return Collections.emptyList();
        Found found = new Found();
        find(typed, n, model, found, new int[n]);
        List<Prefix> out = new ArrayList<Prefix>(found.count);
        for (int j = 0; j < found.count; j++) {
            int p = found.prefix[j];
            out.add(new Prefix(prefixLo[p], prefixHi[p], prefixLength[p], found.factor[j]));
        }
        return out;
    }

    /**
     * Adds to {@code found} the typo prefixes of the first {@code n} letters of {@code typed}, each
     * with its largest factor, by prefix number (which is {@link #ORDER}); {@code q}: n letters of scratch.
     */
    private void find(int[] typed, int n, TypoModel model, Found found, int[] q) {
        // A far key for the last letter gives a prefix that starts with typed[:-1], whose words the
        // insertion of that last letter offers with a factor at least farInsertion (Python's rule).
        // Below farMinLetters no far key (nor far extra key) is corrected: neighbouring keys only, everywhere.
        boolean nearOnly = n < model.farMinLetters;
        boolean lastNearOnly = nearOnly || model.farSubstitution <= model.farInsertion;
        for (int i = 0; i < n; i++) {
            // substitution: p[i] intended, typed[i] hit; p is typed without letter i, stored at i
            boolean far = !(nearOnly || i == n - 1 && lastNearOnly);
            long h = hash(typed, n, i, i) & HASH_MASK;
            for (int at = buckets[(int) (h >>> bucketShift)], to = buckets[(int) (h >>> bucketShift) + 1]; at < to; at++) {
                if ((keys[at] & HASH_MASK) != h) continue;
                int k = postings[(int) (keys[at] & ENTRY_MASK)];
                if (prefixLength[k] != n || !deletedEquals(prefixLo[k], n, i, typed, n, i)) continue;
                int intended = words[prefixLo[k]][i];
                if (intended == typed[i]) continue;  // the letters as typed
                if (neighbours(intended, typed[i])) found.add(k, model.nearSubstitution);
                else if (far) found.add(k, model.farSubstitution);
            }
            h = hash(typed, n, -1, i) & HASH_MASK;  // omission: p[i] left out
            for (int at = buckets[(int) (h >>> bucketShift)], to = buckets[(int) (h >>> bucketShift) + 1]; at < to; at++) {
                if ((keys[at] & HASH_MASK) != h) continue;
                int k = postings[(int) (keys[at] & ENTRY_MASK)];
                if (prefixLength[k] == n + 1 && deletedEquals(prefixLo[k], n + 1, i, typed, n, -1)) found.add(k, model.omission);
            }
        }
        for (int i = 0; i + 1 < n; i++) {  // transposition of letters i and i + 1
            if (typed[i] == typed[i + 1]) continue;
            System.arraycopy(typed, 0, q, 0, n);
            q[i] = typed[i + 1];
            q[i + 1] = typed[i];
            int k = prefix(q, n);
            if (k >= 0) found.add(k, model.transposition);
        }
        for (int i = 0; i < n; i++) {  // insertion: typed[i] is extra (a far one from farMinLetters on)
            boolean near = false;
            for (int m = i - 1; m <= i + 1; m += 2) {
                if (m >= 0 && m < n && (typed[m] == typed[i] || neighbours(typed[m], typed[i]))) near = true;
            }
            if (!near && nearOnly) continue;
            System.arraycopy(typed, 0, q, 0, i);
            System.arraycopy(typed, i + 1, q, i, n - i - 1);
            int k = prefix(q, n - 1);
            if (k >= 0) found.add(k, near ? model.nearInsertion : model.farInsertion);
        }
    }

    /** Candidates by prefix number, ascending, each once with its largest factor; a few dozen at most. */
    private static final class Found {
        int count;
        int[] prefix = new int[32];
        double[] factor = new double[32];

        /** Keeps prefix {@code k} with factor f if f is its largest, in order. */
        void add(int k, double f) {
            int j = count;
            while (j > 0 && prefix[j - 1] > k) j--;
            if (j > 0 && prefix[j - 1] == k) {
                if (f > factor[j - 1]) factor[j - 1] = f;
                return;
            }
            if (count == prefix.length) {
                prefix = Arrays.copyOf(prefix, 2 * count);
                factor = Arrays.copyOf(factor, 2 * count);
            }
            System.arraycopy(prefix, j, prefix, j + 1, count - j);
            System.arraycopy(factor, j, factor, j + 1, count - j);
            prefix[j] = k;
            factor[j] = f;
            count++;
        }
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
     * Disjoint ranges of the words and their factors: every word that starts with {@code typed}
     * (factor 1; at most {@link #MAX_LETTERS} letters, as a completion with typo prefixes has) or
     * a prefix of {@code typos} (in {@link #ORDER}), each with its largest factor ({@link TypoCover}).
     */
    TypoCover cover(int[] typed, List<Prefix> typos) {
        int k = prefix(typed, typed.length);
        return k < 0 ? TypoCover.of(typos, 0, 0, typed.length) : TypoCover.of(typos, prefixLo[k], prefixHi[k], typed.length);
    }

    /** The candidate's letters. */
    String text(Prefix p) {
        return new String(words[p.lo], 0, p.length);
    }
}
