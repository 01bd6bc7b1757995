package org.keyboardlm.core;

import java.util.ArrayDeque;
import java.util.Locale;

/**
 * What the keyboard does to the text: keys, a tapped or long-pressed suggestion, backspace,
 * cursor moves and fields starting, over an {@link EditorConnection} (LatinIME's
 * {@code InputLogic} over its {@code RichInputConnection}). The keyboard service only forwards
 * Android's callbacks here and draws {@link #slots()} and {@link #shifted()}. Runs on the UI
 * thread; ranking goes to a {@link StripRanker}, whose results come back through
 * {@link #onStrip}/{@link #onMessage} on the UI thread.
 *
 * <ul>
 * <li><b>A cached window of the text.</b> The text before the cursor (at most {@link #WINDOW}
 * units) is read when the input view starts and after a change the keyboard did not make;
 * the keyboard's own edits update it in place. Each batch of the keyboard's edits expects one
 * selection update at the cursor it leaves; an update that matches is the editor echoing that
 * edit and reads nothing, any other (a tap elsewhere, a paste, the app's change) reloads the
 * window and is sent to the ranker as not typed by the keyboard. So typing reads nothing from
 * the editor while the cache is valid ({@link #editorReads()} counts the reads).</li>
 * <li><b>A composing region over the word at the cursor</b>, also when the cursor is inside a
 * word (after a cursor move, the region spans the whole word): a tapped suggestion replaces
 * the whole word, never only the part before the cursor.</li>
 * <li><b>A phantom space.</b> A tapped suggestion is followed by no space yet: the next letter
 * or tap inserts one first, a space key makes it real, and punctuation that closes
 * ({@code . , ! ? ; : ) ] } " '} and the ellipsis) yields to it, giving {@code word.} rather
 * than {@code word .}. The ranker sees the space at once (next-word suggestions, the word
 * learnt).</li>
 * <li><b>Capitals.</b> Auto-caps follows the field's caps mode (its {@code inputType} flags,
 * computed on the cached window as {@code TextUtils.getCapsMode} does: no IPC); shift gives
 * one capital, and a shift while auto-caps is on turns it off for the next letter; a double
 * tap on shift locks capitals until the next tap ({@link ShiftKey}). A suggestion takes the
 * typed word's case ({@code HEL} -> {@code HELLO}, {@code Hel} -> {@code Hello}; all capitals
 * under caps lock) or, with nothing typed, the auto-caps of its place; the pronoun {@code i}
 * ({@code i'm}, ...) is written {@code I} (English), typed or tapped.</li>
 * <li><b>Double-space period.</b> A space typed within {@link #DOUBLE_SPACE_PERIOD_MILLIS} of a
 * typed space, with no other key between, turns {@code word  } into {@code word. } when the
 * character before the first space may end a sentence: a letter or digit, a closing quote or
 * bracket, {@code +}, {@code %} or a symbol such as an emoji, not a period (LatinIME's
 * {@code tryPerformDoubleSpacePeriod} and {@code canBeFollowedByDoubleSpacePeriod}, its 1,100 ms
 * timeout). Only in fields the keyboard reads (where it predicts), so never in a password.</li>
 * <li><b>Layouts.</b> {@link #layout()}: the field's ({@link #layoutFor}: letters, numbers, a date
 * and time pad with {@code /} and {@code :}, a phone pad), and the symbols the mode key toggles
 * to and back ({@link #toggleSymbols()}).</li>
 * <li><b>Strips tied to their text.</b> Every change of the text takes a new sequence number;
 * a strip is shown only for the text it was ranked on, and a tap or long press acts only on
 * such a strip (a tap on one that has not caught up does nothing).</li>
 * <li><b>Revert.</b> Backspace right after a tap puts back what was typed (the whole word it
 * replaced) and the ranker unlearns the tapped word if it was learnt
 * ({@link StripRanker#unlearn}). A long press on a suggestion removes that word from the user
 * history ({@link StripRanker#removeWord}).</li>
 * <li><b>Fields.</b> {@link #startInput} runs for every field, with or without the input view
 * (a hardware keyboard); the field's text is read only once its view starts and only where
 * {@link FieldPolicy#mayPredict} allows it. In other fields the keys go straight to the editor
 * and nothing is read. Learning follows {@link FieldPolicy#mayLearn(int, int, boolean)} with the
 * user's "pause learning" setting ({@link #setLearningPaused}).</li>
 * <li><b>The lock screen.</b> While the device is locked the ranker's field uses no history
 * ({@link TextField}: no re-ranking, no learning) and a long press removes nothing.</li>
 * </ul>
 */
