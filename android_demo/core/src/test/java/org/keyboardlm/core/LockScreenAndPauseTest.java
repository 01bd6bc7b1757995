package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import java.util.Arrays;
import java.util.List;

import org.junit.BeforeClass;
import org.junit.Test;

/**
 * The user history stays out of the lock screen and out of a paused keyboard. Locked: the strip
 * is the model's alone (no history word shown or moved up), nothing is learnt or unlearnt, a
 * long press removes nothing, and what was typed there is not learnt after the unlock either.
 * Paused: nothing is learnt in any field, while suggestions still use what was learnt. On the
 * golden LSTM model, with a history that has learnt a vocabulary word after "the".
 */
public class LockScreenAndPauseTest {
    static Predictor predictor;
    /** After CONTEXT, a vocabulary word the model ranks 11th and the history has learnt there. */
    static String promoted;
    static final String CONTEXT = "i saw the ";

    @BeforeClass
    public static void load() throws Exception {
        predictor = TextFieldTest.golden();
        if (InputLogicTest.predictor == null) InputLogicTest.predictor = predictor;  // its Keyboard's model
        List<Suggestion> model = predictor.suggest(CONTEXT, 20);
        promoted = model.get(10).word;
    }

    /** A history that put {@link #promoted} after "the" six times, at weight 0.5. */
    static UserHistory history() {
        UserHistory h = new UserHistory();
        for (int i = 0; i < 6; i++) h.learnWord("the", promoted);
        h.setWeight(0.5);
        return h;
    }

    /** {@code text} typed into {@code f} key by key, as the keyboard does. */
    static TextField.Strip type(TextField f, String before, String text) {
        TextField.Strip s = null;
        for (char c : text.toCharArray()) s = f.update(before += c, true);
        return s;
    }

    @Test
    public void aLockedFieldRanksWithTheModelAloneAndTheHistoryComesBackOnUnlock() {
        UserHistory h = history();
        TextField f = new TextField(predictor, h);
        f.reset(true);
        String[] modelOnly = new TextField(predictor).update(CONTEXT, false).slots();
        assertFalse(Arrays.asList(modelOnly).contains(promoted));
        assertTrue("the history moves it up", Arrays.asList(f.update(CONTEXT, false).slots()).contains(promoted));
        f.setDeviceLocked(true);
        assertArrayEquals("locked: the model's strip", modelOnly, f.update(CONTEXT, false).slots());
        String prefix = promoted.substring(0, 1);
        assertArrayEquals("completions too", new TextField(predictor).update(CONTEXT + prefix, false).slots(),
                f.update(CONTEXT + prefix, true).slots());
        assertTrue(f.session().userHistory() == null);
        f.setDeviceLocked(false);
        assertTrue("unlocked", Arrays.asList(f.update(CONTEXT, true).slots()).contains(promoted));
    }

    @Test
    public void nothingTypedOnTheLockScreenIsLearntThenOrAfterTheUnlock() {
        UserHistory h = history();
        String before = h.toJson();
        TextField f = new TextField(predictor, h);
        f.reset(true);
        f.update("", false);
        f.setDeviceLocked(true);
        type(f, "", "meet me at noon. we sa");
        assertEquals("locked: nothing learnt", before, h.toJson());
        f.setDeviceLocked(false);
        type(f, "meet me at noon. we sa", "w it. then ");
        assertEquals("words begun or ended on the lock screen are not learnt", 0.0, h.count("saw") + h.count("we") + h.count("noon"), 0.0);
        assertEquals(1.0, h.count("then"), 1e-9);
        assertEquals("a word typed on the lock screen is no previous word either", 0.0, h.count("it", "saw"), 0.0);
        type(f, "meet me at noon. we saw it. then ", "again ");
        assertTrue("typed after the unlock: learnt", h.count("again", "then") > 0);
    }

    @Test
    public void aBackspaceOnTheLockScreenUnlearnsNothing() {
        UserHistory h = new UserHistory();
        TextField f = new TextField(predictor, h);
        f.reset(true);
        f.update("", false);
        type(f, "", "my printer ");
        assertTrue(h.count("printer") > 0);
        String learnt = h.toJson();
        f.setDeviceLocked(true);
        f.update("my printer", true);
        f.update("my printe", true);
        assertEquals(learnt, h.toJson());
    }

    @Test
    public void onTheLockScreenALongPressRemovesNothing() {
        InputLogicTest.Keyboard k = new InputLogicTest.Keyboard();
        for (int i = 0; i < 3; i++) k.history.learnWord(null, "gizmo");
        k.history.setWeight(1.0);
        k.open("", InputLogicTest.TEXT, true, true);
        String[] slots = k.logic.slots();
        assertNotNull(k.center());
        for (int slot = 0; slot < slots.length; slot++) assertFalse("slot " + slot, k.logic.removeSuggestion(slot));
        k.settle();
        assertEquals(3.0, k.history.count("gizmo"), 0.01);
        k.open("", InputLogicTest.TEXT, true, false);
        int slot = Arrays.asList(k.logic.slots()).indexOf("gizmo");
        assertTrue(slot >= 0);
        assertTrue("unlocked: removed", k.logic.removeSuggestion(slot));
    }

    @Test
    public void pausedLearningLearnsNothingAnywhereButTheStripStillUsesTheHistory() {
        InputLogicTest.Keyboard k = new InputLogicTest.Keyboard();
        for (int i = 0; i < 6; i++) k.history.learnWord("the", promoted);
        k.history.setWeight(0.5);
        String before = k.history.toJson();
        k.logic.setLearningPaused(true);
        assertTrue(k.logic.learningPaused());
        for (int inputType : new int[] {InputLogicTest.TEXT, InputLogicTest.SENTENCES,
                FieldPolicy.TYPE_CLASS_TEXT | FieldPolicy.TYPE_TEXT_FLAG_MULTI_LINE}) {
            k.open("", inputType).type(CONTEXT);
            assertTrue("the history still ranks", Arrays.asList(k.logic.slots()).contains(promoted));
            k.type("today. ");
            assertEquals(before, k.history.toJson());
        }
        k.logic.setLearningPaused(false);
        k.open("", InputLogicTest.TEXT).type("today ");
        assertTrue("from the next field on, it learns", k.history.count("today") > 0);
    }

    @Test
    public void thePolicySaysThePauseAndTheLockScreenWin() {
        int chat = FieldPolicy.TYPE_CLASS_TEXT | FieldPolicy.TYPE_TEXT_FLAG_MULTI_LINE | FieldPolicy.TYPE_TEXT_FLAG_AUTO_CORRECT;
        assertTrue(FieldPolicy.mayLearn(chat, 0, false));
        assertFalse(FieldPolicy.mayLearn(chat, 0, true));
        assertFalse(FieldPolicy.mayLearn(chat, FieldPolicy.IME_FLAG_NO_PERSONALIZED_LEARNING, false));
        for (int type = 0; type < 0x100000; type += 0x1001) assertFalse(FieldPolicy.mayLearn(type, 0, true));
        assertTrue(FieldPolicy.mayUseHistory(false));
        assertFalse(FieldPolicy.mayUseHistory(true));
    }
}
