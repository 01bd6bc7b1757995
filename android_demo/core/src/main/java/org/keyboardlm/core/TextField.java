package org.keyboardlm.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The keyboard's view of one text field: from the text before the cursor to a
 * {@link Session} and the 3-slot strip. Everything the Android keyboard decides lives here,
 * so the InputMethodService only reads the editor, calls {@link #update} off the UI thread
 * and shows the {@link Strip}. Not thread-safe: one background thread owns it.
 *
 * <p>The text before the cursor is split into committed text and the word being typed
 * ({@link #wordBeingTyped}). The session follows the committed text's last sentence (its
 * state depends on nothing else): each update compares that sentence's words with the words
 * the session has committed, rewinds the ones that changed (backspace, a tapped suggestion
 * replacing a word) and commits the new ones, so typing a letter costs no model step, a space
 * one step, and a backspace into the previous word a rewind (no step). When the session
 * cannot rewind far enough, or many words arrive at once (a paste), it restarts and replays
 * the sentence's current chunk (at most seqLen steps), as {@link Predictor#suggest} does.
 */
public final class TextField {
    /** Candidates per strip. */
    public static final int SLOTS = 3;

    private final Predictor predictor;
    private final Session session;
    /** The words of the current sentence the session has committed. */
    private final List<String> committed = new ArrayList<String>();
    private int stepsRun;

    /** What the strip shows after an update. */
    public static final class Strip {
        /** Candidates, most likely first (at most {@link #SLOTS}). */
        public final List<Suggestion> ranked;
        /** True when {@link #ranked} completes {@link #typing}; false for next-word suggestions. */
        public final boolean completing;
        /** The word being typed (raw text, as in the editor); empty after a space. */
        public final String typing;
        /** Model steps this update ran (0 for a typed letter, 1 for a committed word). */
        public final int steps;

        Strip(List<Suggestion> ranked, boolean completing, String typing, int steps) {
            this.ranked = Collections.unmodifiableList(ranked);
            this.completing = completing;
            this.typing = typing;
            this.steps = steps;
        }

        /** Slot words left to right, Gboard style: second, first (center), third; null where empty. */
        public String[] slots() {
            String[] s = new String[SLOTS];
            int[] rankOfSlot = {1, 0, 2};
            for (int i = 0; i < SLOTS; i++) s[i] = rankOfSlot[i] < ranked.size() ? ranked.get(rankOfSlot[i]).word : null;
            return s;
        }
    }

    /** An edit to apply before the cursor: delete {@link #deleteBefore} UTF-16 units, then insert {@link #insert}. */
    public static final class Edit {
        public final int deleteBefore;
        public final String insert;

        Edit(int deleteBefore, String insert) {
            this.deleteBefore = deleteBefore;
            this.insert = insert;
        }
    }

    public TextField(Predictor predictor) {
        this.predictor = predictor;
        this.session = predictor.session();
    }

    /** A new (or cleared) field. */
    public void reset() {
        session.reset();
        committed.clear();
    }

    /** The session this field drives (read-only use: suggestions, counters). */
    public Session session() {
        return session;
    }

    /**
     * Bring the session to {@code textBeforeCursor} and rank the strip: completions of the word
     * being typed, or next-word suggestions after a space or punctuation.
     */
    public Strip update(String textBeforeCursor) {
        if (textBeforeCursor == null) throw new IllegalArgumentException("textBeforeCursor must not be null");
        String typing = wordBeingTyped(textBeforeCursor);
        List<TextSpec.Item> items = TextSpec.scan(textBeforeCursor.substring(0, textBeforeCursor.length() - typing.length()));
        int lastEnd = -1;
        for (int i = 0; i < items.size(); i++) if (items.get(i).end) lastEnd = i;
        List<TextSpec.Item> sentence = items.subList(lastEnd + 1, items.size());
        stepsRun = 0;
        follow(sentence);
        List<Suggestion> ranked = typing.isEmpty() ? session.suggestions(SLOTS) : session.complete(typing, SLOTS);
        return new Strip(ranked, !typing.isEmpty() && !Session.strip(TextSpec.normalize(typing)).isEmpty(), typing, stepsRun);
    }

    private void follow(List<TextSpec.Item> sentence) {
        int same = 0;
        while (same < committed.size() && same < sentence.size() && committed.get(same).equals(sentence.get(same).text)) {
            same++;
        }
        int back = committed.size() - same;
        int ahead = sentence.size() - same;
        if (back <= session.rewindable() && ahead <= predictor.model.seqLen) {
            for (int i = 0; i < back; i++) session.rewind();
            for (int i = same; i < sentence.size(); i++) {
                session.commitWord(sentence.get(i).text);
                stepsRun++;
            }
        } else {
            session.reset();
            stepsRun++;
            int stepsBefore = session.steps();
            session.commitItems(sentence, true);
            stepsRun += session.steps() - stepsBefore;
        }
        committed.clear();
        for (TextSpec.Item item : sentence) committed.add(item.text);
    }

    /**
     * The word being typed: the longest end of {@code textBeforeCursor} made of letters, marks,
     * digits and apostrophes (so "don'" is still one word). Empty after a space or punctuation.
     */
    public static String wordBeingTyped(String textBeforeCursor) {
        int i = textBeforeCursor.length();
        while (i > 0) {
            int cp = textBeforeCursor.codePointBefore(i);
            if (!TextSpec.isWordChar(cp) && cp != '\'' && cp != '\u2018' && cp != '\u2019' && cp != '\u02bc') break;
            i -= Character.charCount(cp);
        }
        return textBeforeCursor.substring(i);
    }

    /**
     * The edit that puts {@code word} (a tapped suggestion, a normalized lowercase token) in
     * place of the word being typed, followed by a space: capitalized when the typed word
     * starts with a capital; after punctuation with no space yet, a space goes first.
     */
    public static Edit pick(String textBeforeCursor, String word) {
        String typing = wordBeingTyped(textBeforeCursor);
        String rest = textBeforeCursor.substring(0, textBeforeCursor.length() - typing.length());
        boolean needSpace = typing.isEmpty() && !rest.isEmpty() && !Character.isWhitespace(rest.codePointBefore(rest.length()));
        if (!typing.isEmpty() && Character.isUpperCase(typing.codePointAt(0)) && !word.isEmpty()) {
            int first = word.codePointAt(0);
            word = new String(Character.toChars(Character.toTitleCase(first))) + word.substring(Character.charCount(first));
        }
        return new Edit(typing.length(), (needSpace ? " " : "") + word + " ");
    }

    /** UTF-16 units one backspace deletes: the last code point (a surrogate pair counts as one). */
    public static int backspaceLength(String textBeforeCursor) {
        if (textBeforeCursor.isEmpty()) return 0;
        return Character.charCount(textBeforeCursor.codePointBefore(textBeforeCursor.length()));
    }
}
