package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

import org.junit.Test;

/**
 * The keyboard's own choice of the user's history weight: {@link TextField} keeps the sentences
 * a typed terminator finishes in a field that learns (once, never from a field that does not
 * learn, nor the field's own text or a paste), and {@link RecentSentences} keeps them within
 * its bounds and chooses on them over the history as it was before they were learnt, not on
 * the history that already learnt them.
 */
public class RecentSentencesTest {
    static List<String> words(String text) {
        return Arrays.asList(text.split(" "));
    }

    @Test
    public void aFieldKeepsTheSentencesATypedTerminatorFinishesOnceAndOnlyWhereItLearns() throws Exception {
        Predictor p = TextFieldTest.golden();
        TextField f = new TextField(p, new UserHistory());
        f.update("");
        String text = TextFieldTest.type(f, "", "Hello there. How are you? fine");
        assertEquals(Arrays.asList(words("hello there"), words("how are you")), f.takeFinishedSentences());
        assertTrue("taken: forgotten", f.takeFinishedSentences().isEmpty());
        text = TextFieldTest.type(f, text, " thanks!");
        assertEquals(Arrays.asList(words("fine thanks")), f.takeFinishedSentences());
        for (String back : new String[] {"Hello there. How are you? fine thanks", "Hello there. How are you? fine thanks!",
                "Hello there. How are you? fine thanks! ", "Hello there. How are you? fine thanks!!"}) {
            f.update(back);  // a backspace over the terminator and the terminator again; more terminators
        }
        assertTrue("the same sentence end is kept once", f.takeFinishedSentences().isEmpty());
        // The text a field holds when it is opened, and a paste, are not the user's typing here.
        f.reset(true);
        f.update("Old text. Already here. ");
        f.update("Old text. Already here. A pasted one. And another one here. ");
        assertTrue(f.takeFinishedSentences().isEmpty());
        TextFieldTest.type(f, "Old text. Already here. A pasted one. And another one here. ", "New one.");
        assertEquals(Arrays.asList(words("new one")), f.takeFinishedSentences());
        // A field that does not learn (a password or incognito field) keeps nothing.
        f.reset(false);
        f.update("");
        TextFieldTest.type(f, "", "my secret words. more secrets. ");
        assertTrue(f.takeFinishedSentences().isEmpty());
        // Nor does a field without a history (nothing would use them).
        TextField plain = new TextField(p);
        TextFieldTest.type(plain, "", "hello there. ");
        assertTrue(plain.takeFinishedSentences().isEmpty());
        // Kept at most MAX_FINISHED_SENTENCES when no one takes them: the newest.
        f.reset(true);
        f.update("");
        text = "";
        for (int i = 0; i < TextField.MAX_FINISHED_SENTENCES + 5; i++) text = TextFieldTest.type(f, text, "w" + i + ". ");
        List<List<String>> kept = f.takeFinishedSentences();
        assertEquals(TextField.MAX_FINISHED_SENTENCES, kept.size());
        assertEquals(words("w" + (TextField.MAX_FINISHED_SENTENCES + 4)), kept.get(kept.size() - 1));
        assertEquals(words("w5"), kept.get(0));
    }

