package org.keyboardlm.core;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The keyboard's view of one text field: from the text before the cursor to a
 * {@link Session} and the 3-slot strip. Everything the Android keyboard decides lives here,
 * so the InputMethodService only reads the editor, calls {@link #update} off the UI thread
 * and shows the {@link Strip}. Not thread-safe: one background thread owns it (only
 * {@link #setDeviceLocked} may be called from another). Which fields it is used in, and which
 * of them learn, is {@link FieldPolicy}'s decision.
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
 * more words, and nothing in a field reset with {@code learn} false (see
 * {@link FieldPolicy#mayLearn}). A word is final only when the field is left ({@link #reset}):
 * until then, a word this field learnt that the keyboard's own deletion takes out of the text
 * (backspacing over it, or into it and changing it) is unlearnt, so typing {@code printer},
 * backspacing to {@code print} and typing {@code ed} leaves {@code printed} learnt, not both
 * (see {@link #update(String, boolean)}); {@link #unlearn} takes a word back when the keyboard
 * asks (a reverted suggestion). Only the keyboard's own typing
 * is learnt: a word is learnt only when all of its whitespace-delimited chunk lies in the text
 * the keyboard itself typed ({@link #update(String, boolean)}, {@link TypedTail}), so a paste
 * or an editor's change is never learnt, not even when a typed space finishes a pasted word.
 * Nor is any word of a chunk {@link FieldPolicy#mayLearnChunk} refuses (digits, e-mail
 * addresses, URLs), and a chunk is judged when it is finished (see {@link #scanChunks}): a
 * word followed by a comma is learnt when the space comes, a terminator finishes it at once.
 *
 * <p>Words only the history knows (outside the model's vocabulary) reach the strip only when
 * {@link FieldPolicy#mayShowHistoryWord} allows it: typed at least twice. The places they leave
 * go to the next best words.
 *
 * <p>The lock screen: while the device is locked ({@link #setDeviceLocked};
 * {@link FieldPolicy#mayUseHistory}) the field ranks with a session that has no history at all:
 * the strip is the model's alone (no word the history knows is shown or moved up), and nothing
 * is learnt or unlearnt. The switch, either way, costs one replay of the sentence's chunk (at
 * most seqLen steps), on the next update. Text typed while locked is treated as not typed by
 * the keyboard ({@link TypedTail}): after the unlock none of it is learnt, not even as the
 * previous word of a word typed then.
 *
 * <p>Finished sentences: in a field that learns, a sentence that a typed terminator ends (an
 * update that could learn its last words, as above) is kept, once per place, for
 * {@link #takeFinishedSentences()}: the keyboard's newest text, on which
 * {@link Session#chooseHistoryWeight} chooses the user's history weight (see
 * {@link RecentSentences}). Never kept: what learning leaves out (a field that does not learn,
 * the text a field holds when it is opened, pastes, a sentence with a word the keyboard did
 * not type), and text with no terminator after it. Words the policy refuses are kept in such a
 * sentence: it stays in memory, for the weight choice only.
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
    /** The user's history (null: none), and the session that ranks and learns with it. */
    private final UserHistory history;
    private final Session withHistory;
    /** The session in use: {@link #withHistory}, or while locked one without a history (made then, dropped after). */
    private Session session;
    /** Whether {@link #session} is the lock screen's. */
    private boolean usingLocked;
    /** Whether the field learns (the last {@link #reset(boolean)} or {@link #setLearning}); never while locked. */
    private boolean learn;
    /** The words of the current sentence the session has committed. */
    private final List<String> committed = new ArrayList<String>();
    /**
     * The words of the finished text's last sentence at the last update: what learning compares
     * with ({@link #committed} without a chunk still being typed).
     */
    private List<String> lastFinished = new ArrayList<String>();
    /** Hashes of the places learnt lately (previous sentence, sentence up to the word), oldest first. */
    private final LinkedHashSet<Long> learntPlaces = new LinkedHashSet<Long>();
    /** Sentences a typed terminator finished in this field while it learnt, oldest first, not yet taken. */
    private final ArrayDeque<List<String>> finished = new ArrayDeque<List<String>>();
    /** The words the current (or last) update learnt. */
    private final List<Learnt> learntNow = new ArrayList<Learnt>();
    /** Words this field learnt since its reset, by place: unlearnt if the keyboard deletes them (oldest first, bounded). */
    private final LinkedHashMap<Long, Learnt> notFinal = new LinkedHashMap<Long, Learnt>();
    /** The last update's text, its items (before the word being typed) and word being typed; null after a reset. */
    private String lastText;
    private List<TextSpec.Item> lastItems;
    private String lastTyping;
    /** True until the first update after a reset: the text the field already holds is not learnt. */
    private boolean opened = true;
    private int stepsRun;
    /** The end of the text the keyboard itself typed: only words inside it are learnt. */
    private final TypedTail typed = new TypedTail();
    /** Set from the service's thread: while true the strip ignores the history and nothing is learnt. */
    private volatile boolean deviceLocked;

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
        this.history = history;
        this.learn = history != null;
        this.withHistory = predictor.session(history, learn);
        this.session = withHistory;
    }

    /** A new (or cleared) field; learns as the previous one did. */
    public void reset() {
        reset(learn);
    }

    /** A new field; {@code learn} false: nothing typed in it is learnt (a password field). */
    public void reset(boolean learn) {
        this.learn = learn;
        withHistory.setLearning(learn);
        useSessionFor(deviceLocked);
        session.reset();
        committed.clear();
        lastFinished = new ArrayList<String>();
        learntPlaces.clear();
        notFinal.clear();  // the field is left: what it learnt is final
        lastText = null;
        lastItems = null;
        lastTyping = null;
        typed.reset();
        chunks.clear();
        opened = true;
    }

    /**
     * True while the device is locked (the service sets it from {@code KeyguardManager}): the
     * strip is then the model's alone and nothing is learnt (see the class comment), from the
     * next update on. Safe to call from any thread.
     */
    public void setDeviceLocked(boolean locked) {
        deviceLocked = locked;
    }

    /**
     * Ranking thread: use the session the lock state calls for; on a switch the new one starts
     * from the sentence's start (the next update replays its chunk: {@link #committed} cleared).
     */
    private void useSessionFor(boolean locked) {
        boolean lockScreen = history != null && !FieldPolicy.mayUseHistory(locked);
        if (lockScreen == usingLocked) return;
        usingLocked = lockScreen;
        session = lockScreen ? predictor.session(null, false) : withHistory;
        session.reset();
        committed.clear();
    }

    public boolean deviceLocked() {
        return deviceLocked;
    }

    /** Learn (or not) from now on, in the same field (its type changed); never while the device is locked. */
    public void setLearning(boolean learn) {
        this.learn = learn;
        withHistory.setLearning(learn);
    }

    /**
     * The session this field drives (read-only use: suggestions, counters): while the device is
     * locked, one without a history.
     */
    public Session session() {
        return session;
    }

    /**
     * {@link #update(String, boolean)} after the keyboard's own edit (a key, a tapped
     * suggestion): {@code update(textBeforeCursor, true)}.
     */
    public Strip update(String textBeforeCursor) {
        return update(textBeforeCursor, true);
    }

    /**
     * Bring the session to {@code textBeforeCursor} and rank the strip: completions of the word
     * being typed, or next-word suggestions after a space or punctuation. {@code byKeyboard}:
     * true when the keyboard's own keys or taps, and nothing else, changed the text since the
     * last update; false for anything else (a paste, a cursor move, the editor's own change, a
     * field opened), whose text is then never learnt.
     */
    public Strip update(String textBeforeCursor, boolean byKeyboard) {
        if (textBeforeCursor == null) throw new IllegalArgumentException("textBeforeCursor must not be null");
        learntNow.clear();
        useSessionFor(deviceLocked);
        // Text typed on the lock screen never joins the typed tail: not learnt, nor a previous word, after the unlock.
        typed.next(textBeforeCursor, byKeyboard && !usingLocked);
        String typing = wordBeingTyped(textBeforeCursor);
        // scanChunks(text before the word being typed, typed.start()), with its chunks reused
        // from the last update, and only its tail flattened: see splitChunks and tailItems.
        int finishedChunks = splitChunks(textBeforeCursor, textBeforeCursor.length() - typing.length(), typed.start());
        List<TextSpec.Item> items = new ArrayList<TextSpec.Item>();
        List<Integer> kinds = new ArrayList<Integer>();
        int finishedItems = tailItems(finishedChunks, typed.start(), items, kinds);
        int lastEnd = -1;
        for (int i = 0; i < items.size(); i++) if (items.get(i).end) lastEnd = i;
        List<TextSpec.Item> sentence = items.subList(lastEnd + 1, items.size());
        if (byKeyboard && !usingLocked && lastText != null && textBeforeCursor.length() < lastText.length() && !notFinal.isEmpty()) {
            unlearnDeleted(items, typing);
        }
        lastText = textBeforeCursor;
        lastItems = items;
        lastTyping = typing;
        // A chunk still being typed (no space after it yet) is judged, and learnt, once it is finished.
        learn(items.subList(0, finishedItems), kinds.subList(0, finishedItems));
        stepsRun = 0;
        follow(sentence);
        return new Strip(rank(typing), !typing.isEmpty() && !Session.strip(TextSpec.normalize(typing)).isEmpty(), typing, stepsRun);
    }

    /**
     * One whitespace-delimited chunk of the text, scanned once: {@link TextSpec#scan} of it and
     * what {@link #scanChunks} asks of it, all functions of its text alone, so an update reuses
     * the chunks of the last one that the text still holds (see {@link #splitChunks}).
     */
    private static final class Chunk {
        final String text;
        final List<TextSpec.Item> items;
        final boolean mayLearn;
        final boolean endsWhitespace;
        final boolean endsTerminator;

        Chunk(String text) {
            this.text = text;
            this.items = TextSpec.scan(text);
            this.mayLearn = FieldPolicy.mayLearnChunk(text);
            String normalized = TextSpec.normalize(text);
            int last = normalized.isEmpty() ? ' ' : normalized.codePointBefore(normalized.length());
            this.endsWhitespace = Character.isWhitespace(last);
            this.endsTerminator = isTerminator(last);
        }

        int kind(int start, int typedFrom) {
            return start >= typedFrom ? (mayLearn ? TYPED | LEARNABLE : TYPED) : 0;
        }
    }

    /** How far ahead {@link #splitChunks} looks among the last update's chunks for one with the same text. */
    private static final int CHUNK_LOOKAHEAD = 4;
    /** The chunks of the text before the word being typed at the last update, in order. */
    private ArrayList<Chunk> chunks = new ArrayList<Chunk>();
    /** The list the next update fills (swapped with {@link #chunks}; empty between updates). */
    private ArrayList<Chunk> nextChunks = new ArrayList<Chunk>();
    /** Where each of {@link #chunks} starts in that text. */
    private int[] chunkStarts = new int[64];

    /**
     * Splits {@code text}'s first {@code n} chars into whitespace-delimited chunks as
     * {@link #scanChunks} does, into {@link #chunks} and {@link #chunkStarts}; a chunk whose text
     * one of the last update's chunks has (looked for in order, so a typed letter, a window that
     * moved on, an edit in the middle all find theirs) is that chunk, not scanned again. So a
     * key allocates nothing per chunk of the text, only for the chunks it changed. Returns how
     * many chunks are finished (as {@link #scanChunks}: all but a last one that no whitespace
     * follows yet, unless it ends with a terminator and its kind is {@link #LEARNABLE}).
     */
    private int splitChunks(String text, int n, int typedFrom) {
        ArrayList<Chunk> old = chunks;
        chunks = nextChunks;
        nextChunks = old;
        int next = 0;
        int i = 0;
        boolean followed = false;
        while (i < n) {
            while (i < n && isAsciiSpace(text.charAt(i))) i++;
            int start = i;
            while (i < n && !isAsciiSpace(text.charAt(i))) i++;
            if (i == start) break;
            int length = i - start;
            Chunk chunk = null;
            for (int k = next; k < old.size() && k < next + CHUNK_LOOKAHEAD; k++) {
                Chunk o = old.get(k);
                if (o.text.length() == length && text.regionMatches(start, o.text, 0, length)) {
                    chunk = o;
                    next = k + 1;
                    break;
                }
            }
            if (chunk == null) chunk = new Chunk(text.substring(start, i));
            int count = chunks.size();
            if (count == chunkStarts.length) chunkStarts = Arrays.copyOf(chunkStarts, 2 * count);
            chunkStarts[count] = start;
            chunks.add(chunk);
            followed = i < n;
        }
        old.clear();
        int count = chunks.size();
        if (count == 0) return 0;
        Chunk last = chunks.get(count - 1);
        boolean lastFinished = followed || last.endsWhitespace
                || ((last.kind(chunkStarts[count - 1], typedFrom) & LEARNABLE) != 0 && last.endsTerminator);
        return lastFinished ? count : count - 1;
    }

    /**
     * The end of what {@link #scanChunks} gives for {@link #chunks} (items and kinds), from
     * where {@link #update} needs it: the last three sentences of the finished chunks' items
     * (all that {@link #learn} reads: it learns in the last sentence and the one before, and
     * hashes places with the one before that) and the whole last sentence of all the items
     * (what {@link #follow} follows, which starts no earlier). Returns how many of the items
     * belong to the first {@code finishedChunks} chunks.
     */
    private int tailItems(int finishedChunks, int typedFrom, List<TextSpec.Item> items, List<Integer> kinds) {
        // The first chunk and item to give: after the third-last sentence end of the finished items.
        int fromChunk = 0;
        int fromItem = 0;
        int ends = 0;
        search:
        for (int c = finishedChunks - 1; c >= 0; c--) {
            List<TextSpec.Item> chunkItems = chunks.get(c).items;
            for (int k = chunkItems.size() - 1; k >= 0; k--) {
                if (chunkItems.get(k).end && ++ends == 3) {
                    fromChunk = c;
                    fromItem = k + 1;
                    break search;
                }
            }
        }
        int finishedItems = 0;
        for (int c = fromChunk; c < chunks.size(); c++) {
            Chunk chunk = chunks.get(c);
            int kind = chunk.kind(chunkStarts[c], typedFrom);
            for (int k = c == fromChunk ? fromItem : 0; k < chunk.items.size(); k++) {
                items.add(chunk.items.get(k));
                kinds.add(kind);
            }
            if (c < finishedChunks) finishedItems = items.size();
        }
        return finishedItems;
    }

    /**
     * The {@link #SLOTS} best suggestions or completions that {@link FieldPolicy#mayShowHistoryWord}
     * lets through: a hidden word's place goes to the next best, so more are ranked until
     * enough are left or there are no more.
     */
    private List<Suggestion> rank(String typing) {
        UserHistory history = session.userHistory();  // null while locked: the model's strip alone
        for (int k = SLOTS; ; k *= 2) {
            List<Suggestion> all = typing.isEmpty() ? session.suggestions(k) : session.complete(typing, k);
            if (history == null) return all;
            List<Suggestion> shown = new ArrayList<Suggestion>(SLOTS);
            Suggestion typedWord = null;  // the letters as typed, kept beside a correction: the user's, not the history's
            for (Suggestion s : all) {
                if (s.typed) {
                    typedWord = s;
                    continue;
                }
                if (s.id < 0 && !FieldPolicy.mayShowHistoryWord(history.count(s.word), false)) continue;
                shown.add(s);
                if (shown.size() == SLOTS) break;
            }
            boolean corrected = false;
            for (Suggestion s : shown) if (typedWord != null && !s.word.startsWith(typedWord.word)) corrected = true;
            if (corrected) shown.add(Math.min(shown.size(), SLOTS - 1), typedWord);
            if (shown.size() > SLOTS) shown.remove(SLOTS);
            if (shown.size() == SLOTS || all.size() < k) return shown;
        }
    }

    /** A word's kind bits (see {@link #scanChunks}): the keyboard typed all of its chunk. */
    static final int TYPED = 1;
    /** ... and {@link FieldPolicy#mayLearnChunk} accepts the chunk: the word may be learnt. */
    static final int LEARNABLE = 2;

    /**
     * {@link TextSpec#scan} of {@code text}, one whitespace-delimited chunk at a time (the same
     * items: no token or terminator run holds ASCII whitespace, and normalization does not
     * reach across it), with each item's kind: {@link #TYPED} when its chunk starts at or after
     * {@code typedFrom} (the keyboard typed all of it), plus {@link #LEARNABLE} when
     * {@link FieldPolicy#mayLearnChunk} accepts the chunk too. Returns how many items belong to
     * finished chunks: all but those of a last chunk that no whitespace follows yet, unless it
     * ends with a terminator ({@code .} {@code !} {@code ?} {@code …} {@code 。}), which ends its
     * sentence, and the policy accepts it. A chunk such as {@code https:} or {@code bob@} may
     * still grow into one the policy refuses, so it is judged when it is finished; and a
     * refused one such as {@code https://bank.} is a URL being typed, not a sentence's end.
     */
    static int scanChunks(String text, int typedFrom, List<TextSpec.Item> items, List<Integer> kinds) {
        int i = 0;
        int n = text.length();
        int finished = 0;
        while (i < n) {
            while (i < n && isAsciiSpace(text.charAt(i))) i++;
            int start = i;
            while (i < n && !isAsciiSpace(text.charAt(i))) i++;
            if (i == start) break;
            String chunk = text.substring(start, i);
            int kind = start >= typedFrom ? (FieldPolicy.mayLearnChunk(chunk) ? TYPED | LEARNABLE : TYPED) : 0;
            for (TextSpec.Item item : TextSpec.scan(chunk)) {
                items.add(item);
                kinds.add(kind);
            }
            String normalized = TextSpec.normalize(chunk);
            int last = normalized.isEmpty() ? ' ' : normalized.codePointBefore(normalized.length());
            if (i < n || Character.isWhitespace(last) || ((kind & LEARNABLE) != 0 && isTerminator(last))) {
                finished = items.size();
            }
        }
        return finished;
    }

    /** A sentence terminator of the text spec ({@code .} {@code !} {@code ?} {@code …} {@code 。}). */
    private static boolean isTerminator(int cp) {
        List<TextSpec.Item> items = TextSpec.scan(new String(Character.toChars(cp)));
        return items.size() == 1 && items.get(0).end;
    }

    /** The whitespace TextSpec's URLs stop at (space, tab, line feed, CR, form feed, vertical tab). */
    private static boolean isAsciiSpace(char c) {
        return c == ' ' || (c >= '\t' && c <= '\r');
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
     * Learn the words this update finished (see the class comment): {@code items} are the
     * finished chunks' items and {@code kinds} their {@link #TYPED}/{@link #LEARNABLE} bits;
     * what is new is found against {@link #lastFinished}.
     */
    private void learn(List<TextSpec.Item> items, List<Integer> kinds) {
        // The finished text's sentences; the last one (maybe empty) is being typed.
        List<List<String>> sentences = new ArrayList<List<String>>();
        List<String> current = new ArrayList<String>();
        // Per sentence, each word's kind (TYPED, LEARNABLE).
        List<List<Integer>> sentenceKinds = new ArrayList<List<Integer>>();
        List<Integer> currentKinds = new ArrayList<Integer>();
        for (int k = 0; k < items.size(); k++) {
            TextSpec.Item item = items.get(k);
            if (item.end) {
                sentences.add(current);
                sentenceKinds.add(currentKinds);
                current = new ArrayList<String>();
                currentKinds = new ArrayList<Integer>();
            } else {
                current.add(item.text);
                currentKinds.add(kinds.get(k));
            }
        }
        sentences.add(current);
        sentenceKinds.add(currentKinds);
        List<String> wordsBefore = lastFinished;
        lastFinished = current;
        if (session.userHistory() == null) {
            opened = false;
            return;
        }
        int n = sentences.size();
        List<String> empty = Collections.<String>emptyList();
        List<Integer> none = Collections.<Integer>emptyList();
        List<String> sentence = sentences.get(n - 1);
        List<String> before = n >= 2 ? sentences.get(n - 2) : empty;
        List<String> beforeBefore = n >= 3 ? sentences.get(n - 3) : empty;
        List<Integer> sentenceMay = sentenceKinds.get(n - 1);
        List<Integer> beforeMay = n >= 2 ? sentenceKinds.get(n - 2) : none;
        if (opened) {
            // The field's own text counts as learnt: retyping it is not new, nor ending its sentence.
            if (n >= 2 && !before.isEmpty()) remember(end(beforeBefore, before));
            for (int i = 0; i < before.size(); i++) remember(place(beforeBefore, before, i));
            for (int i = 0; i < sentence.size(); i++) remember(place(before, sentence, i));
            opened = false;
            return;
        }
        if (!session.learning()) return;
        int added = sentence.size() - wordsBefore.size();
        if (startsWith(sentence, wordsBefore) && added >= 1 && added <= MAX_WORDS_LEARNT_AT_ONCE) {
            for (int i = wordsBefore.size(); i < sentence.size(); i++) learnAt(before, sentence, i, sentenceMay);
        } else if (n >= 2 && startsWith(before, wordsBefore) && before.size() - wordsBefore.size() <= MAX_WORDS_LEARNT_AT_ONCE
                && sentence.size() <= MAX_WORDS_LEARNT_AT_ONCE) {
            // A terminator ended the sentence being typed (and maybe a new one began).
            for (int i = wordsBefore.size(); i < before.size(); i++) learnAt(beforeBefore, before, i, beforeMay);
            for (int i = 0; i < sentence.size(); i++) learnAt(before, sentence, i, sentenceMay);
            // Kept only when the keyboard typed all of it (the user's own typing; in memory only,
            // for the weight choice, so words the history may not learn are kept here too).
            if (!before.isEmpty() && remember(end(beforeBefore, before)) && allTyped(beforeMay)) {
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

    /**
     * Learn word i of {@code sentence} unless its kind lacks {@link #LEARNABLE} (its place is then
     * not remembered: typed later, it is new). After a word that may not be learnt it is learnt
     * as after nothing (a sentence start), so that word never reaches the history, not even as a
     * previous word.
     */
    private void learnAt(List<String> before, List<String> sentence, int i, List<Integer> kinds) {
        long place = place(before, sentence, i);
        if ((kinds.get(i) & LEARNABLE) == 0 || !remember(place)) return;
        String prev = i == 0 || (kinds.get(i - 1) & LEARNABLE) == 0 ? null : sentence.get(i - 1);
        if (session.learn(prev, sentence.get(i))) {
            Learnt learnt = new Learnt(prev, sentence.get(i), history.clock(), history.epoch(), place);
            learntNow.add(learnt);
            notFinal.put(place, learnt);
            if (notFinal.size() > REMEMBERED_PLACES) {
                Iterator<Long> oldest = notFinal.keySet().iterator();
                oldest.next();
                oldest.remove();
            }
        }
    }

    /**
     * A keyboard edit shortened the text (a backspace, a revert): every word this field learnt
     * (and has not left) whose place the last update's text held and this one's does not is
     * unlearnt. A place is held by the words of the last two sentences before the cursor,
     * the word being typed included, so backspacing over a word's space or its terminator (the
     * word is then being typed again, unchanged) keeps it, and backspacing into it (it becomes
     * {@code printe}) or over all of it takes it out.
     */
    private void unlearnDeleted(List<TextSpec.Item> items, String typing) {
        Set<Long> now = places(items, typing);
        for (long place : places(lastItems, lastTyping)) {
            if (now.contains(place)) continue;
            Learnt learnt = notFinal.get(place);
            if (learnt != null) unlearn(learnt);
        }
    }

    /** The places of the words of the last two sentences of {@code items} then {@code typing}'s tokens. */
    private static Set<Long> places(List<TextSpec.Item> items, String typing) {
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
        if (!typing.isEmpty()) current.addAll(TextSpec.tokenize(typing));
        sentences.add(current);
        int n = sentences.size();
        List<String> empty = Collections.<String>emptyList();
        Set<Long> out = new HashSet<Long>();
        for (int k = Math.max(0, n - 2); k < n; k++) {
            List<String> before = k >= 1 ? sentences.get(k - 1) : empty;
            List<String> sentence = sentences.get(k);
            for (int i = 0; i < sentence.size(); i++) out.add(place(before, sentence, i));
        }
        return out;
    }

    /**
     * The words the last {@link #update} learnt, in order (empty when it learnt none): what
     * {@link #unlearn} takes back when the user reverts a tapped suggestion.
     */
    public List<Learnt> learntByLastUpdate() {
        return Collections.unmodifiableList(new ArrayList<Learnt>(learntNow));
    }

    /**
     * Take back a word an update of this field learnt ({@link #learntByLastUpdate}): the
     * history unlearns it ({@link UserHistory#unlearnWord}) and the field forgets its place, so
     * typing it there again is learnt as new. Returns false when the history no longer held it.
     */
    public boolean unlearn(Learnt learnt) {
        if (learnt.unlearnt) return false;  // taken back already (deleted, then reverted)
        learnt.unlearnt = true;
        notFinal.remove(learnt.place);
        learntPlaces.remove(learnt.place);
        // Cleared or replaced since (the settings screen): what it learnt is gone already.
        return history != null && history.epoch() == learnt.epoch && history.unlearnWord(learnt.prev, learnt.word, learnt.clock);
    }

    /** One word an update learnt: the previous word (null: a sentence start), the word, the history's clock after it. */
    public static final class Learnt {
        public final String prev;
        public final String word;
        final long clock;
        /** The history's {@link UserHistory#epoch()} when it was learnt. */
        final long epoch;
        final long place;
        /** Ranking thread: set once it was unlearnt, so it is never taken back twice. */
        boolean unlearnt;

        Learnt(String prev, String word, long clock, long epoch, long place) {
            this.prev = prev;
            this.word = word;
            this.clock = clock;
            this.epoch = epoch;
            this.place = place;
        }

        @Override
        public String toString() {
            return (prev == null ? UserHistory.START : prev) + " " + word;
        }
    }

    private static boolean allTyped(List<Integer> kinds) {
        for (int kind : kinds) if ((kind & TYPED) == 0) return false;
        return true;
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