public final class InputLogic {
    /** Units of text before the cursor kept in the cache and sent to the ranker (the session restarts every seqLen words anyway). */
    public static final int WINDOW = 1000;
    /** Units read after the cursor to find the rest of the word the cursor is in. */
    static final int WORD_AFTER = 48;
    /** Keyboard layouts: letters, symbols, numbers, a phone pad, a date and time pad. */
    public static final int LAYOUT_TEXT = 0;
    public static final int LAYOUT_SYMBOLS = 1;
    public static final int LAYOUT_NUMBER = 2;
    public static final int LAYOUT_PHONE = 3;
    public static final int LAYOUT_DATETIME = 4;
    /** A key's time when the caller has none: no double tap, no double-space period. */
    public static final long NO_TIME = Long.MIN_VALUE;
    /** A second space within this many milliseconds of a typed space makes a period (LatinIME's timeout). */
    public static final long DOUBLE_SPACE_PERIOD_MILLIS = 1100;
    /** Selection updates the keyboard's own edits are expected to cause, at most. */
    private static final int MAX_EXPECTED = 32;

    /** Told when what the keyboard shows changed (the strip, the shift state). */
    public interface Listener {
        void onStateChanged();
    }

    private final StripRanker ranker;
    private final Listener listener;

    private EditorConnection editor;
    private int fieldNumber;
    private int inputType;
    private boolean predicting;
    private boolean viewShown;
    /** The cached text before the cursor (the selection's start); null: not read. */
    private String before;
    /** The selection, absolute; -1: unknown (the editor did not say). */
    private int selStart = -1;
    private int selEnd = -1;
    /** True while the word at the cursor is the editor's composing region ({@link #wordAfter}: its part after the cursor). */
    private boolean composing;
    private String wordAfter = "";
    private boolean phantomSpace;
    private final ShiftKey shift = new ShiftKey();
    /** When the last key, a typed space, came ({@link #NO_TIME}: the last key was something else). */
    private long spaceAt = NO_TIME;
    private boolean locked;
    private boolean learningPaused;
    private int layout = LAYOUT_TEXT;
    /** The layout the symbols toggle back to. */
    private int fieldLayout = LAYOUT_TEXT;
    private int seq;
    private String[] strip = new String[TextField.SLOTS];
    private int stripSeq = -1;
    private boolean stripCompleting;
    private String message;
    private boolean loading;
    private Pick lastPick;
    private final ArrayDeque<Integer> expected = new ArrayDeque<Integer>();
    private int reads;

    /** A tapped suggestion, for a revert. */
    private static final class Pick {
        final int seq;
        final String word;
        final String typed;
        final String inserted;
        final boolean phantomBefore;

        Pick(int seq, String word, String typed, String inserted, boolean phantomBefore) {
            this.seq = seq;
            this.word = word;
            this.typed = typed;
            this.inserted = inserted;
            this.phantomBefore = phantomBefore;
        }
    }

    public InputLogic(StripRanker ranker, Listener listener) {
        if (ranker == null || listener == null) throw new IllegalArgumentException("ranker and listener must not be null");
        this.ranker = ranker;
        this.listener = listener;
    }

    // -- fields ------------------------------------------------------------------------------