    @Test
    public void theSentencesAreBoundedAndTheChoiceIsDueAfterEnoughNewOnes() {
        UserHistory h = new UserHistory();
        RecentSentences r = new RecentSentences(h, 4, 3, 10);
        r.add(words("a b"));
        r.add(Collections.<String>emptyList());  // ignored
        r.add(words("c d e"));
        assertEquals(2, r.size());
        assertFalse(r.due());
        r.add(words("f"));
        assertTrue(r.due());
        r.add(words("g h"));
        r.add(words("i j"));  // 5 sentences > 4: the oldest goes
        assertEquals(4, r.size());
        assertEquals(3 + 1 + 2 + 2, r.words());
        r.add(words("k l m"));  // 5 sentences again: the oldest goes (8 words)
        assertEquals(4, r.size());
        assertEquals(1 + 2 + 2 + 3, r.words());
        r.add(words("n o p q r s t"));  // and 15 words > 10: the oldest go until it fits
        assertEquals(2, r.size());
        assertEquals(3 + 7, r.words());
        r.add(words("a b c d e f g h i j k"));  // longer than all the bound: it goes too
        assertEquals(0, r.size());
        assertEquals(0, r.words());
        for (Object[] bad : new Object[][] {{4, 0, 10}, {2, 3, 10}, {4, 3, 0}}) {
            try {
                new RecentSentences(h, (Integer) bad[0], (Integer) bad[1], (Integer) bad[2]);
                fail(Arrays.toString(bad));
            } catch (IllegalArgumentException e) {
                assertTrue(e.getMessage(), e.getMessage().startsWith("need 1 <= minSentences <= capacity"));
            }
        }
        try {
            r.add(Arrays.asList("a", null));
            fail("a null word");
        } catch (IllegalArgumentException e) {
            assertEquals("a sentence holds a null word", e.getMessage());
        }
        assertEquals(200, RecentSentences.CAPACITY);
        assertEquals(50, RecentSentences.MIN_SENTENCES);
    }

    static final String[] TYPED = {"My printer is not working.", "The zorblaxen is not connected.", "Is the zorblaxen plugged in?",
        "Turn the zorblaxen on.", "I think the zorblaxen is broken.", "My zorblaxen has no sound.", "Can you hear the zorblaxen?",
        "Check the zorblaxen cable.", "My zorblaxen is not working."};

    @Test
    public void theChoiceStreamsTheSentencesOverTheHistoryFromBeforeThemAndSetsTheUsersWeight() throws Exception {
        Predictor p = SessionTest.golden();
        UserHistory h = new UserHistory();
        h.learn(words("the zorblaxen is on"));
        RecentSentences r = new RecentSentences(h, 200, TYPED.length, 4000);
        UserHistory before = h.copy();
        TextField f = new TextField(p, h);
        f.update("");
        String text = "";
        for (String t : TYPED) {
            text = TextFieldTest.type(f, text, t + " ");
            for (List<String> s : f.takeFinishedSentences()) {
                r.add(s);
                if (r.size() < TYPED.length) assertNull("not due yet", r.chooseIfDue(p));
            }
        }
        assertTrue(r.due());
        List<List<String>> typed = new ArrayList<List<String>>();
        for (String t : TYPED) typed.add(TextSpec.tokenize(t));
        assertTrue("the keyboard learnt what was typed", h.clock() > before.clock());
        String learnt = h.toJson();
        Session.HistoryWeightChoice choice = r.chooseIfDue(p);
        // The same as choosing on the typed sentences over the history as it was before them ...
        Session.HistoryWeightChoice heldOut = p.session(before.copy(), false).chooseHistoryWeight(typed);
        assertArrayEquals(heldOut.hits(), choice.hits());
        assertEquals(heldOut.weight, choice.weight, 0.0);
        // ... not over the history that already learnt them, which favours itself.
        Session.HistoryWeightChoice inSample = p.session(h.copy(), false).chooseHistoryWeight(typed);
        assertTrue(choice + " vs " + inSample, inSample.hits()[inSample.hits().length - 1] > choice.hits()[choice.hits().length - 1]);
        assertEquals("the weight is set on the user's history", Double.valueOf(choice.weight), h.weight());
        assertEquals("and nothing else changes", learnt.substring(0, learnt.length() - 1), h.toJson().substring(0, learnt.length() - 1));
        assertEquals("the sentences are forgotten", 0, r.size());
        assertFalse(r.due());
        assertNull(r.chooseIfDue(p));
        // Clearing forgets the history, its weight and the sentences.
        for (String t : TYPED) r.add(TextSpec.tokenize(t));
        r.clearHistory();
        assertEquals(0, h.clock());
        assertNull(h.weight());
        assertEquals(0, r.size());
        assertNull(r.chooseIfDue(p));
    }
}
