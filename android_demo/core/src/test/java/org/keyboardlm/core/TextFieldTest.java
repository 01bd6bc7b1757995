package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

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