    /**
     * A field starts (Android's {@code onStartInput}, restarting or not, shown or not): its
     * attributes decide prediction and learning ({@link FieldPolicy}); the ranker restarts, and
     * a text queued from the previous field is dropped. Nothing is read yet.
     * {@code initialSelStart/End}: the editor's selection ({@code EditorInfo}), -1 if unknown.
     */
    public void startInput(EditorConnection editor, int inputType, int imeOptions, int initialSelStart, int initialSelEnd,
                           boolean locked) {
        this.editor = editor;
        this.inputType = inputType;
        fieldNumber++;
        predicting = editor != null && FieldPolicy.mayPredict(inputType);
        before = null;
        selStart = initialSelStart;
        selEnd = initialSelEnd;
        composing = false;
        wordAfter = "";
        phantomSpace = false;
        shift.reset();
        spaceAt = NO_TIME;
        this.locked = locked;
        fieldLayout = layoutFor(inputType);
        layout = fieldLayout;
        lastPick = null;
        expected.clear();
        seq++;
        clearStrip();
        // The lock screen is TextField's to enforce: a field opened locked learns once unlocked.
        ranker.startField(fieldNumber, FieldPolicy.mayLearn(inputType, imeOptions, learningPaused), locked);
        listener.onStateChanged();
    }

    /** The input view shows the field: its text is read (where the keyboard predicts) and ranked, never learnt. */
    public void startInputView(boolean locked) {
        viewShown = true;
        this.locked = locked;
        ranker.setDeviceLocked(locked);
        if (predicting) reloadAndRank(false);
        listener.onStateChanged();
    }

    /** Rank the current text again (the model finished loading), as not typed by the keyboard. */
    public void refresh() {
        if (!predicting || !viewShown || before == null) return;
        seq++;
        requestRank(false);
        listener.onStateChanged();
    }

    /** The input view is hidden: the word being typed stays as it is, unmarked. */
    public void finishInputView() {
        viewShown = false;
        if (composing && editor != null) editor.finishComposingText();
        composing = false;
        wordAfter = "";
        phantomSpace = false;
        lastPick = null;
    }

    /** The field is gone ({@code onFinishInput}). */
    public void finishInput() {
        finishInputView();
        editor = null;
        predicting = false;
        before = null;
    }

    /**
     * The user's "pause learning" setting: while true no field learns (suggestions still use the
     * history). It applies from the next field ({@link #startInput}).
     */
    public void setLearningPaused(boolean paused) {
        learningPaused = paused;
    }

    public boolean learningPaused() {
        return learningPaused;
    }

    /** The layout the keyboard shows: the field's ({@link #layoutFor}) or {@link #LAYOUT_SYMBOLS}. */
    public int layout() {
        return layout;
    }

    /** The mode key ({@code ?123} / {@code ABC}): to the symbols, and back to the field's layout. */
    public void toggleSymbols() {
        layout = layout == LAYOUT_SYMBOLS ? fieldLayout : LAYOUT_SYMBOLS;
        listener.onStateChanged();
    }

    /**
     * The layout for a field: numbers for number fields, a date and time pad ({@code /},
     * {@code :} and the mode key to the symbols) for date/time fields, a phone pad for phone
     * fields, else letters.
     */
    public static int layoutFor(int inputType) {
        switch (inputType & FieldPolicy.TYPE_MASK_CLASS) {
            case FieldPolicy.TYPE_CLASS_NUMBER:
                return LAYOUT_NUMBER;
            case FieldPolicy.TYPE_CLASS_DATETIME:
                return LAYOUT_DATETIME;
            case FieldPolicy.TYPE_CLASS_PHONE:
                return LAYOUT_PHONE;
            default:
                return LAYOUT_TEXT;
        }
    }

    // -- the editor's reports ----------------------------------------------------------------

    /**
     * Android's {@code onUpdateSelection}. An update at a cursor the keyboard's own edit left is
     * that edit's echo: nothing is read. Any other (the user moved the cursor or selected, the
     * editor changed the text) reloads the window, puts the composing region over the word at
     * the cursor, and is ranked as not typed by the keyboard.
     */
    public void updateSelection(int oldSelStart, int oldSelEnd, int newSelStart, int newSelEnd,
                                int candidatesStart, int candidatesEnd) {
        if (newSelStart == newSelEnd) {
            while (!expected.isEmpty()) {
                if (expected.pollFirst() == newSelStart) {
                    selStart = newSelStart;
                    selEnd = newSelEnd;
                    return;  // the echo of the keyboard's own edit
                }
            }
        }
        expected.clear();
        spaceAt = NO_TIME;  // the cursor moved: a space after this is no second space
        selStart = newSelStart;
        selEnd = newSelEnd;
        if (!predicting || !viewShown || editor == null) {
            composing = false;  // a hardware keyboard's field, or one that is not read
            return;
        }
        phantomSpace = false;
        lastPick = null;
        reloadAndRank(composing);
        listener.onStateChanged();
    }

