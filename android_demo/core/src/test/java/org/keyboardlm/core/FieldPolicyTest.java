package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;

import org.junit.Test;

/**
 * Which fields the keyboard predicts in and learns from ({@link FieldPolicy}), for every input
 * class and text variation and the flags that matter, beside AOSP LatinIME's behaviour for the
 * same field; the table in android_demo/README.md is generated from these rows and checked
 * here, so it cannot drift from the code.
 */
public class FieldPolicyTest {
    /** One field, with what AOSP LatinIME does there (read from its InputAttributes, SettingsValues and InputLogic). */
    static final class Row {
        final String field;
        final int inputType;
        final int imeOptions;
        /** LatinIME's InputAttributes.mShouldShowSuggestions. */
        final boolean latinSuggests;
        /**
         * LatinIME learns (performAdditionToUserHistoryDictionary) only for a word it composed,
         * which it does only where it looks up suggestions, and only when correction is on:
         * the user's auto-correction setting (on by default) and !mInputTypeNoAutoCorrect.
         * It does not read IME_FLAG_NO_PERSONALIZED_LEARNING.
         */
        final boolean latinLearns;

        Row(String field, int inputType, int imeOptions, boolean latinSuggests, boolean latinLearns) {
            this.field = field;
            this.inputType = inputType;
            this.imeOptions = imeOptions;
            this.latinSuggests = latinSuggests;
            this.latinLearns = latinLearns;
        }
    }

    private static final int TEXT = FieldPolicy.TYPE_CLASS_TEXT;
    private static final int AUTO_CORRECT = FieldPolicy.TYPE_TEXT_FLAG_AUTO_CORRECT;

    private static Row textVariation(String name, int variation, boolean latin) {
        return new Row("text, " + name + ", auto-correct", TEXT | variation | AUTO_CORRECT, 0, latin, latin);
    }

    static final Row[] ROWS = {
        new Row("raw (`TYPE_NULL`)", FieldPolicy.TYPE_NULL, 0, false, false),
        new Row("number", FieldPolicy.TYPE_CLASS_NUMBER, 0, false, false),
        new Row("number, signed, decimal", FieldPolicy.TYPE_CLASS_NUMBER | FieldPolicy.TYPE_NUMBER_FLAG_SIGNED
                | FieldPolicy.TYPE_NUMBER_FLAG_DECIMAL, 0, false, false),
        new Row("number password", FieldPolicy.TYPE_CLASS_NUMBER | FieldPolicy.TYPE_NUMBER_VARIATION_PASSWORD, 0, false, false),
        new Row("phone", FieldPolicy.TYPE_CLASS_PHONE, 0, false, false),
        new Row("date and time", FieldPolicy.TYPE_CLASS_DATETIME, 0, false, false),
        new Row("date", FieldPolicy.TYPE_CLASS_DATETIME | FieldPolicy.TYPE_DATETIME_VARIATION_DATE, 0, false, false),
        new Row("time", FieldPolicy.TYPE_CLASS_DATETIME | FieldPolicy.TYPE_DATETIME_VARIATION_TIME, 0, false, false),
        textVariation("normal", FieldPolicy.TYPE_TEXT_VARIATION_NORMAL, true),
        textVariation("URI", FieldPolicy.TYPE_TEXT_VARIATION_URI, false),
        textVariation("e-mail address", FieldPolicy.TYPE_TEXT_VARIATION_EMAIL_ADDRESS, false),
        textVariation("e-mail subject", FieldPolicy.TYPE_TEXT_VARIATION_EMAIL_SUBJECT, true),
        textVariation("short message", FieldPolicy.TYPE_TEXT_VARIATION_SHORT_MESSAGE, true),
        textVariation("long message", FieldPolicy.TYPE_TEXT_VARIATION_LONG_MESSAGE, true),
        textVariation("person name", FieldPolicy.TYPE_TEXT_VARIATION_PERSON_NAME, true),
        textVariation("postal address", FieldPolicy.TYPE_TEXT_VARIATION_POSTAL_ADDRESS, true),
        textVariation("password", FieldPolicy.TYPE_TEXT_VARIATION_PASSWORD, false),
        textVariation("visible password", FieldPolicy.TYPE_TEXT_VARIATION_VISIBLE_PASSWORD, false),
        textVariation("web text", FieldPolicy.TYPE_TEXT_VARIATION_WEB_EDIT_TEXT, true),
        textVariation("filter", FieldPolicy.TYPE_TEXT_VARIATION_FILTER, false),
        textVariation("phonetic", FieldPolicy.TYPE_TEXT_VARIATION_PHONETIC, true),
        textVariation("web e-mail address", FieldPolicy.TYPE_TEXT_VARIATION_WEB_EMAIL_ADDRESS, false),
        textVariation("web password", FieldPolicy.TYPE_TEXT_VARIATION_WEB_PASSWORD, false),
        new Row("text, no flags (one line, no auto-correct)", TEXT, 0, true, false),
        new Row("text, multi-line", TEXT | FieldPolicy.TYPE_TEXT_FLAG_MULTI_LINE, 0, true, true),
        new Row("text, IME multi-line only", TEXT | FieldPolicy.TYPE_TEXT_FLAG_IME_MULTI_LINE, 0, true, false),
        new Row("text, chat (capitalize sentences, multi-line, auto-correct)", TEXT | FieldPolicy.TYPE_TEXT_FLAG_CAP_SENTENCES
                | FieldPolicy.TYPE_TEXT_FLAG_MULTI_LINE | AUTO_CORRECT, 0, true, true),
        new Row("web text, multi-line, no auto-correct", TEXT | FieldPolicy.TYPE_TEXT_VARIATION_WEB_EDIT_TEXT
                | FieldPolicy.TYPE_TEXT_FLAG_MULTI_LINE, 0, true, false),
        new Row("text, auto-correct, no suggestions", TEXT | AUTO_CORRECT | FieldPolicy.TYPE_TEXT_FLAG_NO_SUGGESTIONS, 0, false, false),
        new Row("text, auto-correct, auto-complete", TEXT | AUTO_CORRECT | FieldPolicy.TYPE_TEXT_FLAG_AUTO_COMPLETE, 0, false, false),
        new Row("text, auto-correct, incognito (`IME_FLAG_NO_PERSONALIZED_LEARNING`)", TEXT | AUTO_CORRECT,
                FieldPolicy.IME_FLAG_NO_PERSONALIZED_LEARNING, true, true),
    };

