package org.keyboardlm.core;

/**
 * Where the keyboard may predict and what it may learn: the field's attributes (Android's
 * {@code EditorInfo.inputType} and {@code imeOptions}), the text a word sits in, and which
 * words only the user history knows may be shown. The rules are at least as strict as AOSP
 * LatinIME's ({@code InputAttributes}: which fields get suggestions; {@code SettingsValues} and
 * {@code InputLogic}: learning only where correction is on); android_demo/README.md tabulates
 * them side by side, and {@code FieldPolicyTest} checks that table and that no row is laxer
 * than LatinIME's.
 *
 * <p>Fields:
 * <ul>
 * <li>{@link #mayPredict}: only text-class fields, and among them not password (text, visible,
 *     web), e-mail (plain and web), URI or filter fields, nor fields that ask for no suggestions
 *     or that the app completes itself ({@code TYPE_TEXT_FLAG_AUTO_COMPLETE}). Number, phone,
 *     date/time and raw ({@code TYPE_NULL}) fields: never; their text is not even read.</li>
 * <li>{@link #mayLearn}: only where {@link #mayPredict} is true, where the field asks for
 *     correction as LatinIME requires before it learns (multi-line or
 *     {@code TYPE_TEXT_FLAG_AUTO_CORRECT}; a web text field only with the latter), and never in
 *     a field flagged {@code IME_FLAG_NO_PERSONALIZED_LEARNING} (incognito).</li>
 * </ul>
 *
 * <p>Text: {@link #mayLearnChunk} refuses every word of a whitespace-delimited chunk that holds a
 * digit (card numbers, codes, {@code hunter2}), looks like an e-mail address or a URL (a
 * scanner splits those into innocent-looking words: {@code bob}, {@code example}, {@code token}).
 *
 * <p>Words only the history knows (outside the model's vocabulary): {@link #mayShowHistoryWord}
 * shows one only after the user typed it at least twice (LatinIME and HeliBoard also require
 * repeats before a new word is suggested), and never while the device is locked.
 *
 * <p>The user and the lock screen: {@link #mayLearn(int, int, boolean)} adds the keyboard's
 * "pause learning" setting to the field's rule, and {@link #mayUseHistory} keeps the history
 * out of the strip and out of learning while the device is locked (the lock screen's strip is
 * the model's alone: a passer-by sees nothing the user typed).
 */
public final class FieldPolicy {
    private FieldPolicy() {}