    /** Read the editor's text again (ending the composing region first if asked) and rank it as not typed. */
    private void reloadAndRank(boolean finishComposing) {
        editor.beginBatchEdit();
        if (finishComposing) editor.finishComposingText();
        reload();
        editor.endBatchEdit();
        expect();
        seq++;
        requestRank(false);
    }

    /** UI thread: a strip came back; shown only if it was ranked on the current text. */
    public void onStrip(int forSeq, String[] slots, boolean completing) {
        if (forSeq != seq) return;
        strip = slots.clone();
        stripSeq = forSeq;
        stripCompleting = completing;
        message = null;
        loading = false;
        listener.onStateChanged();
    }

    /** UI thread: no suggestions for the text {@code forSeq}: {@code text} says why (null: the model is loading). */
    public void onMessage(int forSeq, String text) {
        if (forSeq != seq) return;
        clearStrip();
        message = text;
        loading = text == null;
        listener.onStateChanged();
    }

    // -- keys --------------------------------------------------------------------------------

    /** {@link #type(int, long)} with no time: never a double-space period. */
    public void type(int codePoint) {
        type(codePoint, NO_TIME);
    }

    /**
     * A character key ({@code codePoint} as the layout has it, lowercase for letters; shift,
     * caps lock and auto-caps apply), pressed at {@code time} (milliseconds on the caller's
     * clock, {@link #NO_TIME} when unknown): a space there may make a double-space period.
     */
    public void type(int codePoint, long time) {
        if (editor == null) return;
        long lastSpace = spaceAt;
        spaceAt = NO_TIME;
        String s = new String(Character.toChars(codePoint));
        boolean letter = TextSpec.isWordChar(codePoint) || (isApostrophe(codePoint) && composing);
        if (letter && shifted()) s = s.toUpperCase(Locale.ROOT);
        shift.spent();
        if (!predicting || before == null) {
            editor.commitText(s, 1);
            if (selStart >= 0) selStart = selEnd = selStart + s.length();
            expect();
            listener.onStateChanged();
            return;
        }
        editor.beginBatchEdit();
        if (hasSelection()) {
            editor.commitText(s, 1);  // replaces the selection
            composing = false;
            wordAfter = "";
            phantomSpace = false;
            selEnd = selStart;
        } else if (letter) {
            if (phantomSpace) insertPhantomSpace();
            String wb = TextField.wordBeingTyped(before);
            if (canCompose() && wordAfter.isEmpty()) {
                if (!composing && !wb.isEmpty()) editor.setComposingRegion(selStart - wb.length(), selStart);
                editor.setComposingText(wb + s, 1);
                composing = true;
            } else if (canCompose()) {
                // Inside a word: the letter goes in at the cursor, the region spans the word again.
                editor.finishComposingText();
                editor.commitText(s, 1);
                int cursor = selStart + s.length();
                editor.setComposingRegion(cursor - wb.length() - s.length(), cursor + wordAfter.length());
            } else {
                editor.commitText(s, 1);
            }
        } else if (codePoint == ' ' && doubleSpacePeriod(lastSpace, time)) {
            editor.deleteSurroundingText(1, 0);
            cut(1);
            editor.commitText(". ", 1);
            s = ". ";  // and the countdown stays off: a third space is a space
        } else {
            if (composing) finishWord();
            if (phantomSpace && codePoint != ' ' && !yieldsToPhantomSpace(codePoint)) insertPhantomSpace();
            phantomSpace = false;
            editor.commitText(s, 1);
            if (codePoint == ' ' && time != NO_TIME) spaceAt = time;
        }
        editor.endBatchEdit();
        edited(s);
    }