    static final String TABLE_START = "<!-- field-policy table: generated by FieldPolicyTest, do not edit -->";
    static final String TABLE_END = "<!-- end of the field-policy table -->";

    private static String yesNo(boolean b) {
        return b ? "yes" : "no";
    }

    /** The README's table: every row, the keyboard's columns computed by FieldPolicy. */
    static String table() {
        StringBuilder b = new StringBuilder();
        b.append("| field | `inputType` | `imeOptions` | keyboard_lm predicts | keyboard_lm learns | LatinIME suggests | LatinIME learns |\n");
        b.append("|---|---|---|---|---|---|---|\n");
        for (Row r : ROWS) {
            b.append("| ").append(r.field)
                    .append(" | `0x").append(Integer.toHexString(r.inputType))
                    .append("` | `0x").append(Integer.toHexString(r.imeOptions))
                    .append("` | ").append(yesNo(FieldPolicy.mayPredict(r.inputType)))
                    .append(" | ").append(yesNo(FieldPolicy.mayLearn(r.inputType, r.imeOptions)))
                    .append(" | ").append(yesNo(r.latinSuggests))
                    .append(" | ").append(yesNo(r.latinLearns)).append(" |\n");
        }
        return b.toString();
    }

    @Test
    public void theKeyboardSuggestsWhereLatinImeDoesAndLearnsNowhereLatinImeDoesNot() {
        for (Row r : ROWS) {
            String where = r.field + " (inputType 0x" + Integer.toHexString(r.inputType) + ")";
            assertEquals(where + ": predicts", r.latinSuggests, FieldPolicy.mayPredict(r.inputType));
            if (FieldPolicy.mayLearn(r.inputType, r.imeOptions)) {
                assertTrue(where + ": learns where LatinIME does not", r.latinLearns);
                assertTrue(where + ": learns where it does not predict", FieldPolicy.mayPredict(r.inputType));
            }
        }
    }

