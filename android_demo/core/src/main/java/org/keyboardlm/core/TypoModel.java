package org.keyboardlm.core;

/**
 * The channel of typo correction (keyboard_lm/text/typos.py {@code TypoModel}): each slip's factor,
 * its probability relative to typing the intended letters as they are, and from how many typed
 * letters on corrections are offered. A completion ranks a word one slip away from the letters
 * typed by {@code factor * P(word | context)}, a word that starts with them by
 * {@code P(word | context)} (see {@link TypoIndex}). Immutable.
 */
public final class TypoModel {
    /**
     * The defaults, as Python's: a neighbouring key or two swapped letters 1/50, a left-out letter
     * or a doubled/neighbouring extra key 1/100, a far extra key 1/200, a far key 1/500; from 3 letters,
     * the far slips from 5.
     */
    public static final TypoModel DEFAULT = new TypoModel(0.02, 0.002, 0.02, 0.01, 0.01, 0.005, 3, 5);

    /** A key next to the intended one on the QWERTY layout. */
    public final double nearSubstitution;
    /** Any other key instead of the intended one. */
    public final double farSubstitution;
    /** Two adjacent letters swapped. */
    public final double transposition;
    /** A letter of the intended word left out. */
    public final double omission;
    /** An extra letter that doubles a neighbouring typed letter or is the key next to it. */
    public final double nearInsertion;
    /** Any other extra letter. */
    public final double farInsertion;
    /** Typed letters before corrections are offered, in [2, {@link TypoIndex#MAX_LETTERS}]. */
    public final int minLetters;
    /**
     * Typed letters before a far key or a far extra key is corrected too, in [2,
     * {@link TypoIndex#MAX_LETTERS} + 1]: three or four letters are one far slip away from dozens of
     * prefixes that almost never win.
     */
    public final int farMinLetters;
    private final double[] logs = new double[6];

    /** IllegalArgumentException names the first value out of range: a factor must be in (0, 1). */
    public TypoModel(double nearSubstitution, double farSubstitution, double transposition, double omission,
                     double nearInsertion, double farInsertion, int minLetters, int farMinLetters) {
        check("nearSubstitution", nearSubstitution);
        check("farSubstitution", farSubstitution);
        check("transposition", transposition);
        check("omission", omission);
        check("nearInsertion", nearInsertion);
        check("farInsertion", farInsertion);
        if (minLetters < 2 || minLetters > TypoIndex.MAX_LETTERS) {
            throw new IllegalArgumentException("typo model minLetters must be in [2, " + TypoIndex.MAX_LETTERS + "], got "
                    + minLetters);
        }
        this.nearSubstitution = nearSubstitution;
        this.farSubstitution = farSubstitution;
        this.transposition = transposition;
        this.omission = omission;
        this.nearInsertion = nearInsertion;
        this.farInsertion = farInsertion;
        if (farMinLetters < 2 || farMinLetters > TypoIndex.MAX_LETTERS + 1) {
            throw new IllegalArgumentException("typo model farMinLetters must be in [2, " + (TypoIndex.MAX_LETTERS + 1)
                    + "], got " + farMinLetters);
        }
        this.minLetters = minLetters;
        this.farMinLetters = farMinLetters;
        double[] fs = {nearSubstitution, farSubstitution, transposition, omission, nearInsertion, farInsertion};
        for (int i = 0; i < fs.length; i++) logs[i] = Math.log(fs[i]);
    }

    /** ln f of a factor of this model (or of 1), computed once: a completion adds it to every candidate's log-prob. */
    double log(double f) {
        if (f == nearSubstitution) return logs[0];
        if (f == farSubstitution) return logs[1];
        if (f == transposition) return logs[2];
        if (f == omission) return logs[3];
        if (f == nearInsertion) return logs[4];
        if (f == farInsertion) return logs[5];
        return Math.log(f);
    }

    private static void check(String name, double value) {
        if (!(value > 0.0 && value < 1.0)) {
            throw new IllegalArgumentException("typo model " + name + " must be a probability in (0, 1), got " + value);
        }
    }
}