    /**
     * Whether a space at {@code time} makes the period: the last key was a typed space at
     * {@code lastSpace}, less than {@link #DOUBLE_SPACE_PERIOD_MILLIS} before, and the text ends
     * with that space after a character {@link #canEndBeforeDoubleSpace} accepts.
     */
    private boolean doubleSpacePeriod(long lastSpace, long time) {
        if (lastSpace == NO_TIME || time == NO_TIME || time - lastSpace < 0 || time - lastSpace >= DOUBLE_SPACE_PERIOD_MILLIS) return false;
        if (composing || phantomSpace || before.length() < 2 || before.charAt(before.length() - 1) != ' ') return false;
        return canEndBeforeDoubleSpace(before.codePointBefore(before.length() - 1));
    }

    /**
     * A character a double-space period may follow (LatinIME's {@code canBeFollowedByDoubleSpacePeriod}):
     * a letter or digit, a quote, a closing bracket, {@code +}, {@code %}, or a symbol such as an
     * emoji; not a period or other punctuation.
     */
    static boolean canEndBeforeDoubleSpace(int cp) {
        return Character.isLetterOrDigit(cp) || "'\")]}>+%".indexOf(cp) >= 0 || Character.getType(cp) == Character.OTHER_SYMBOL;
    }

    /** {@link #shift(long)} with no time: never a double tap. */
    public void shift() {
        shift(NO_TIME);
    }

    /**
     * The shift key at {@code time} (the caller's clock, {@link #NO_TIME} when unknown): one
     * capital, or, while auto-caps would give one, none; a second tap within
     * {@code ShiftKey.DOUBLE_TAP_MILLIS} locks capitals, and a tap under caps lock unlocks.
     */
    public void shift(long time) {
        shift.tap(time, autoCaps());
        listener.onStateChanged();
    }

    /** True while caps lock is on (the keyboard draws its shift key locked). */
    public boolean capsLocked() {
        return shift.locked();
    }

    /**
     * The delete key: right after a tapped suggestion, the revert; else the selection, or one
     * code point (a surrogate pair counts as one), of the composing word when there is one.
     */
    public void delete() {
        if (editor == null) return;
        shift.spent();
        spaceAt = NO_TIME;
        if (!predicting || before == null) {
            editor.sendDeleteKey();  // the editor knows its text; the keyboard does not read it here
            return;
        }
        editor.beginBatchEdit();
        if (lastPick != null && lastPick.seq == seq && !hasSelection()) {
            revert(lastPick);
        } else if (hasSelection()) {
            if (composing) editor.finishComposingText();
            editor.commitText("", 1);
            composing = false;
            wordAfter = "";
            selEnd = selStart;
        } else {
            phantomSpace = false;
            String wb = TextField.wordBeingTyped(before);
            if (composing && wordAfter.isEmpty() && !wb.isEmpty()) {
                String shorter = wb.substring(0, wb.length() - TextField.backspaceLength(wb));
                editor.setComposingText(shorter, 1);
                if (shorter.isEmpty()) editor.finishComposingText();
                composing = !shorter.isEmpty();
                cut(wb.length() - shorter.length());
            } else {
                // Inside a word, its part after the cursor is known; after a word's end, nothing
                // of a word follows; after anything else, the editor is asked.
                String after = composing ? wordAfter : null;
                if (composing) editor.finishComposingText();
                composing = false;
                wordAfter = "";
                int n = TextField.backspaceLength(before);
                if (n == 0) {
                    editor.sendDeleteKey();
                } else {
                    if (after == null && TextSpec.isWordChar(before.codePointBefore(before.length()))) after = "";
                    editor.deleteSurroundingText(n, 0);
                    cut(n);
                    composeWordAtCursor(after);
                }
            }
        }
        editor.endBatchEdit();
        edited("");
    }

    /** The keyboard's own editor action or a key it sends as an event (enter): the word being typed is finished first. */
    public void finishComposing() {
        if (composing && editor != null) {
            editor.beginBatchEdit();
            finishWord();
            editor.endBatchEdit();
            edited("");
        }
    }

