package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import org.junit.BeforeClass;
import org.junit.Test;

/**
 * The typo index's stored candidates, its cover and the ranker's cache of typed letters change
 * no answer: over the demo keyboard's vocabulary (9,847 words), every prefix of every word and a
 * seeded slip of each get from the stored lists what the index's lookups give, each cover gives
 * every word one slip away its largest factor (a brute force over the vocabulary, as
 * tests/test_typos.py checks Python's), and a ranker that forgot the typed letters completes as
 * one that kept them.
 */
public class TypoIndexTest {
    private static ModelFile model;
    private static int[][] words;

    @BeforeClass
    public static void load() throws Exception {
        Map<String, Object> fixture = GoldenJson.object(GoldenJson.read(PhraseParityGoldenTest.golden("typo_fixture.json").getPath()));
        File path = PhraseParityGoldenTest.golden((String) fixture.get("model"));
        assertTrue(path + " (the demo keyboard's model) exists", path.isFile());
        model = ModelFile.load(path.getPath());
        List<int[]> list = new ArrayList<int[]>();
        for (int i = Vocabulary.SPECIAL_TOKENS.size(); i < model.vocab.size(); i++) {
            list.add(TextSpec.codePoints(model.vocab.tokenOf(i)));
        }
        Collections.sort(list, new Comparator<int[]>() {
            @Override
            public int compare(int[] a, int[] b) {
                return Ranker.compare(a, b);
            }
        });
        words = list.toArray(new int[0][]);
    }

    private static String describe(List<TypoIndex.Prefix> typos) {
        StringBuilder b = new StringBuilder();
        for (TypoIndex.Prefix p : typos) b.append(p.lo).append('-').append(p.hi).append('/').append(p.length).append('=').append(p.factor).append(' ');
        return b.toString();
    }

    private static boolean same(List<TypoIndex.Prefix> a, List<TypoIndex.Prefix> b) {
        if (a.size() != b.size()) return false;
        for (int i = 0; i < a.size(); i++) {
            TypoIndex.Prefix x = a.get(i);
            TypoIndex.Prefix y = b.get(i);
            if (x.lo != y.lo || x.hi != y.hi || x.length != y.length || x.factor != y.factor) return false;
        }
        return true;
    }

    @Test
    public void storedCandidatesAreTheLookedUpOnesOnEveryPrefixAndItsSlips() {
        TypoIndex stored = new TypoIndex(words, TypoModel.DEFAULT);
        assertEquals(0, new TypoIndex(words).storedCandidates());
        assertTrue(stored.storedCandidates() > words.length);
        Random rng = new Random(0);
        String letters = "abcdefghijklmnopqrstuvwxyz'";
        int checked = 0;
        int found = 0;
        for (int[] w : words) {
            for (int n = 1; n <= Math.min(w.length, TypoIndex.MAX_LETTERS + 1); n++) {
                int i = rng.nextInt(n);
                int[] prefix = Arrays.copyOf(w, n);
                int[] slipped;  // a far key or an extra letter, by turns: typed letters no word may start with
                if ((n & 1) == 0) {
                    slipped = prefix.clone();
                    slipped[i] = letters.charAt(rng.nextInt(letters.length()));
                } else {
                    slipped = new int[n + 1];
                    System.arraycopy(w, 0, slipped, 0, i);
                    slipped[i] = letters.charAt(rng.nextInt(letters.length()));
                    System.arraycopy(w, i, slipped, i + 1, n - i);
                }
                for (int[] typed : new int[][] {prefix, slipped}) {
                    List<TypoIndex.Prefix> want = stored.lookUp(typed, TypoModel.DEFAULT);
                    List<TypoIndex.Prefix> got = stored.candidates(typed, TypoModel.DEFAULT);
                    if (!same(want, got)) assertEquals(new String(typed, 0, typed.length), describe(want), describe(got));
                    checked++;
                    if (!want.isEmpty()) found++;
                }
            }
        }
        System.out.println("TypoIndex: " + checked + " typed prefixes, " + found + " with candidates, stored lists = lookups ("
                + stored.storedCandidates() + " candidates stored)");
    }

