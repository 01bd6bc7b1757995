package org.keyboardlm.core;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashSet;
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
 *
 * <p>User history: with a {@link UserHistory}, the strip ranks the mixture of the model and
 * the history (see {@link Session}), and the history learns what the user types. The field
 * follows the text before the cursor, so the same word can reach the session many times
 * (backspace and retype, cursor moves, the field opened again); the field therefore learns a
 * word only when typing finishes it: an update that adds at most
 * {@link #MAX_WORDS_LEARNT_AT_ONCE} words to the words committed before, in the same sentence
 * or in the sentence a typed terminator just ended (a space, punctuation or a tapped
 * suggestion after the word). A word is not learnt again at the same place: the same words
 * before it in its sentence, after the same previous sentence (the last
 * {@link #REMEMBERED_PLACES} places learnt are remembered). Not learnt: the text a field holds
 * when it is opened (the first update after {@link #reset}), pastes and cursor jumps over
 * more words, and nothing in a field reset with {@code learn} false (see {@link #mayLearn}).
 * A backspace does not unlearn.
 *
 * <p>Finished sentences: in a field that learns, a sentence that a typed terminator ends (an
 * update that could learn its last words, as above) is kept, once per place, for
 * {@link #takeFinishedSentences()}: the keyboard's newest text, on which
 * {@link Session#chooseHistoryWeight} chooses the user's history weight (see
 * {@link RecentSentences}). Never kept: what learning leaves out (a field that does not learn,
 * the text a field holds when it is opened, pastes), and text with no terminator after it.
 */
public final class TextField {
    /** Candidates per strip. */
    public static final int SLOTS = 3;
    /** Words one keystroke or tap can finish (a word and an emoji typed right after it arrive together). */
    public static final int MAX_WORDS_LEARNT_AT_ONCE = 2;
    /** How many learnt places (see the class comment) are remembered so as not to learn them twice. */
    public static final int REMEMBERED_PLACES = 256;
    /** Finished sentences kept until {@link #takeFinishedSentences()} takes them (the oldest go first). */
    public static final int MAX_FINISHED_SENTENCES = RecentSentences.CAPACITY;

    private final Predictor predictor;
    private final Session session;
    /** The words of the current sentence the session has committed. */
    private final List<String> committed = new ArrayList<String>();
    /** Hashes of the places learnt lately (previous sentence, sentence up to the word), oldest first. */
    private final LinkedHashSet<Long> learntPlaces = new LinkedHashSet<Long>();
    /** Sentences a typed terminator finished in this field while it learnt, oldest first, not yet taken. */
    private final ArrayDeque<List<String>> finished = new ArrayDeque<List<String>>();
    /** True until the first update after a reset: the text the field already holds is not learnt. */
    private boolean opened = true;
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
        this(predictor, null);
    }

    /** A field whose strip also ranks by {@code history} (null: none), which learns what is typed. */
    public TextField(Predictor predictor, UserHistory history) {
        this.predictor = predictor;
        this.session = predictor.session(history, history != null);
    }

    /** A new (or cleared) field; learns as the previous one did. */
    public void reset() {
        reset(session.learning());
    }

    /** A new field; {@code learn} false: nothing typed in it is learnt (a password field). */
    public void reset(boolean learn) {
        session.reset();
        session.setLearning(learn);
        committed.clear();
        learntPlaces.clear();
        opened = true;
    }

    /** Learn (or not) from now on, in the same field (its type changed). */
    public void setLearning(boolean learn) {
        session.setLearning(learn);
    }

    // android.text.InputType and android.view.inputmethod.EditorInfo values (the core has no Android imports).
    static final int TYPE_MASK_CLASS = 0x0000000f;
    static final int TYPE_MASK_VARIATION = 0x00000ff0;
    static final int TYPE_NULL = 0;
    static final int TYPE_CLASS_TEXT = 0x00000001;
    static final int TYPE_CLASS_NUMBER = 0x00000002;
    static final int TYPE_TEXT_VARIATION_PASSWORD = 0x00000080;
    static final int TYPE_TEXT_VARIATION_VISIBLE_PASSWORD = 0x00000090;
    static final int TYPE_TEXT_VARIATION_WEB_PASSWORD = 0x000000e0;
    static final int TYPE_NUMBER_VARIATION_PASSWORD = 0x00000010;
    static final int TYPE_TEXT_FLAG_NO_SUGGESTIONS = 0x00080000;
    /** EditorInfo.IME_FLAG_NO_PERSONALIZED_LEARNING (API 26; incognito fields). */
    static final int IME_FLAG_NO_PERSONALIZED_LEARNING = 0x01000000;

    /**
     * Whether the keyboard may predict in a field of this {@code EditorInfo.inputType}: show
     * the strip and run the model. Never in a password field (text, visible, web or number
     * password), a field that asks for no suggestions ({@code TYPE_TEXT_FLAG_NO_SUGGESTIONS}),
     * or a raw (TYPE_NULL) one, whose text the keyboard cannot read. Incognito fields are
     * predicted in (they are only never learnt from, see {@link #mayLearn}).
     */
    public static boolean mayPredict(int inputType) {
        int cls = inputType & TYPE_MASK_CLASS;
        int variation = inputType & TYPE_MASK_VARIATION;
        if (cls == TYPE_NULL) return false;
        if (cls == TYPE_CLASS_TEXT && (variation == TYPE_TEXT_VARIATION_PASSWORD
                || variation == TYPE_TEXT_VARIATION_VISIBLE_PASSWORD || variation == TYPE_TEXT_VARIATION_WEB_PASSWORD)) {
            return false;
        }
        if (cls == TYPE_CLASS_NUMBER && variation == TYPE_NUMBER_VARIATION_PASSWORD) return false;
        return (inputType & TYPE_TEXT_FLAG_NO_SUGGESTIONS) == 0;
    }

    /**
     * Whether a field with these {@code EditorInfo.inputType} and {@code imeOptions} may be
     * learnt from: never where the keyboard may not predict ({@link #mayPredict}: passwords,
     * no-suggestion and raw fields), nor in an incognito field (no personalized learning).
     */
    public static boolean mayLearn(int inputType, int imeOptions) {
        return mayPredict(inputType) && (imeOptions & IME_FLAG_NO_PERSONALIZED_LEARNING) == 0;
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
        learn(items);
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
                session.commitWord(sentence.get(i).text, false);  // learn() has learnt what is new
                stepsRun++;
            }
        } else {
            session.reset();
            stepsRun++;
            int stepsBefore = session.steps();
            session.commitItems(sentence, true, false);
            stepsRun += session.steps() - stepsBefore;
        }
        committed.clear();
        for (TextSpec.Item item : sentence) committed.add(item.text);
    }

    /**
     * Learn the words this update finished (see the class comment), before {@link #follow}
     * replaces {@link #committed} (the words of the sentence the last update followed).
     */
    private void learn(List<TextSpec.Item> items) {
        if (session.userHistory() == null) {
            opened = false;
            return;
        }
        // The committed text's sentences; the last one (maybe empty) is being typed.
        List<List<String>> sentences = new ArrayList<List<String>>();
        List<String> current = new ArrayList<String>();
        for (TextSpec.Item item : items) {
            if (item.end) {
                sentences.add(current);
                current = new ArrayList<String>();
            } else {
                current.add(item.text);
            }
        }
        sentences.add(current);
        int n = sentences.size();
        List<String> empty = Collections.<String>emptyList();
        List<String> sentence = sentences.get(n - 1);
        List<String> before = n >= 2 ? sentences.get(n - 2) : empty;
        List<String> beforeBefore = n >= 3 ? sentences.get(n - 3) : empty;
        if (opened) {
            // The field's own text counts as learnt: retyping it is not new, nor ending its sentence.
            if (n >= 2 && !before.isEmpty()) remember(end(beforeBefore, before));
            for (int i = 0; i < before.size(); i++) remember(place(beforeBefore, before, i));
            for (int i = 0; i < sentence.size(); i++) remember(place(before, sentence, i));
            opened = false;
            return;
        }
        if (!session.learning()) return;
        int added = sentence.size() - committed.size();
        if (startsWith(sentence, committed) && added >= 1 && added <= MAX_WORDS_LEARNT_AT_ONCE) {
            for (int i = committed.size(); i < sentence.size(); i++) learnAt(before, sentence, i);
        } else if (n >= 2 && startsWith(before, committed) && before.size() - committed.size() <= MAX_WORDS_LEARNT_AT_ONCE
                && sentence.size() <= MAX_WORDS_LEARNT_AT_ONCE) {
            // A terminator ended the sentence being typed (and maybe a new one began).
            for (int i = committed.size(); i < before.size(); i++) learnAt(beforeBefore, before, i);
            for (int i = 0; i < sentence.size(); i++) learnAt(before, sentence, i);
            if (!before.isEmpty() && remember(end(beforeBefore, before))) {
                finished.addLast(new ArrayList<String>(before));
                if (finished.size() > MAX_FINISHED_SENTENCES) finished.removeFirst();
            }
        }
    }

    /**
     * The sentences a typed terminator finished in this field (and the fields before it) while
     * it learnt, since the last call: normalized words, oldest first, at most
     * {@link #MAX_FINISHED_SENTENCES}. They are forgotten here.
     */
    public List<List<String>> takeFinishedSentences() {
        List<List<String>> out = new ArrayList<List<String>>(finished);
        finished.clear();
        return out;
    }

    private void learnAt(List<String> before, List<String> sentence, int i) {
        if (!remember(place(before, sentence, i))) return;
        session.learn(i == 0 ? null : sentence.get(i - 1), sentence.get(i));
    }

    /** Adds a learnt place; false when it was remembered already. */
    private boolean remember(long place) {
        if (!learntPlaces.add(place)) return false;
        if (learntPlaces.size() > REMEMBERED_PLACES) {
            Iterator<Long> oldest = learntPlaces.iterator();
            oldest.next();
            oldest.remove();
        }
        return true;
    }

    /** A 64-bit FNV-1a hash of (previous sentence, sentence up to word i), word boundaries included. */
    private static long place(List<String> before, List<String> sentence, int i) {
        long h = 0xcbf29ce484222325L;
        for (String w : before) h = hash(h, w, 1);
        h = hash(h, "", 2);
        for (int j = 0; j <= i; j++) h = hash(h, sentence.get(j), 1);
        return h;
    }

    /** The place of a sentence's end: after all its words (the separator tells it from a word's place). */
    private static long end(List<String> before, List<String> sentence) {
        return (place(before, sentence, sentence.size() - 1) ^ 3) * 0x100000001b3L;
    }

    private static long hash(long h, String s, int separator) {
        for (int k = 0; k < s.length(); k++) h = (h ^ s.charAt(k)) * 0x100000001b3L;
        return (h ^ separator) * 0x100000001b3L;
    }

    private static boolean startsWith(List<String> list, List<String> prefix) {
        return list.size() >= prefix.size() && list.subList(0, prefix.size()).equals(prefix);
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