    // -- the strip ---------------------------------------------------------------------------

    /**
     * A tap on slot {@code slot}: the word replaces the whole word at the cursor (or follows the
     * text), in the case of what was typed, with a phantom space after it. False (nothing
     * happens) when the slot is empty or the strip was not ranked on the current text.
     */
    public boolean pick(int slot) {
        String word = currentSlot(slot);
        if (word == null) return false;
        String wb = wordBeforeCursor();
        String typed = composing ? wb + wordAfter : wb;
        String cased = capsLocked() ? word.toUpperCase(Locale.ROOT) : applyCase(word, typed, typed.isEmpty() && autoCaps());
        String prefix = "";
        boolean phantomBefore = phantomSpace;
        editor.beginBatchEdit();
        if (composing) {
            editor.commitText(cased, 1);  // replaces the whole composing word
        } else if (!wb.isEmpty()) {
            editor.deleteSurroundingText(wb.length(), 0);
            editor.commitText(cased, 1);
        } else {
            if (phantomSpace || (!before.isEmpty() && !Character.isWhitespace(before.codePointBefore(before.length())))) prefix = " ";
            editor.commitText(prefix + cased, 1);
        }
        editor.endBatchEdit();
        cut(wb.length());
        composing = false;
        wordAfter = "";
        shift.spent();
        spaceAt = NO_TIME;
        phantomSpace = true;
        edited(prefix + cased);
        lastPick = new Pick(seq, word, typed, prefix + cased, phantomBefore);
        return true;
    }

    /**
     * A long press on slot {@code slot}: the word leaves the user history and the strip is
     * ranked again. False when the slot is empty or the strip is stale, and on the lock screen.
     */
    public boolean removeSuggestion(int slot) {
        String word = currentSlot(slot);
        if (word == null || locked) return false;  // the lock screen changes nothing of the history
        strip[slot] = null;
        ranker.removeWord(word, seq);
        listener.onStateChanged();
        return true;
    }

    /** The word in a slot of the strip ranked on the current text; null if empty, stale or not applicable. */
    private String currentSlot(int slot) {
        if (editor == null || !predicting || before == null || !viewShown) return null;
        if (stripSeq != seq || message != null || loading || hasSelection()) return null;
        if (slot < 0 || slot >= strip.length) return null;
        return strip[slot];
    }

    /** The strip's words left to right as they would be written here (cased), null where empty. */
    public String[] slots() {
        String[] out = new String[TextField.SLOTS];
        if (before == null) return out;
        String wb = wordBeforeCursor();
        String typed = composing ? wb + wordAfter : wb;
        boolean caps = typed.isEmpty() && autoCaps();
        for (int i = 0; i < out.length; i++) {
            if (strip[i] != null) out[i] = capsLocked() ? strip[i].toUpperCase(Locale.ROOT) : applyCase(strip[i], typed, caps);
        }
        return out;
    }

    /** A message the strip shows instead (why there are no suggestions), or null. */
    public String message() {
        return message;
    }

    /** True while the strip waits for the model to load (and only then: a new view of a loaded keyboard shows no "loading"). */
    public boolean loading() {
        return loading && !ranker.ready();
    }

    /** True in a field where the keyboard predicts (the strip is shown). */
    public boolean predicting() {
        return predicting;
    }

    /** True when the next letter is a capital (shift, caps lock, or the field's caps mode at the cursor). */
    public boolean shifted() {
        return shift.shifted(autoCaps());
    }

    /** The number of the current text (for tests). */
    public int sequence() {
        return seq;
    }

    /** Reads of the editor's text so far (IPCs on Android; for tests). */
    public int editorReads() {
        return reads;
    }

    /** The cached text before the cursor (null: not read). */
    public String cachedTextBeforeCursor() {
        return before;
    }

    // -- internals ---------------------------------------------------------------------------

    /** The part of the word being typed before the cursor; empty after a phantom space. */
    private String wordBeforeCursor() {
        return phantomSpace ? "" : TextField.wordBeingTyped(before);
    }

    private boolean hasSelection() {
        return selStart >= 0 && selEnd > selStart;
    }