    /** The largest factor of one slip that turns the intended prefix {@code p} into the typed {@code t} (0: none); Python's test's _slip_factor. */
    private static double slipFactor(int[] p, int[] t, TypoModel m) {
        int n = t.length;
        double best = 0.0;
        if (p.length == n) {
            List<Integer> diff = new ArrayList<Integer>();
            for (int i = 0; i < n; i++) if (p[i] != t[i]) diff.add(i);
            if (diff.size() == 1) {
                int i = diff.get(0);
                if (TypoIndex.neighbours(p[i], t[i])) best = m.nearSubstitution;
                else if (n >= m.farMinLetters) best = m.farSubstitution;
            }
            if (diff.size() == 2 && diff.get(1) == diff.get(0) + 1 && p[diff.get(0)] == t[diff.get(1)] && p[diff.get(1)] == t[diff.get(0)]) {
                best = Math.max(best, m.transposition);
            }
        }
        if (p.length == n + 1) {
            for (int j = 0; j < n; j++) if (deleted(p, j, t)) best = Math.max(best, m.omission);
        }
        if (p.length == n - 1) {
            for (int i = 0; i < n; i++) {
                if (!deleted(t, i, p)) continue;
                boolean near = false;
                for (int k = i - 1; k <= i + 1; k += 2) {
                    if (k >= 0 && k < n && (t[k] == t[i] || TypoIndex.neighbours(t[k], t[i]))) near = true;
                }
                if (near || n >= m.farMinLetters) best = Math.max(best, near ? m.nearInsertion : m.farInsertion);
            }
        }
        return best;
    }

    /** Whether {@code a} without its letter j is {@code b}. */
    private static boolean deleted(int[] a, int j, int[] b) {
        if (a.length != b.length + 1) return false;
        for (int k = 0, l = 0; k < a.length; k++) {
            if (k == j) continue;
            if (a[k] != b[l++]) return false;
        }
        return true;
    }

    @Test
    public void theCoverGivesEveryWordOneSlipAwayItsLargestFactor() {
        TypoModel farFromThree = new TypoModel(0.02, 0.009, 0.02, 0.01, 0.01, 0.001, 3, 3);
        String[][] typedWords = {{"weke", "teh", "sotre", "wprk", "becuase", "thw", "yoi", "hte", "aaa", "meeeting", "dont",
                "ther", "qzx", "internat", "recieve", "wek", "tthe"}, {"thx", "sotre", "wprk", "becamse"}};
        TypoModel[] models = {TypoModel.DEFAULT, farFromThree};  // the stored lists, then the index's lookups
        TypoIndex index = new TypoIndex(words, TypoModel.DEFAULT);
        for (int mi = 0; mi < models.length; mi++) {
            TypoModel m = models[mi];
            for (String s : typedWords[mi]) {
                int[] t = TextSpec.codePoints(s);
                Map<Integer, Double> want = new HashMap<Integer, Double>();
                for (int i = 0; i < words.length; i++) {
                    int[] w = words[i];
                    double f = 0.0;
                    if (w.length >= t.length && Arrays.equals(Arrays.copyOf(w, t.length), t)) f = 1.0;
                    for (int len = t.length - 1; f < 1.0 && len <= t.length + 1; len++) {
                        if (len <= w.length) f = Math.max(f, slipFactor(Arrays.copyOf(w, len), t, m));
                    }
                    if (f > 0) want.put(i, f);
                }
                TypoCover cover = index.cover(t, index.candidates(t, m));
                Map<Integer, Double> got = new HashMap<Integer, Double>();
                for (int s2 = 0; s2 < cover.size; s2++) {
                    for (int i = cover.lo[s2]; i < cover.hi[s2]; i++) {
                        assertTrue(s + ": word " + i + " in two ranges", got.put(i, cover.factor[s2]) == null);
                    }
                }
                assertEquals(s, want, got);
            }
        }
    }

    @Test
    public void aRankerThatForgotTheTypedLettersCompletesAsBefore() {
        Predictor p = new Predictor(model, new ArrayList<String>(), PrefixCache.DEFAULT_SIZE, TypoModel.DEFAULT);
        Predictor fresh = new Predictor(model, new ArrayList<String>(), PrefixCache.DEFAULT_SIZE, TypoModel.DEFAULT);
        String[][] typed = {{"see you at the", "weke"}, {"i think", "teh"}, {"going to the", "sotre"}, {"thanks for your", "hellp"}};
        for (String[] c : typed) {
            Session s = p.session();
            s.commit(c[0] + " ");
            List<String> first = new ArrayList<String>();
            for (int i = 1; i <= c[1].length(); i++) first.add(s.complete(c[1].substring(0, i), 3).toString());
            p.ranker.forgetTyped();
            Session other = fresh.session();
            other.commit(c[0] + " ");
            for (int i = 1; i <= c[1].length(); i++) {
                String prefix = c[1].substring(0, i);
                assertEquals(c[1] + " after forgetting", first.get(i - 1), s.complete(prefix, 3).toString());
                assertEquals(c[1] + " again, cached", first.get(i - 1), s.complete(prefix, 3).toString());
                assertEquals(c[1] + " another predictor", first.get(i - 1), other.complete(prefix, 3).toString());
            }
        }
    }
}