    // android.text.InputType (the core has no Android imports; the values are Android's).
    public static final int TYPE_MASK_CLASS = 0x0000000f;
    public static final int TYPE_MASK_VARIATION = 0x00000ff0;
    public static final int TYPE_MASK_FLAGS = 0x00fff000;
    public static final int TYPE_NULL = 0;
    public static final int TYPE_CLASS_TEXT = 0x00000001;
    public static final int TYPE_CLASS_NUMBER = 0x00000002;
    public static final int TYPE_CLASS_PHONE = 0x00000003;
    public static final int TYPE_CLASS_DATETIME = 0x00000004;
    public static final int TYPE_TEXT_VARIATION_NORMAL = 0x00000000;
    public static final int TYPE_TEXT_VARIATION_URI = 0x00000010;
    public static final int TYPE_TEXT_VARIATION_EMAIL_ADDRESS = 0x00000020;
    public static final int TYPE_TEXT_VARIATION_EMAIL_SUBJECT = 0x00000030;
    public static final int TYPE_TEXT_VARIATION_SHORT_MESSAGE = 0x00000040;
    public static final int TYPE_TEXT_VARIATION_LONG_MESSAGE = 0x00000050;
    public static final int TYPE_TEXT_VARIATION_PERSON_NAME = 0x00000060;
    public static final int TYPE_TEXT_VARIATION_POSTAL_ADDRESS = 0x00000070;
    public static final int TYPE_TEXT_VARIATION_PASSWORD = 0x00000080;
    public static final int TYPE_TEXT_VARIATION_VISIBLE_PASSWORD = 0x00000090;
    public static final int TYPE_TEXT_VARIATION_WEB_EDIT_TEXT = 0x000000a0;
    public static final int TYPE_TEXT_VARIATION_FILTER = 0x000000b0;
    public static final int TYPE_TEXT_VARIATION_PHONETIC = 0x000000c0;
    public static final int TYPE_TEXT_VARIATION_WEB_EMAIL_ADDRESS = 0x000000d0;
    public static final int TYPE_TEXT_VARIATION_WEB_PASSWORD = 0x000000e0;
    public static final int TYPE_NUMBER_VARIATION_NORMAL = 0x00000000;
    public static final int TYPE_NUMBER_VARIATION_PASSWORD = 0x00000010;
    public static final int TYPE_NUMBER_FLAG_SIGNED = 0x00001000;
    public static final int TYPE_NUMBER_FLAG_DECIMAL = 0x00002000;
    public static final int TYPE_DATETIME_VARIATION_NORMAL = 0x00000000;
    public static final int TYPE_DATETIME_VARIATION_DATE = 0x00000010;
    public static final int TYPE_DATETIME_VARIATION_TIME = 0x00000020;
    public static final int TYPE_TEXT_FLAG_CAP_CHARACTERS = 0x00001000;
    public static final int TYPE_TEXT_FLAG_CAP_WORDS = 0x00002000;
    public static final int TYPE_TEXT_FLAG_CAP_SENTENCES = 0x00004000;
    public static final int TYPE_TEXT_FLAG_AUTO_CORRECT = 0x00008000;
    public static final int TYPE_TEXT_FLAG_AUTO_COMPLETE = 0x00010000;
    public static final int TYPE_TEXT_FLAG_MULTI_LINE = 0x00020000;
    public static final int TYPE_TEXT_FLAG_IME_MULTI_LINE = 0x00040000;
    public static final int TYPE_TEXT_FLAG_NO_SUGGESTIONS = 0x00080000;
    // android.view.inputmethod.EditorInfo.
    /** EditorInfo.IME_FLAG_NO_PERSONALIZED_LEARNING (API 26): an incognito field. */
    public static final int IME_FLAG_NO_PERSONALIZED_LEARNING = 0x01000000;

    /**
     * Whether the keyboard may show suggestions and run the model in a field of this
     * {@code EditorInfo.inputType} (LatinIME's {@code InputAttributes.mShouldShowSuggestions}).
     */
    public static boolean mayPredict(int inputType) {
        if ((inputType & TYPE_MASK_CLASS) != TYPE_CLASS_TEXT) return false;  // number, phone, date/time, raw
        switch (inputType & TYPE_MASK_VARIATION) {
            case TYPE_TEXT_VARIATION_PASSWORD:
            case TYPE_TEXT_VARIATION_VISIBLE_PASSWORD:
            case TYPE_TEXT_VARIATION_WEB_PASSWORD:
            case TYPE_TEXT_VARIATION_EMAIL_ADDRESS:
            case TYPE_TEXT_VARIATION_WEB_EMAIL_ADDRESS:
            case TYPE_TEXT_VARIATION_URI:
            case TYPE_TEXT_VARIATION_FILTER:
                return false;
            default:
                return (inputType & (TYPE_TEXT_FLAG_NO_SUGGESTIONS | TYPE_TEXT_FLAG_AUTO_COMPLETE)) == 0;
        }
    }