    @Test
    public void numberPhoneDateEmailUriFilterPasswordAndAutoCompleteFieldsAreNeitherPredictedNorLearnt() {
        int[] never = {
            FieldPolicy.TYPE_NULL, FieldPolicy.TYPE_CLASS_NUMBER, FieldPolicy.TYPE_CLASS_PHONE, FieldPolicy.TYPE_CLASS_DATETIME,
            FieldPolicy.TYPE_CLASS_NUMBER | FieldPolicy.TYPE_NUMBER_VARIATION_PASSWORD,
            TEXT | FieldPolicy.TYPE_TEXT_VARIATION_URI, TEXT | FieldPolicy.TYPE_TEXT_VARIATION_EMAIL_ADDRESS,
            TEXT | FieldPolicy.TYPE_TEXT_VARIATION_WEB_EMAIL_ADDRESS, TEXT | FieldPolicy.TYPE_TEXT_VARIATION_FILTER,
            TEXT | FieldPolicy.TYPE_TEXT_VARIATION_PASSWORD, TEXT | FieldPolicy.TYPE_TEXT_VARIATION_VISIBLE_PASSWORD,
            TEXT | FieldPolicy.TYPE_TEXT_VARIATION_WEB_PASSWORD, TEXT | FieldPolicy.TYPE_TEXT_FLAG_NO_SUGGESTIONS,
            TEXT | FieldPolicy.TYPE_TEXT_FLAG_AUTO_COMPLETE,
        };
        int allFlags = FieldPolicy.TYPE_TEXT_FLAG_MULTI_LINE | AUTO_CORRECT | FieldPolicy.TYPE_TEXT_FLAG_CAP_SENTENCES;
        for (int type : never) {
            for (int flags : new int[] {0, allFlags}) {
                int t = type == FieldPolicy.TYPE_NULL ? type : type | flags;
                assertFalse(Integer.toHexString(t), FieldPolicy.mayPredict(t));
                assertFalse(Integer.toHexString(t), FieldPolicy.mayLearn(t, 0));
            }
        }
        assertTrue(FieldPolicy.mayLearn(TEXT | FieldPolicy.TYPE_TEXT_FLAG_MULTI_LINE, 0));
        assertFalse("incognito", FieldPolicy.mayLearn(TEXT | FieldPolicy.TYPE_TEXT_FLAG_MULTI_LINE,
                FieldPolicy.IME_FLAG_NO_PERSONALIZED_LEARNING));
        assertTrue("incognito fields are still predicted in", FieldPolicy.mayPredict(TEXT | FieldPolicy.TYPE_TEXT_FLAG_MULTI_LINE));
        // Every variation and flag combination: learning implies prediction.
        for (int t = 0; t < 0x100000; t += 0x10) {
            for (int cls = 0; cls <= 4; cls++) {
                if (FieldPolicy.mayLearn(t | cls, 0)) assertTrue(Integer.toHexString(t | cls), FieldPolicy.mayPredict(t | cls));
            }
        }
    }

    @Test
    public void chunksWithDigitsAddressesOrUrlsAreNeverLearnt() {
        for (String ok : new String[] {"hello", "don't", "Caf\u00e9", "well,", "(and", "end.", "\u2764\ufe0f", "and/or"}) {
            assertTrue(ok, FieldPolicy.mayLearnChunk(ok));
        }
        for (String no : new String[] {"4111", "hunter2", "2nd", "\u00bd", "\u0663", "bob@example.com", "@handle",
                "https://bank.example/reset?token=", "http://x", "www.example", "bank.example/reset", "report.pdf",
                "token=abc", "WWW.EXAMPLE", "\uff48\uff54\uff54\uff50\uff53\uff1a//x"}) {
            assertFalse(no, FieldPolicy.mayLearnChunk(no));
        }
    }

    @Test
    public void aWordOnlyTheHistoryKnowsIsShownAfterTwoTypingsAndNeverOnALockedDevice() {
        UserHistory h = new UserHistory();
        h.learnWord(null, "zorblax");
        assertFalse("typed once", FieldPolicy.mayShowHistoryWord(h.count("zorblax"), false));
        h.learnWord("the", "zorblax");
        assertTrue("typed twice", FieldPolicy.mayShowHistoryWord(h.count("zorblax"), false));
        assertFalse("locked", FieldPolicy.mayShowHistoryWord(h.count("zorblax"), true));
        for (int i = 0; i < 2 * UserHistory.DEFAULT_HALF_LIFE; i++) h.learnWord(null, "other");
        assertFalse("typed twice long ago", FieldPolicy.mayShowHistoryWord(h.count("zorblax"), false));
    }

    @Test
    public void theReadmeTableIsTheOneThePolicyGenerates() throws IOException {
        String path = System.getProperty("kblm.readme");
        assertTrue("system property kblm.readme names android_demo/README.md", path != null);
        String readme = new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.UTF_8);
        int start = readme.indexOf(TABLE_START);
        int end = readme.indexOf(TABLE_END);
        if (start < 0 || end < start) {
            fail(path + " lacks the lines " + TABLE_START + " and " + TABLE_END + " around the field-policy table:\n" + table());
        }
        String got = readme.substring(start + TABLE_START.length(), end).trim() + "\n";
        assertEquals(path + ": the field-policy table differs from the policy's; replace it with:\n" + table(), table(), got);
    }
}
