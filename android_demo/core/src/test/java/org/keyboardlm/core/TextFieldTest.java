package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.TreeSet;

import org.junit.Test;

/**
 * The keyboard's logic over a text field: which word is being typed, what a keystroke costs
 * in model steps, rewind on backspace, a tapped suggestion, and agreement with the
 * stateless predictor after any sequence of edits.
 */
public class TextFieldTest {
    static Predictor golden() throws Exception {
        return Predictor.load(StepEngineGoldenTest.modelFile("lstm_dynamic-range.tflite").getPath(),
                Collections.<String>emptyList());
    }

    @Test
    public void theWordBeingTypedEndsAtTheCursorAndKeepsApostrophes() {
        assertEquals("", TextField.wordBeingTyped(""));
        assertEquals("wor", TextField.wordBeingTyped("hello wor"));
        assertEquals("", TextField.wordBeingTyped("hello "));
        assertEquals("", TextField.wordBeingTyped("hello,"));
        assertEquals("don'", TextField.wordBeingTyped("I don'"));
        assertEquals("caf\u00e9", TextField.wordBeingTyped("un caf\u00e9"));
        assertEquals("", TextField.wordBeingTyped("ok \uD83D\uDE00"));
        assertEquals(2, TextField.backspaceLength("ok \uD83D\uDE00"));
        assertEquals(1, TextField.backspaceLength("ok"));
        assertEquals(0, TextField.backspaceLength(""));
    }

    @Test
    public void lettersCostNoStepAndASpaceCostsOne() throws Exception {
        TextField f = new TextField(golden());
        assertEquals(0, f.update("").steps);
        int total = 0;
        String typed = "";
        for (char c : "how are".toCharArray()) {
            typed += c;
            TextField.Strip s = f.update(typed);
            total += s.steps;
            assertEquals("after \"" + typed + "\"", c == ' ' ? 1 : 0, s.steps);
            assertEquals(c != ' ', s.completing);
        }
        TextField.Strip s = f.update("how are ");
        assertEquals(1, s.steps);
        assertEquals(2, total + s.steps);
        assertFalse(s.completing);
    }

    @Test
    public void backspaceIntoTheLastWordRewindsWithoutAStep() throws Exception {
        Predictor p = golden();
        TextField f = new TextField(p);
        List<Suggestion> completing = f.update("how are you").ranked;
        f.update("how are you ");
        TextField.Strip back = f.update("how are you");
        assertEquals(0, back.steps);
        assertTrue(back.completing);
        PredictorGoldenTest.sameSuggestions("after backspace", completing, back.ranked);
        TextField.Strip twoWords = f.update("how are");
        assertEquals(0, twoWords.steps);
        PredictorGoldenTest.sameSuggestions("two words back", p.complete("how", "are", 3), twoWords.ranked);
    }

    @Test
    public void theStripPutsTheMostLikelyWordInTheCenter() throws Exception {
        TextField.Strip s = new TextField(golden()).update("what is your ");
        String[] slots = s.slots();
        assertEquals(s.ranked.get(0).word, slots[1]);
        assertEquals(s.ranked.get(1).word, slots[0]);
        assertEquals(s.ranked.get(2).word, slots[2]);
        TextField.Strip none = new TextField(golden()).update("zzqx");
        assertTrue(none.ranked.isEmpty());
        assertArrayEquals(new String[3], none.slots());
    }

    @Test
    public void aTappedSuggestionReplacesTheWordBeingTyped() {
        TextField.Edit e = TextField.pick("how are yo", "you");
        assertEquals(2, e.deleteBefore);
        assertEquals("you ", e.insert);
        e = TextField.pick("how are ", "you");
        assertEquals(0, e.deleteBefore);
        assertEquals("you ", e.insert);
        e = TextField.pick("well,", "you");
        assertEquals(" you ", e.insert);
        e = TextField.pick("", "i");
        assertEquals("i ", e.insert);
        e = TextField.pick("Hello. Yo", "you");
        assertEquals(2, e.deleteBefore);
        assertEquals("You ", e.insert);
    }