    /**
     * Whether the field asks for correction, LatinIME's condition for learning
     * ({@code !InputAttributes.mInputTypeNoAutoCorrect}): a text field that is multi-line or has
     * {@code TYPE_TEXT_FLAG_AUTO_CORRECT}, a web text field only with the latter, and no
     * {@code TYPE_TEXT_FLAG_NO_SUGGESTIONS}.
     */
    public static boolean asksForCorrection(int inputType) {
        if ((inputType & TYPE_MASK_CLASS) != TYPE_CLASS_TEXT) return false;
        boolean autoCorrect = (inputType & TYPE_TEXT_FLAG_AUTO_CORRECT) != 0;
        boolean multiLine = (inputType & TYPE_TEXT_FLAG_MULTI_LINE) != 0;
        if ((inputType & TYPE_TEXT_FLAG_NO_SUGGESTIONS) != 0) return false;
        if ((inputType & TYPE_MASK_VARIATION) == TYPE_TEXT_VARIATION_WEB_EDIT_TEXT) return autoCorrect;
        return autoCorrect || multiLine;
    }

    /**
     * Whether words typed in a field with these {@code EditorInfo.inputType} and
     * {@code imeOptions} may be learnt: only where the keyboard predicts ({@link #mayPredict}),
     * the field asks for correction ({@link #asksForCorrection}) and the field is not incognito
     * ({@code IME_FLAG_NO_PERSONALIZED_LEARNING}).
     */
    public static boolean mayLearn(int inputType, int imeOptions) {
        return mayPredict(inputType) && asksForCorrection(inputType)
                && (imeOptions & IME_FLAG_NO_PERSONALIZED_LEARNING) == 0;
    }

    /**
     * {@link #mayLearn(int, int)}, and the user has not paused learning (the keyboard's setting:
     * with it on, nothing is learnt anywhere; suggestions still use what was learnt before).
     */
    public static boolean mayLearn(int inputType, int imeOptions, boolean learningPaused) {
        return !learningPaused && mayLearn(inputType, imeOptions);
    }

    /**
     * Whether the user history may shape the strip (re-rank the model's words, add its own) and
     * learn: never while the device is locked ({@code KeyguardManager}), where anyone holding the
     * phone sees the strip. {@link TextField} ranks with the model alone then.
     */
    public static boolean mayUseHistory(boolean deviceLocked) {
        return !deviceLocked;
    }

    /**
     * Whether the words of {@code chunk}, a run of text between whitespace, may be learnt: not
     * when it holds a digit (numbers, codes, passwords such as {@code hunter2}), an {@code @}
     * (an e-mail address or a handle), or looks like a URL or a host or file name ({@code ://},
     * {@code www.}, a {@code .} between two letters or digits, a query's {@code =}).
     */
    public static boolean mayLearnChunk(String chunk) {
        String s = TextSpec.normalize(chunk);
        if (s.indexOf('@') >= 0 || s.indexOf('=') >= 0 || s.contains("://") || s.contains("www.")) return false;
        int prev = -1;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            int type = Character.getType(cp);
            if (type == Character.DECIMAL_DIGIT_NUMBER || type == Character.LETTER_NUMBER || type == Character.OTHER_NUMBER) {
                return false;
            }
            i += Character.charCount(cp);
            if (cp == '.' && prev >= 0 && TextSpec.isWordChar(prev) && i < s.length() && TextSpec.isWordChar(s.codePointAt(i))) {
                return false;  // bank.example, report.pdf
            }
            prev = cp;
        }
        return true;
    }

    /**
     * A word only the user history knows (outside the model's vocabulary) is shown when the user
     * typed it at least twice: its decayed count is above {@value #HISTORY_ONLY_MIN_COUNT}, which
     * one typing never exceeds (it starts at 1 and only fades), so a word typed or pasted once,
     * a typo or a secret, is never offered back. Such a count fades too: a word typed twice
     * long ago must be typed again. Never while the device is locked: the strip on a lock
     * screen shows nothing the history alone knows.
     */
    public static boolean mayShowHistoryWord(double historyCount, boolean deviceLocked) {
        return !deviceLocked && historyCount > HISTORY_ONLY_MIN_COUNT;
    }

    /** See {@link #mayShowHistoryWord}. */
    public static final double HISTORY_ONLY_MIN_COUNT = 1.0;
}