    private boolean canCompose() {
        return selStart >= 0 && selStart == selEnd;
    }

    private void clearStrip() {
        strip = new String[TextField.SLOTS];
        stripSeq = -1;
        message = null;
        loading = false;
    }

    /** Read the window before the cursor and put the composing region over the word there. */
    private void reload() {
        CharSequence b = editor.getTextBeforeCursor(WINDOW);
        reads++;
        before = b == null ? "" : b.toString();
        composing = false;
        wordAfter = "";
        composeWordAtCursor(null);
    }

    /**
     * Put the composing region over the word at the cursor: its part before the cursor, and its
     * part after, {@code after} (null: read from the editor).
     */
    private void composeWordAtCursor(String after) {
        if (!canCompose()) return;
        String wb = TextField.wordBeingTyped(before);
        String wa = after;
        if (wa == null) {
            CharSequence a = editor.getTextAfterCursor(WORD_AFTER);
            reads++;
            wa = wordStart(a == null ? "" : a.toString());
        }
        if (wb.isEmpty() && wa.isEmpty()) return;
        editor.setComposingRegion(selStart - wb.length(), selStart + wa.length());
        composing = true;
        wordAfter = wa;
    }

    /** The word characters (and apostrophes inside) at the start of {@code text}. */
    static String wordStart(String text) {
        int i = 0;
        while (i < text.length()) {
            int cp = text.codePointAt(i);
            if (!TextSpec.isWordChar(cp) && !isApostrophe(cp)) break;
            i += Character.charCount(cp);
        }
        return text.substring(0, i);
    }

    private static boolean isApostrophe(int cp) {
        return cp == '\'' || cp == '\u2018' || cp == '\u2019' || cp == '\u02bc';
    }

    /** Finish the composing word, writing the pronoun {@code i} as {@code I}. */
    private void finishWord() {
        String wb = TextField.wordBeingTyped(before);
        if (wordAfter.isEmpty() && isPronounI(wb)) {
            String capital = "I" + wb.substring(1);
            editor.setComposingText(capital, 1);
            before = before.substring(0, before.length() - wb.length()) + capital;
        }
        editor.finishComposingText();
        composing = false;
        wordAfter = "";
    }

    private void insertPhantomSpace() {
        if (composing) finishWord();
        editor.commitText(" ", 1);
        before = before + " ";
        if (selStart >= 0) selStart = selEnd = selStart + 1;
        phantomSpace = false;
    }

    /** Closing punctuation, which follows a tapped word with no space between. */
    static boolean yieldsToPhantomSpace(int cp) {
        return ".,!?;:)]}\"'\u2026\u2019\u201d".indexOf(cp) >= 0;
    }

    /** {@code i}, {@code i'm}, {@code i'll}, ...: the English pronoun, written with a capital. */
    static boolean isPronounI(String word) {
        return word.equals("i") || (word.length() > 2 && word.charAt(0) == 'i' && isApostrophe(word.charAt(1)));
    }

    /** Take {@code n} units off the end of the cached text (the cursor moves back). */
    private void cut(int n) {
        before = before.substring(0, before.length() - n);
        if (selStart >= 0) selStart = selEnd = selStart - n;
    }

    /** The keyboard inserted {@code inserted} at the cursor (after any deletions already cut): cache, sequence, strip. */
    private void edited(String inserted) {
        before = before + inserted;
        if (selStart >= 0) selStart = selEnd = selStart + inserted.length();
        if (before.length() > WINDOW) before = before.substring(before.length() - WINDOW);
        if (before.length() < WINDOW / 2 && selStart > before.length()) {
            // The window ran short (backspaces): read it again.
            CharSequence b = editor.getTextBeforeCursor(WINDOW);
            reads++;
            before = b == null ? "" : b.toString();
        }
        expect();
        seq++;
        lastPick = null;
        requestRank(true);
        listener.onStateChanged();
    }