    @Test
    public void aPastedNovelCostsAtMostSeqLenSteps() throws Exception {
        Predictor p = golden();
        TextField f = new TextField(p);
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < 50000; i++) b.append(i % 3 == 0 ? "you " : "are ");
        TextField.Strip s = f.update(b.toString());
        assertTrue(s.steps + " steps", s.steps <= p.model.seqLen + 1);
        PredictorGoldenTest.sameSuggestions("paste", p.suggest(b.toString(), 3), s.ranked);
    }

    /** Types {@code more} after {@code text} one character at a time; returns the new text. */
    static String type(TextField f, String text, String more) {
        for (char c : more.toCharArray()) {
            text += c;
            f.update(text);
        }
        return text;
    }

    @Test
    public void theHistoryLearnsWhatTypingFinishesOnceButNotTheFieldsOwnTextNorPastes() throws Exception {
        Predictor p = golden();
        UserHistory h = new UserHistory();
        TextField f = new TextField(p, h);
        f.update("");
        String text = type(f, "", "hello there ");
        assertEquals(2, h.clock());
        assertEquals(1.0, h.count("there", "hello"), 0.0);
        f.update("hello there");  // a backspace into the word, then the space again
        f.update("hello there ");
        f.update("hello ", false);  // the cursor moves back, then forward again (not the keyboard's edits)
        f.update("hello there ", false);
        assertEquals("the same word at the same place is not learnt twice", 2, h.clock());
        assertEquals(1.0, h.count("there", "hello"), 0.0);
        for (String back : new String[] {"hello there", "hello ther", "hello the", "hello th", "hello t", "hello "}) {
            f.update(back);  // backspaces over the word, before the field is left: it is unlearnt
        }
        assertEquals(0.0, h.count("there", "hello"), 0.0);
        text = type(f, "hello ", "then ");  // the word replaced: the new one is learnt
        assertEquals(3, h.clock());
        // After the cursor moves "hello" is no longer the keyboard's own typing: "then" follows it as a sentence start.
        assertEquals(1.0, h.count("then", UserHistory.START), 0.0);
        text = type(f, text, "hello. hello ");  // the same word in a new sentence is new
        assertEquals(5, h.clock());
        assertEquals(2.0, h.count("hello", UserHistory.START), 0.01);
        assertEquals("a terminator finishes a word too", 1.0, h.count("hello", "then"), 0.01);
        for (String back : new String[] {"hello then hello. hello", "hello then hello. ", "hello then hello.", "hello then hello",
                "hello then hello.", "hello then hello. ", "hello then hello. hello "}) {
            f.update(back);  // backspaces over the last word and the terminator, then the same text again
        }
        assertEquals("the deleted word was unlearnt, then learnt again", 6, h.clock());
        assertEquals(2.0, h.count("hello", UserHistory.START), 0.01);
        assertEquals(1.0, h.count("hello", "then"), 0.01);
        text = type(f, text, "wor");
        TextField.Edit e = TextField.pick(text, "world");  // a tapped suggestion finishes a word too
        text = text.substring(0, text.length() - e.deleteBefore) + e.insert;
        f.update(text);
        assertEquals(7, h.clock());
        assertEquals(1.0, h.count("world", "hello"), 0.0);
        f.update(text + "one two three four five six ");  // a paste
        assertEquals(7, h.clock());
        // A field opened with text: that text is not learnt, what is typed after it is.
        f.reset(true);
        f.update("words already in the field ");
        assertEquals(7, h.clock());
        type(f, "words already in the field ", "too ");
        assertEquals(8, h.clock());
        // After a word the keyboard did not type, as after nothing: the field's text never reaches the history.
        assertEquals(1.0, h.count("too", UserHistory.START), 0.0);
        assertEquals(0.0, h.count("too", "field"), 0.0);
        // A password field learns nothing; a tapped suggestion there neither.
        f.reset(false);
        f.update("");
        type(f, "", "my secret words ");
        assertEquals(8, h.clock());
        assertEquals(0.0, h.count("secret"), 0.0);
        f.setLearning(true);
        type(f, "my secret words ", "now ");
        assertEquals(9, h.clock());
    }

    @Test
    public void theStripRanksWordsTheUserTypesOutsideTheVocabulary() throws Exception {
        Predictor p = golden();
        assertFalse(p.vocab.contains("zorblaxen"));
        UserHistory h = new UserHistory();
        TextField f = new TextField(p, h);
        f.update("");
        String text = "";
        for (int i = 0; i < 4; i++) text = type(f, text, "see you at the zorblaxen. ");
        assertTrue(Arrays.asList(f.update(text + "see you at the ").slots()).contains("zorblaxen"));
        TextField.Strip completing = f.update(text + "see you at the zor");
        assertEquals("zorblaxen", completing.ranked.get(0).word);
        assertEquals("zorblaxen", completing.slots()[1]);
        assertFalse(Arrays.asList(new TextField(p).update("see you at the ").slots()).contains("zorblaxen"));
    }

    /**
     * What KeyboardService does with each field: {@link FieldPolicy} decides when the field
     * starts; a field it does not predict in never reaches the TextField (its text is not even
     * read); keys and taps are keyboard edits, pastes and the field's own text are not.
     */
    static final class Keyboard {
        final TextField field;
        boolean predicting;
        String text = "";
        TextField.Strip strip;

        Keyboard(TextField field) {
            this.field = field;
        }

        Keyboard open(int inputType, int imeOptions, String initialText) {
            predicting = FieldPolicy.mayPredict(inputType);
            text = initialText;
            field.reset(FieldPolicy.mayLearn(inputType, imeOptions));
            strip = predicting ? field.update(text, false) : null;
            return this;
        }

        Keyboard type(String more) {
            for (char c : more.toCharArray()) {
                text += c;
                if (predicting) strip = field.update(text, true);
            }
            return this;
        }

        Keyboard backspace() {
            text = text.substring(0, text.length() - TextField.backspaceLength(text));
            if (predicting) strip = field.update(text, true);
            return this;
        }

        Keyboard paste(String more) {
            text += more;
            if (predicting) strip = field.update(text, false);
            return this;
        }

        List<String> words() {
            List<String> out = new ArrayList<String>();
            if (strip != null) for (Suggestion s : strip.ranked) out.add(s.word);
            return out;
        }
    }

    static final int CHAT = FieldPolicy.TYPE_CLASS_TEXT | FieldPolicy.TYPE_TEXT_FLAG_CAP_SENTENCES
            | FieldPolicy.TYPE_TEXT_FLAG_MULTI_LINE | FieldPolicy.TYPE_TEXT_FLAG_AUTO_CORRECT;

    @Test
    public void aCardNumberATokenUrlAndAPastedPasswordAreNeitherLearntNorCompletedLater() throws Exception {
        Predictor p = golden();
        UserHistory h = new UserHistory();
        Keyboard k = new Keyboard(new TextField(p, h));
        k.open(FieldPolicy.TYPE_CLASS_NUMBER, 0, "").type("4111 1111 1111 1111 ").type("1234 ");
        k.open(FieldPolicy.TYPE_CLASS_TEXT | FieldPolicy.TYPE_TEXT_VARIATION_URI, 0, "")
                .type("https://bank.example/reset?token=8f2a ");
        k.open(CHAT, 0, "").type("the code is ").paste("hunter2").type(" ok. ").paste("hunter").type(" and ").type("hunter2 ");
        assertEquals("only the chat's typed words are learnt", new TreeSet<String>(Arrays.asList("the", "code", "is", "ok", "and")),
                new TreeSet<String>(h.distribution(null).keySet()));
        // Twice more, so a word typed twice would now be offered back.
        for (int i = 0; i < 2; i++) {
            k.open(FieldPolicy.TYPE_CLASS_TEXT | FieldPolicy.TYPE_TEXT_VARIATION_URI, 0, "")
                    .type("https://bank.example/reset?token=8f2a ");
            k.open(CHAT, 0, "").paste("hunter2").type(" ").paste("hunter").type(" ");
        }
        assertEquals(5, h.numWords());
        // A later ordinary field completes none of it.
        String[][] prefixes = {{"41", "4111"}, {"12", "1234"}, {"hun", "hunter"}, {"htt", "http"}, {"ban", "bank"}, {"tok", "token"}};
        for (String[] c : prefixes) {
            List<String> words = k.open(CHAT, 0, "").type("see ").type(c[0]).words();
            for (String w : words) assertFalse(c[0] + " -> " + words, w.startsWith(c[1]));
            for (Suggestion s : k.strip.ranked) {  // or is the letters typed, kept beside a correction
                assertTrue(c[0] + ": " + s.word + " comes from the model", s.id >= 0 || s.typed && s.word.equals(c[0]));
            }
        }
    }

    @Test
    public void wordsWithDigitsUrlsAndAddressesAreNotLearntEvenInAFieldThatLearns() throws Exception {
        UserHistory h = new UserHistory();
        Keyboard k = new Keyboard(new TextField(golden(), h)).open(CHAT, 0, "");
        k.type("card 4111 1111 1111 1111 exp 12/27 ").type("see https://bank.example/reset?token=abc now ")
                .type("mail bob@example.com or www.example.org ").type("my hunter2 is 2nd. ");
        assertEquals(new TreeSet<String>(Arrays.asList("card", "exp", "see", "now", "mail", "or", "my", "is")),
                new TreeSet<String>(h.distribution(null).keySet()));
        assertFalse(h.toJson(), h.toJson().matches("(?s).*(4111|hunter|bank|token|example|bob|www|2nd).*"));
        // The sentences are kept as typed, in memory only, for the weight choice (RecentSentences, never
        // written; the choice streams them over a copy of the history and keeps only the weight). A
        // refused chunk ends no sentence while it is typed ("https://bank." is not a sentence's end),
        // but the scanner's own sentence end inside a finished one ("bob@example.com") counts.
        assertEquals(Arrays.asList(
                Arrays.asList("card", "4111", "1111", "1111", "1111", "exp", "12", "27", "see", "https://bank.example/reset?token=abc",
                        "now", "mail", "bob", "example"),
                Arrays.asList("com", "or", "www.example.org", "my", "hunter2", "is", "2nd")), k.field.takeFinishedSentences());
    }

    @Test
    public void aPastedWordIsNotLearntEvenWhenATypedSpaceOrTerminatorFinishesIt() throws Exception {
        UserHistory h = new UserHistory();
        Keyboard k = new Keyboard(new TextField(golden(), h)).open(CHAT, 0, "");
        k.type("hello ").paste("zorblaxen").type(" there ").paste("quuxly").type(". ");
        assertEquals(0.0, h.count("zorblaxen"), 0.0);
        assertEquals(0.0, h.count("quuxly"), 0.0);
        // The typed word after it is learnt as after nothing: the pasted word is not even a previous word in the file.
        assertEquals(1.0, h.count("there", UserHistory.START), 0.0);
        assertFalse(h.toJson(), h.toJson().contains("zorblaxen"));
        assertTrue(k.field.takeFinishedSentences().isEmpty());
        // A backspace into the pasted word and a retyped letter: still not all typed.
        k.paste(" zorbla").backspace().type("x ");
        assertEquals(0.0, h.count("zorblax"), 0.0);
        // A tapped suggestion is the keyboard's own.
        k.type("wor");
        TextField.Edit e = TextField.pick(k.text, "world");
        k.text = k.text.substring(0, k.text.length() - e.deleteBefore);
        k.type(e.insert);
        assertEquals(1.0, h.count("world"), 0.0);
    }

    @Test
    public void aWordOutsideTheVocabularyIsOfferedOnlyAfterTwoTypingsAndNotOnALockedDevice() throws Exception {
        Predictor p = golden();
        assertFalse(p.vocab.contains("zorblaxen"));
        UserHistory h = new UserHistory();
        Keyboard k = new Keyboard(new TextField(p, h)).open(CHAT, 0, "");
        k.type("see you at the zorblaxen. ");
        assertEquals(1.0, h.count("zorblaxen"), 0.0);
        assertFalse("typed once", k.type("see you at the zor").words().contains("zorblaxen"));
        k.type("blaxen. ");
        assertTrue("typed twice", k.type("see you at the zor").words().contains("zorblaxen"));
        k.field.setDeviceLocked(true);
        List<String> locked = k.type("b").words();
        assertFalse("locked", locked.contains("zorblaxen"));
        for (Suggestion s : k.strip.ranked) assertTrue(s.word, s.id >= 0);
        k.field.setDeviceLocked(false);
        assertTrue("unlocked", k.type("l").words().contains("zorblaxen"));
        // A hidden word's place goes to the next best: as many suggestions as without the history.
        k.field.setDeviceLocked(true);
        assertEquals(new TextField(p).update("see you at the ").ranked.size(), k.type("axen, see you at the ").strip.ranked.size());
    }

    @Test
    public void aFieldOpenedWithTextDoesNotLearnItAndTheNextFieldStartsClean() throws Exception {
        UserHistory h = new UserHistory();
        Keyboard k = new Keyboard(new TextField(golden(), h));
        k.open(CHAT, 0, "quoted reply text ").type("yes ");
        assertEquals(1, h.clock());
        // An incognito field and a one-line field without auto-correct (a search box) learn nothing.
        k.open(CHAT, FieldPolicy.IME_FLAG_NO_PERSONALIZED_LEARNING, "").type("private words here ");
        k.open(FieldPolicy.TYPE_CLASS_TEXT, 0, "").type("search words here ");
        assertEquals(1, h.clock());
        assertTrue("but they are predicted in", k.strip != null);
    }

    @Test
    public void theTypedTailFollowsTheKeyboardThroughAFullWindowAndEndsAtAnyOtherChange() {
        int window = 1000;
        StringBuilder field = new StringBuilder();
        for (int i = 0; i < 300; i++) field.append("word").append(i % 7).append(' ');  // 1,800 characters
        TypedTail t = new TypedTail();
        t.next(tail(field, window), false);
        assertEquals(0, t.length());
        for (char c : "typed by the keyboard ".toCharArray()) {
            field.append(c);
            t.next(tail(field, window), true);
        }
        assertEquals(22, t.length());
        field.setLength(field.length() - 9);  // backspaces
        t.next(tail(field, window), true);
        assertEquals(13, t.length());
        field.append("keys ");
        t.next(tail(field, window), true);
        assertEquals(18, t.length());
        field.append("pasted");
        t.next(tail(field, window), false);
        assertEquals(0, t.length());
        field.append(" x");
        t.next(tail(field, window), true);
        assertEquals(2, t.length());
        field.setLength(field.length() - 1);  // the cursor moved back one
        t.next(tail(field, window), false);
        assertEquals(1, t.length());
        // A short field: the plain edit at the end.
        t.reset();
        assertEquals(0, t.next("abab", true));
        assertEquals(2, t.next("ababab", true));
        assertEquals(1, t.next("ababa", true));
        assertEquals(0, t.next("ab", true));
        assertEquals(0, t.next("ab ab ab ab", false));
    }

    private static String tail(StringBuilder b, int window) {
        return b.substring(Math.max(0, b.length() - window));
    }

    @Test
    public void scanningChunkByChunkGivesTheItemsOfTheWholeScan() {
        String[] pieces = {"a", "b", "\u03a3", "\u0301", " ", " ", "\t", "\n", "\u00a0", "\u1680", "\u2028", "\u3000", ".", "!",
            "?", ",", "'", "@", "/", ":", "1", "2", "http://", "www.", "\uD83D\uDE00", "\u200d", "\ufe0f", "\u001c", "\u0085"};
        Random r = new Random(1);
        for (int i = 0; i < 20000; i++) {
            StringBuilder b = new StringBuilder();
            int n = r.nextInt(12);
            for (int j = 0; j < n; j++) b.append(pieces[r.nextInt(pieces.length)]);
            String text = b.toString();
            List<TextSpec.Item> items = new ArrayList<TextSpec.Item>();
            TextField.scanChunks(text, 0, items, new ArrayList<Integer>());
            List<TextSpec.Item> whole = TextSpec.scan(text);
            assertEquals(text, describe(whole), describe(items));
        }
    }

    private static String describe(List<TextSpec.Item> items) {
        StringBuilder b = new StringBuilder();
        for (TextSpec.Item item : items) b.append(item.end ? "|" : "w").append(item.text).append('\u0000');
        return b.toString();
    }

    /** Any sequence of keystrokes, backspaces, taps and cursor jumps ends where the stateless predictor is. */
    @Test
    public void agreesWithTheStatelessPredictorAfterRandomEdits() throws Exception {
        Predictor p = golden();
        TextField f = new TextField(p);
        Random r = new Random(0);
        String[] pieces = {"a", "e", "o", "t", "h", "y", "u", " ", " ", ". ", ", ", "'", "\uD83D\uDE00", "you ", "are "};
        String text = "";
        int steps = 0;
        for (int i = 0; i < 3000; i++) {
            int action = r.nextInt(10);
            if (action < 6) {
                text += pieces[r.nextInt(pieces.length)];
            } else if (action < 8) {
                text = text.substring(0, text.length() - TextField.backspaceLength(text));
            } else if (action < 9) {
                TextField.Strip now = f.update(text);
                if (!now.ranked.isEmpty()) {
                    TextField.Edit e = TextField.pick(text, now.ranked.get(r.nextInt(now.ranked.size())).word);
                    text = text.substring(0, text.length() - e.deleteBefore) + e.insert;
                }
            } else {
                text = text.substring(0, r.nextInt(text.length() + 1));  // the cursor moved back
                if (Character.isLowSurrogate(text.isEmpty() ? 'x' : text.charAt(text.length() - 1))) {
                    text = text.substring(0, text.length() - 2);
                }
            }
            TextField.Strip s = f.update(text);
            steps += s.steps;
            String typing = TextField.wordBeingTyped(text);
            String context = text.substring(0, text.length() - typing.length());
            List<Suggestion> want = typing.isEmpty() ? p.suggest(context, 3) : p.complete(context, typing, 3);
            PredictorGoldenTest.sameSuggestions("edit " + i + " \"" + text + "\"", want, s.ranked);
        }
        System.out.println("TextField: 3000 random edits agree with Predictor.suggest/complete, " + steps + " model steps");
    }
}
