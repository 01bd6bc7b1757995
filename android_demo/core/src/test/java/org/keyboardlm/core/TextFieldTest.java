package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;

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
        f.update("hello ");  // the cursor moves back, then forward again
        f.update("hello there ");
        assertEquals("the same word at the same place is not learnt twice", 2, h.clock());
        text = type(f, "hello ", "then ");  // the word replaced: the new one is learnt
        assertEquals(3, h.clock());
        assertEquals(1.0, h.count("then", "hello"), 0.0);
        text = type(f, text, "hello. hello ");  // the same word in a new sentence is new
        assertEquals(5, h.clock());
        assertEquals(2.0, h.count("hello", UserHistory.START), 0.01);
        assertEquals("a terminator finishes a word too", 1.0, h.count("hello", "then"), 0.01);
        for (String back : new String[] {"hello then hello. hello", "hello then hello. ", "hello then hello.", "hello then hello",
                "hello then hello.", "hello then hello. ", "hello then hello. hello "}) {
            f.update(back);  // backspaces over the terminator, then the same text again
        }
        assertEquals(5, h.clock());
        text = type(f, text, "wor");
        TextField.Edit e = TextField.pick(text, "world");  // a tapped suggestion finishes a word too
        text = text.substring(0, text.length() - e.deleteBefore) + e.insert;
        f.update(text);
        assertEquals(6, h.clock());
        assertEquals(1.0, h.count("world", "hello"), 0.0);
        f.update(text + "one two three four five six ");  // a paste
        assertEquals(6, h.clock());
        // A field opened with text: that text is not learnt, what is typed after it is.
        f.reset(true);
        f.update("words already in the field ");
        assertEquals(6, h.clock());
        type(f, "words already in the field ", "too ");
        assertEquals(7, h.clock());
        assertEquals(1.0, h.count("too", "field"), 0.0);
        // A password field learns nothing; a tapped suggestion there neither.
        f.reset(false);
        f.update("");
        type(f, "", "my secret words ");
        assertEquals(7, h.clock());
        assertEquals(0.0, h.count("secret"), 0.0);
        f.setLearning(true);
        type(f, "my secret words ", "now ");
        assertEquals(8, h.clock());
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

    @Test
    public void passwordNoSuggestionAndIncognitoFieldsAreNeverLearnt() {
        int text = 0x1;
        int number = 0x2;
        assertTrue(TextField.mayLearn(text, 0));
        assertTrue(TextField.mayLearn(text | 0x10, 0));  // a URI: variation 0x10 is a password only for numbers
        assertTrue(TextField.mayLearn(text | 0x4000 | 0x20000, 0x6));  // sentence caps, multi-line, action done
        assertTrue(TextField.mayLearn(number, 0));
        assertTrue(TextField.mayLearn(0x3, 0));  // phone
        assertFalse(TextField.mayLearn(text | 0x80, 0));  // TYPE_TEXT_VARIATION_PASSWORD
        assertFalse(TextField.mayLearn(text | 0x90, 0));  // TYPE_TEXT_VARIATION_VISIBLE_PASSWORD
        assertFalse(TextField.mayLearn(text | 0xe0, 0));  // TYPE_TEXT_VARIATION_WEB_PASSWORD
        assertFalse(TextField.mayLearn(number | 0x10, 0));  // TYPE_NUMBER_VARIATION_PASSWORD
        assertFalse(TextField.mayLearn(text | 0x80000, 0));  // TYPE_TEXT_FLAG_NO_SUGGESTIONS
        assertFalse(TextField.mayLearn(text, 0x1000000));  // IME_FLAG_NO_PERSONALIZED_LEARNING
        assertFalse(TextField.mayLearn(0, 0));  // TYPE_NULL
    }

    @Test
    public void passwordNoSuggestionAndRawFieldsGetNoStripAndNoModel() {
        int text = 0x1;
        int number = 0x2;
        assertTrue(TextField.mayPredict(text));
        assertTrue(TextField.mayPredict(text | 0x10));  // a URI: variation 0x10 is a password only for numbers
        assertTrue(TextField.mayPredict(text | 0x20));  // an email address
        assertTrue(TextField.mayPredict(text | 0x4000 | 0x20000));  // sentence caps, multi-line
        assertTrue(TextField.mayPredict(number));
        assertTrue(TextField.mayPredict(0x3));  // phone
        assertFalse(TextField.mayPredict(text | 0x80));  // TYPE_TEXT_VARIATION_PASSWORD
        assertFalse(TextField.mayPredict(text | 0x90));  // TYPE_TEXT_VARIATION_VISIBLE_PASSWORD
        assertFalse(TextField.mayPredict(text | 0xe0));  // TYPE_TEXT_VARIATION_WEB_PASSWORD
        assertFalse(TextField.mayPredict(number | 0x10));  // TYPE_NUMBER_VARIATION_PASSWORD
        assertFalse(TextField.mayPredict(text | 0x80000));  // TYPE_TEXT_FLAG_NO_SUGGESTIONS
        assertFalse(TextField.mayPredict(text | 0x80000 | 0x4000));  // ... with other flags
        assertFalse(TextField.mayPredict(0));  // TYPE_NULL
        // An incognito field is predicted in, but not learnt from; a field without prediction is never learnt from.
        assertFalse(TextField.mayLearn(text, 0x1000000));
        for (int type : new int[] {0, text, text | 0x80, text | 0x90, text | 0xe0, number, number | 0x10, text | 0x80000, 0x3}) {
            if (!TextField.mayPredict(type)) assertFalse(Integer.toHexString(type), TextField.mayLearn(type, 0));
            else assertTrue(Integer.toHexString(type), TextField.mayLearn(type, 0));
        }
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