    private void revert(Pick pick) {
        editor.deleteSurroundingText(pick.inserted.length(), 0);
        cut(pick.inserted.length());
        if (!pick.typed.isEmpty()) {
            if (canCompose()) {
                editor.setComposingText(pick.typed, 1);
                composing = true;
            } else {
                editor.commitText(pick.typed, 1);
            }
            before = before + pick.typed;
            if (selStart >= 0) selStart = selEnd = selStart + pick.typed.length();
        }
        wordAfter = "";
        phantomSpace = pick.phantomBefore;
        ranker.unlearn(pick.seq, pick.word);
    }

    private void expect() {
        if (selStart < 0) return;
        expected.addLast(selStart);
        if (expected.size() > MAX_EXPECTED) expected.pollFirst();
    }

    private void requestRank(boolean byKeyboard) {
        if (!predicting || !viewShown || before == null) return;
        if (hasSelection()) {
            clearStrip();  // no suggestions over a selection
            return;
        }
        ranker.request(fieldNumber, seq, phantomSpace ? before + " " : before, byKeyboard);
    }

    /** The field's caps mode at the cursor (no word being typed there). */
    private boolean autoCaps() {
        int caps = (inputType & FieldPolicy.TYPE_MASK_CLASS) == FieldPolicy.TYPE_CLASS_TEXT ? inputType : 0;
        if ((caps & FieldPolicy.TYPE_TEXT_FLAG_CAP_CHARACTERS) != 0) return true;
        if (before == null || !wordBeforeCursor().isEmpty()) return false;
        return capsAt(phantomSpace ? before + " " : before, caps);
    }

    /**
     * Whether a capital starts here, after {@code text}, in a field with caps flags
     * {@code caps} ({@code TYPE_TEXT_FLAG_CAP_WORDS}, {@code _SENTENCES}), as Android's
     * {@code TextUtils.getCapsMode} decides: at the start, after whitespace for words, and after
     * a sentence's end and whitespace (or a line break) for sentences; opening quotes and
     * brackets before the cursor are skipped.
     */
    static boolean capsAt(String text, int caps) {
        boolean words = (caps & FieldPolicy.TYPE_TEXT_FLAG_CAP_WORDS) != 0;
        boolean sentences = (caps & FieldPolicy.TYPE_TEXT_FLAG_CAP_SENTENCES) != 0;
        if (!words && !sentences) return false;
        int i = text.length();
        while (i > 0 && "\"'([{\u201c\u2018".indexOf(text.charAt(i - 1)) >= 0) i--;
        if (i == 0) return true;
        if (words && Character.isWhitespace(text.charAt(i - 1))) return true;
        if (!sentences) return false;
        int spaces = i;
        while (i > 0 && Character.isWhitespace(text.charAt(i - 1))) {
            if (text.charAt(i - 1) == '\n') return true;
            i--;
        }
        if (i == 0) return true;
        if (i == spaces) return false;  // no space after the last character yet
        while (i > 0 && "\"')]}\u201d\u2019".indexOf(text.charAt(i - 1)) >= 0) i--;
        if (i == 0) return false;
        char c = text.charAt(i - 1);
        return c == '.' || c == '!' || c == '?' || c == '\u2026' || c == '\u3002';
    }

    /**
     * {@code word} (a lowercase token) written as the user typed {@code typed}: all capitals
     * when two or more letters were typed in capitals, a first capital when the typed word (or,
     * with nothing typed, {@code capitalize}) has one; the pronoun {@code i} always with one.
     */
    static String applyCase(String word, String typed, boolean capitalize) {
        if (word.isEmpty()) return word;
        int letters = 0;
        int upper = 0;
        for (int i = 0; i < typed.length(); ) {
            int cp = typed.codePointAt(i);
            if (Character.isLetter(cp)) {
                letters++;
                if (Character.isUpperCase(cp)) upper++;
            }
            i += Character.charCount(cp);
        }
        if (letters >= 2 && upper == letters) return word.toUpperCase(Locale.ROOT);
        boolean first = typed.isEmpty() ? capitalize : Character.isUpperCase(typed.codePointAt(0));
        if (first || isPronounI(word)) {
            int cp = word.codePointAt(0);
            return new String(Character.toChars(Character.toTitleCase(cp))) + word.substring(Character.charCount(cp));
        }
        return word;
    }
}
