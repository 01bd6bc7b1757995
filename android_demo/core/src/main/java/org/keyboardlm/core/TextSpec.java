package org.keyboardlm.core;

import java.text.Normalizer;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Text spec kblm-text-1 (keyboard_lm/text/spec.py), followed rule by rule over
 * Unicode code points, never UTF-16 units. No Android imports.
 */
public final class TextSpec {
    public static final String VERSION = "kblm-text-1";

    private static final String URL_STOP = " \t\n\r\f\u000b";
    private static final String URL_TRAILING_STRIP = ".,!?;:'\")]}";
    private static final String NUMBER_JOINERS = ".,:";
    private static final int WORD_JOINER = '\'';
    private static final int VS16 = 0xFE0F;
    private static final int ZWJ = 0x200D;
    private static final String TERMINATORS = ".!?\u2026\u3002";
    private static final String[] URL_PREFIXES = {"https://", "http://", "www."};

    private TextSpec() {}

    /** One scanned item: a token, or a run of terminators ({@code end == true}). */
    public static final class Item {
        public final boolean end;
        public final String text;

        Item(boolean end, String text) {
            this.end = end;
            this.text = text;
        }
    }

    /** Spec step 1: controls to spaces, NFKC, lowercase, unify apostrophes. */
    public static String normalize(String text) {
        if (text == null) {
            throw new IllegalArgumentException("text must not be null");
        }
        StringBuilder b = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            b.append((c <= 0x1F || (c >= 0x7F && c <= 0x9F)) ? ' ' : c);
        }
        String s = Normalizer.normalize(b, Normalizer.Form.NFKC).toLowerCase(Locale.ROOT);
        return s.replace('\u2018', '\'').replace('\u2019', '\'').replace('\u02bc', '\'');
    }

    private static boolean isW(int cp) {
        switch (Character.getType(cp)) {
            case Character.UPPERCASE_LETTER: case Character.LOWERCASE_LETTER: case Character.TITLECASE_LETTER:
            case Character.MODIFIER_LETTER: case Character.OTHER_LETTER:
            case Character.NON_SPACING_MARK: case Character.ENCLOSING_MARK: case Character.COMBINING_SPACING_MARK:
            case Character.DECIMAL_DIGIT_NUMBER: case Character.LETTER_NUMBER: case Character.OTHER_NUMBER:
                return true;
            default:
                return false;
        }
    }

    /** A letter, mark or digit: the characters words and numbers are made of. */
    static boolean isWordChar(int cp) {
        return isW(cp);
    }

    private static boolean isDigit(int cp) {
        int t = Character.getType(cp);
        return t == Character.DECIMAL_DIGIT_NUMBER || t == Character.LETTER_NUMBER || t == Character.OTHER_NUMBER;
    }

    private static boolean isSo(int cp) {
        return Character.getType(cp) == Character.OTHER_SYMBOL;
    }

    private static boolean in(String set, int cp) {
        return set.indexOf(cp) >= 0;
    }

    private static int matchUrl(int[] s, int i) {
        for (String prefix : URL_PREFIXES) {
            if (i + prefix.length() > s.length) {
                continue;
            }
            boolean ok = true;
            for (int k = 0; k < prefix.length() && ok; k++) {
                ok = s[i + k] == prefix.charAt(k);
            }
            if (!ok) {
                continue;
            }
            int start = i + prefix.length();
            int j = start;
            while (j < s.length && !in(URL_STOP, s[j])) {
                j++;
            }
            while (j > start && in(URL_TRAILING_STRIP, s[j - 1])) {
                j--;
            }
            return j > start ? j : i;
        }
        return i;
    }

    private static int runDigits(int[] s, int i) {
        while (i < s.length && isDigit(s[i])) {
            i++;
        }
        return i;
    }

    private static int runW(int[] s, int i) {
        while (i < s.length && isW(s[i])) {
            i++;
        }
        return i;
    }

    private static int matchNumber(int[] s, int i) {
        int j = runDigits(s, i);
        if (j == i) {
            return i;
        }
        int end = i;
        while (j < s.length && in(NUMBER_JOINERS, s[j])) {
            int k = runDigits(s, j + 1);
            if (k == j + 1) {
                break;
            }
            end = j = k;
        }
        return end;
    }

    private static int matchWord(int[] s, int i) {
        int j = runW(s, i);
        if (j == i) {
            return i;
        }
        while (j < s.length && s[j] == WORD_JOINER) {
            int k = runW(s, j + 1);
            if (k == j + 1) {
                break;
            }
            j = k;
        }
        return j;
    }

    private static int matchEmoji(int[] s, int i) {
        if (!isSo(s[i])) {
            return i;
        }
        int j = i + 1;
        while (j < s.length) {
            if (s[j] == VS16 || (s[j] >= 0x1F3FB && s[j] <= 0x1F3FF)) {
                j++;
            } else if (s[j] == ZWJ && j + 1 < s.length && isSo(s[j + 1])) {
                j += 2;
            } else {
                break;
            }
        }
        return j;
    }

    /** Tokens and terminator runs of {@code text}, in order (spec step 2). */
    public static List<Item> scan(String text) {
        int[] s = codePoints(normalize(text));
        List<Item> out = new ArrayList<Item>();
        int i = 0;
        while (i < s.length) {
            int j = matchUrl(s, i);
            if (j == i) j = matchNumber(s, i);
            if (j == i) j = matchWord(s, i);
            if (j == i) j = matchEmoji(s, i);
            if (j > i) {
                out.add(new Item(false, new String(s, i, j - i)));
                i = j;
            } else if (in(TERMINATORS, s[i])) {
                j = i;
                while (j < s.length && in(TERMINATORS, s[j])) {
                    j++;
                }
                out.add(new Item(true, new String(s, i, j - i)));
                i = j;
            } else {
                i++;
            }
        }
        return out;
    }

    /** Tokens of {@code text}, terminators removed. */
    public static List<String> tokenize(String text) {
        List<String> out = new ArrayList<String>();
        for (Item item : scan(text)) {
            if (!item.end) out.add(item.text);
        }
        return out;
    }

    /** Sentences as token lists; empty sentences dropped. */
    public static List<List<String>> sentences(String text) {
        List<List<String>> out = new ArrayList<List<String>>();
        List<String> current = new ArrayList<String>();
        for (Item item : scan(text)) {
            if (!item.end) {
                current.add(item.text);
            } else if (!current.isEmpty()) {
                out.add(current);
                current = new ArrayList<String>();
            }
        }
        if (!current.isEmpty()) out.add(current);
        return out;
    }

    /** Completion order of the spec: Unicode code point order of the normalized spelling. */
    public static int compareCodePoints(String a, String b) {
        int[] x = codePoints(a);
        int[] y = codePoints(b);
        for (int k = 0; k < Math.min(x.length, y.length); k++) {
            if (x[k] != y[k]) return x[k] < y[k] ? -1 : 1;
        }
        return Integer.compare(x.length, y.length);
    }

    /** The code points of {@code s} (String.codePoints() is not in Android API 23). */
    static int[] codePoints(String s) {
        int[] out = new int[s.codePointCount(0, s.length())];
        for (int i = 0, k = 0; i < s.length(); k++) {
            out[k] = s.codePointAt(i);
            i += Character.charCount(out[k]);
        }
        return out;
    }
}
