package org.keyboardlm.core;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.concurrent.Executor;

import org.junit.BeforeClass;
import org.junit.Test;

/**
 * The keyboard's glue, run on the JVM: {@link InputLogic} over a {@link FakeEditor}, with a
 * {@link StripRanker} on the golden LSTM model. The ranking thread and the UI thread are
 * queues the test runs when it chooses, so the orders Android can produce (a strip arriving
 * after the text moved on, a text queued when the field changes) are replayed exactly.
 */
public class InputLogicTest {
    /** A text field that asks for correction: the keyboard predicts and learns there. */
    static final int TEXT = FieldPolicy.TYPE_CLASS_TEXT | FieldPolicy.TYPE_TEXT_FLAG_AUTO_CORRECT;
    static final int SENTENCES = TEXT | FieldPolicy.TYPE_TEXT_FLAG_CAP_SENTENCES;
    static final int PASSWORD = FieldPolicy.TYPE_CLASS_TEXT | FieldPolicy.TYPE_TEXT_VARIATION_PASSWORD;

    static Predictor predictor;

    @BeforeClass
    public static void load() throws Exception {
        predictor = TextFieldTest.golden();
    }

    /** A thread's queue, run by the test. */
    static final class Queue implements Executor {
        final ArrayDeque<Runnable> tasks = new ArrayDeque<Runnable>();

        @Override
        public void execute(Runnable r) {
            tasks.addLast(r);
        }

        boolean runAll() {
            boolean any = !tasks.isEmpty();
            while (!tasks.isEmpty()) tasks.pollFirst().run();
            return any;
        }
    }

    /** One keyboard: its ranking thread, its UI thread, the user's history and a field. */
    static final class Keyboard {
        final Queue worker = new Queue();
        final Queue ui = new Queue();
        final UserHistory history = new UserHistory();
        final StripRanker ranker;
        final InputLogic logic;
        FakeEditor editor;

        Keyboard(boolean loaded) {
            ranker = new StripRanker(worker, new StripRanker.Listener() {
                @Override
                public void onStrip(final int seq, final String[] slots, final boolean completing) {
                    ui.execute(new Runnable() {
                        @Override
                        public void run() {
                            logic.onStrip(seq, slots, completing);
                        }
                    });
                }

                @Override
                public void onMessage(final int seq, final String message) {
                    ui.execute(new Runnable() {
                        @Override
                        public void run() {
                            logic.onMessage(seq, message);
                        }
                    });
                }
            });
            logic = new InputLogic(ranker, new InputLogic.Listener() {
                @Override
                public void onStateChanged() {
                }
            });
            if (loaded) ranker.loaded(predictor, history, new RecentSentences(history));
        }

        Keyboard() {
            this(true);
        }

        /** A field holding {@code text} (cursor at its end) starts, with its view or not. */
        Keyboard open(String text, int inputType, boolean view, boolean locked) {
            editor = new FakeEditor(text);
            logic.startInput(editor, inputType, 0, editor.selStart, editor.selEnd, locked);
            if (view) logic.startInputView(locked);
            settle();
            return this;
        }

        Keyboard open(String text, int inputType) {
            return open(text, inputType, true, false);
        }

        /** Keys, each echoed back by the editor as Android would; the ranking thread does not run. */
        Keyboard keys(String s) {
            for (int i = 0; i < s.length(); ) {
                int cp = s.codePointAt(i);
                i += Character.charCount(cp);
                if (cp == '\b') logic.delete();
                else if (cp == '^') logic.shift();
                else logic.type(cp);
                editor.deliver(logic);
            }
            return this;
        }

        /** Everything queued runs: the editor's reports, the ranking thread, the UI thread. */
        Keyboard settle() {
            boolean any;
            do {
                any = !editor.updates.isEmpty();
                editor.deliver(logic);
                any |= worker.runAll();
                any |= ui.runAll();
            } while (any);
            return this;
        }

        /** Keys, each ranked before the next (a ranking thread that keeps up). */
        Keyboard type(String s) {
            for (int i = 0; i < s.length(); ) {
                int cp = s.codePointAt(i);
                i += Character.charCount(cp);
                keys(new String(Character.toChars(cp))).settle();
            }
            return this;
        }

        String center() {
            return logic.slots()[1];
        }

        /** Tap the center slot (asserting it held a word); returns the word written. */
        String pickCenter() {
            String shown = center();
            assertNotNull("a suggestion in the center slot for " + editor, shown);
            assertTrue(logic.pick(1));
            editor.deliver(logic);
            return shown;
        }
    }

    @Test
    public void typingReadsNothingFromTheEditorWhileTheCacheIsValid() {
        Keyboard k = new Keyboard().open("", TEXT);
        int reads = k.editor.reads;
        k.type("check the printer and then restart it");
        assertEquals("no text read per key", reads, k.editor.reads);
        assertEquals("check the printer and then restart it", k.editor.plain());
        assertEquals(k.editor.plain(), k.logic.cachedTextBeforeCursor());
        assertNotNull(k.center());
    }

    @Test
    public void lateOrMergedEchoesOfTheKeyboardsOwnEditsReadNothing() {
        Keyboard k = new Keyboard().open("", TEXT);
        int reads = k.editor.reads;
        for (char c : "check your".toCharArray()) k.logic.type(c);  // the echoes arrive after all the keys
        k.editor.deliver(k.logic);
        k.keys(" ");
        k.logic.type('p');
        k.logic.type('o');
        k.editor.updates.clear();
        k.editor.updates.add(new int[] {11, 11, 13, 13, 11, 13});  // only the last one, merged
        k.settle();
        assertEquals(reads, k.editor.reads);
        assertEquals("check your <po|>", k.editor.toString());
        assertTrue(k.history.count("your") > 0);
    }

    @Test
    public void aLongTextKeepsAWindowAndStillLearnsWhatIsTyped() {
        StringBuilder b = new StringBuilder();
        while (b.length() < 3 * InputLogic.WINDOW) b.append("the printer is on. ");
        Keyboard k = new Keyboard().open(b.toString(), TEXT);
        int reads = k.editor.reads;
        k.type("check your power ");
        assertEquals(reads, k.editor.reads);
        String cached = k.logic.cachedTextBeforeCursor();
        assertEquals(InputLogic.WINDOW, cached.length());
        assertTrue(k.editor.plain().endsWith(cached));
        assertTrue(k.history.count("power", "your") > 0);
        assertEquals("the field's own text is not learnt", 0.0, k.history.count("printer"), 0.0);
    }

    @Test
    public void aFieldStartedWithoutItsViewIsNeitherReadNorRanked() {
        Keyboard k = new Keyboard();
        k.editor = new FakeEditor("my password is");
        k.logic.startInput(k.editor, TEXT, 0, 14, 14, false);
        k.editor.paste(" check ");  // a hardware keyboard types: Android reports the moves
        k.settle();
        assertEquals(0, k.editor.reads);
        assertEquals(0, k.ranker.lastSeq());
        assertArrayEquals(new String[3], k.logic.slots());
        k.logic.startInputView(false);
        k.settle();
        assertTrue(k.editor.reads > 0);
        assertNotNull("ranked once the view shows", k.center());
        assertEquals("the field's own text is not learnt", 0, k.history.numWords());
    }

    @Test
    public void aRestartReadsTheNewTextAndDropsTheTextQueuedBeforeIt() {
        Keyboard k = new Keyboard().open("", TEXT);
        k.keys("check your ");  // queued, not ranked yet
        k.editor.setText("power button ");  // the app's setText, then Android restarts the input
        k.logic.startInput(k.editor, TEXT, 0, 13, 13, false);
        k.logic.startInputView(false);
        k.settle();
        assertEquals("power button ", k.logic.cachedTextBeforeCursor());
        assertEquals(k.logic.sequence(), k.ranker.lastSeq());
        assertEquals("neither the queued text nor the new one is learnt", 0, k.history.numWords());
        k.type("is ");
        assertTrue(k.history.count("is") > 0);
    }

    @Test
    public void aTextQueuedInOneFieldIsNotRankedOrLearntInTheNext() {
        Keyboard k = new Keyboard().open("", TEXT);
        int ranked = k.ranker.lastSeq();
        k.keys("check your ");  // queued in the first field
        FakeEditor password = new FakeEditor("");
        k.editor = password;
        k.logic.startInput(password, PASSWORD, 0, 0, 0, false);
        k.logic.startInputView(false);
        k.type("secret");
        assertEquals("secret", password.plain());
        assertEquals("a password field is never read", 0, password.reads);
        assertEquals(ranked, k.ranker.lastSeq());
        assertEquals(0, k.history.numWords());
        assertArrayEquals(new String[3], k.logic.slots());
    }

    @Test
    public void aPickWithTheCursorInsideAWordReplacesTheWholeWord() {
        Keyboard k = new Keyboard().open("check the printer now", TEXT);
        k.editor.moveCursor(13);  // check the pri|nter now
        k.settle();
        assertEquals("check the <pri|nter> now", k.editor.toString());
        String w = k.pickCenter();
        assertTrue(w, w.startsWith("pri"));
        assertEquals("check the " + w + " now", k.editor.plain());
        assertEquals(10 + w.length(), k.editor.selStart);
    }

    @Test
    public void aSelectionGetsNoStripAndTypingReplacesIt() {
        Keyboard k = new Keyboard().open("check the printer", TEXT);
        k.editor.select(6, 9);
        k.settle();
        assertArrayEquals(new String[3], k.logic.slots());
        assertFalse(k.logic.pick(1));
        k.type("x");
        assertEquals("check x printer", k.editor.plain());
        k.keys("\b");
        assertEquals("check  printer", k.editor.plain());
    }

    @Test
    public void aTapOnAStripThatHasNotCaughtUpDoesNothing() {
        Keyboard k = new Keyboard().open("", TEXT);
        k.type("the pr");
        assertNotNull(k.center());
        k.keys("i");  // the strip still shows "pr"'s completions
        assertFalse(k.logic.pick(1));
        assertEquals("the pri", k.editor.plain());
        k.worker.runAll();
        k.keys("n");  // a strip for "pri" is on its way to the UI thread, the text is "prin" now
        k.ui.runAll();
        assertFalse(k.logic.pick(1));
        assertEquals("the prin", k.editor.plain());
        k.settle();
        assertTrue(k.logic.pick(1));
    }

    @Test
    public void backspaceRightAfterAPickRestoresTheTypedWordAndUnlearnsThePick() {
        Keyboard k = new Keyboard().open("", TEXT);
        k.type("the pri");
        String w = k.pickCenter();
        k.settle();
        assertEquals("the " + w, k.editor.plain());
        assertTrue("learnt on the tap", k.history.count(w, "the") > 0);
        k.type("\b");
        assertEquals("the <pri|>", k.editor.toString());
        assertEquals(0.0, k.history.count(w, "the"), 0.0);
        assertEquals(0.0, k.history.count(w), 0.0);
        assertTrue("the words before stay learnt", k.history.count("the") > 0);
        // Typed again in full, the word is learnt as new (its place was forgotten).
        k.type(w.substring(3) + " ");
        assertTrue(k.history.count(w, "the") > 0);
    }

    @Test
    public void aBackspaceLaterDeletesOneCharacterAndUnlearnsNothing() {
        Keyboard k = new Keyboard().open("", TEXT);
        k.type("the pri");
        String w = k.pickCenter();
        k.type(".");
        assertEquals("the " + w + ".", k.editor.plain());
        k.type("\b");
        assertEquals("the " + w, k.editor.plain());
        assertTrue(k.history.count(w, "the") > 0);
    }

    @Test
    public void aLearntWordBackspacedAwayBeforeTheFieldIsLeftIsUnlearnt() {
        Keyboard k = new Keyboard().open("", TEXT);
        k.type("check the printer now ");
        assertTrue(k.history.count("now", "printer") > 0);
        double the = k.history.count("the");
        k.type("\b\b\b\b");
        assertEquals("check the printer ", k.editor.plain());
        assertEquals("the deleted word is unlearnt", 0.0, k.history.count("now"), 0.0);
        assertEquals(0.0, k.history.count("now", "printer"), 0.0);
        assertTrue("the words before it stay", k.history.count("printer", "the") > 0);
        k.type("\b\b\b\b\b\b\b\b");
        assertEquals("check the ", k.editor.plain());
        assertEquals(0.0, k.history.count("printer"), 0.0);
        assertEquals(the, k.history.count("the"), 1e-2);
    }

    @Test
    public void aLearntWordChangedLaterIsReplacedNotKeptBeside() {
        Keyboard k = new Keyboard().open("", TEXT);
        k.type("the printer is ");
        assertTrue(k.history.count("printer") > 0);
        // Back over "is " and into the word, then a different ending: only the final word stays learnt.
        k.type("\b\b\b\b\b\b");
        assertEquals("the print", k.editor.plain());
        assertEquals(0.0, k.history.count("printer"), 0.0);
        assertEquals(0.0, k.history.count("is"), 0.0);
        k.type("ed ");
        assertTrue(k.history.count("printed", "the") > 0);
        assertEquals(0.0, k.history.count("printer"), 0.0);
    }

    @Test
    public void backspacingOverASpaceOrATerminatorKeepsTheWordLearntOnce() {
        Keyboard k = new Keyboard().open("", TEXT);
        k.type("the printer.");
        double once = k.history.count("printer");
        assertTrue(once > 0);
        k.type("\b");
        assertEquals("the <printer|>", k.editor.toString());
        assertEquals("still in the text: still learnt", once, k.history.count("printer"), 0.0);
        k.type(" ");
        assertEquals("learnt once, not twice", once, k.history.count("printer"), 1e-3);
        k.type("\b\b");
        assertEquals("the <printe|>", k.editor.toString());
        assertEquals(0.0, k.history.count("printer"), 0.0);
        k.type("r ");
        assertEquals(once, k.history.count("printer"), 1e-2);
    }

    @Test
    public void aWordIsFinalOnceItsFieldIsLeft() {
        Keyboard k = new Keyboard().open("", TEXT);
        k.type("the printer ");
        double once = k.history.count("printer");
        // The field is left, and opened again with the same text: deleting the word now is an edit of old text.
        k.open(k.editor.plain(), TEXT);
        k.type("\b\b\b\b\b\b\b\b");
        assertEquals("the ", k.editor.plain());
        assertEquals(once, k.history.count("printer"), 0.0);
    }

    @Test
    public void aRevertedPickThatTheBackspaceAlsoDeletedIsUnlearntOnce() {
        Keyboard k = new Keyboard().open("", TEXT);
        k.type("the pri");
        String w = k.pickCenter();
        k.settle();
        k.type(". the pri");
        assertEquals("the same suggestion at the same place in the next sentence", w, k.center());
        double before = k.history.count(w);
        assertTrue(before > 0);
        k.pickCenter();
        k.settle();
        k.type("\b");
        assertEquals("the first typing stays, decayed; the tap is taken back once", before, k.history.count(w), 1e-2);
    }

    @Test
    public void aPickIsFollowedByAPhantomSpaceThatYieldsToPunctuation() {
        Keyboard k = new Keyboard().open("", TEXT);
        k.type("the pri");
        String w = k.pickCenter();
        k.settle();
        assertEquals("the " + w + "|", k.editor.toString());
        assertFalse("next-word suggestions at once", Arrays.equals(new String[3], k.logic.slots()));
        k.type(",");
        assertEquals("the " + w + ",", k.editor.plain());
        k.type(" is");
        String v = k.pickCenter();
        k.type("x");
        assertEquals("the " + w + ", " + v + " x", k.editor.plain());
        // A next-word pick after a pick: the phantom space becomes a real one.
        k.type(" ");
        String a = k.pickCenter();
        k.settle();
        String b = k.pickCenter();
        assertEquals("the " + w + ", " + v + " x " + a + " " + b, k.editor.plain());
    }

    @Test
    public void capitalsFollowTheFieldsCapsModeAndTheTypedCase() {
        Keyboard k = new Keyboard().open("", SENTENCES);
        assertTrue("a capital at the start", k.logic.shifted());
        k.type("check it. ");
        assertEquals("Check it. ", k.editor.plain());
        assertTrue(k.logic.shifted());
        String shown = k.center();
        assertEquals(Character.toUpperCase(shown.charAt(0)), shown.charAt(0));
        String w = k.pickCenter();
        assertEquals("Check it. " + w, k.editor.plain());
        k.type(" i ");
        assertEquals("Check it. " + w + " I ", k.editor.plain());
        k.type("^the");  // shift while auto-caps is off: one capital
        assertTrue(k.editor.plain().endsWith(" I The"));

        Keyboard upper = new Keyboard().open("", TEXT);
        assertFalse("no caps mode, no auto-caps", upper.logic.shifted());
        upper.type("^p^r^i");
        assertEquals("PRI", upper.editor.plain());
        String u = upper.pickCenter();
        assertEquals(u.toUpperCase(), u);
        assertEquals(u, upper.editor.plain());
    }

    @Test
    public void shiftWhileAutoCapsIsOnGivesALowercaseLetter() {
        Keyboard k = new Keyboard().open("", SENTENCES);
        k.type("^x");
        assertEquals("x", k.editor.plain());
    }

    @Test
    public void aLongPressRemovesTheWordFromTheHistory() {
        Keyboard k = new Keyboard();
        for (int i = 0; i < 3; i++) k.history.learnWord(null, "gizmo");
        k.history.setWeight(1.0);
        k.open("", TEXT);
        int slot = Arrays.asList(k.logic.slots()).indexOf("gizmo");
        assertTrue("typed three times, shown: " + Arrays.toString(k.logic.slots()), slot >= 0);
        assertTrue(k.logic.removeSuggestion(slot));
        k.settle();
        assertEquals(0.0, k.history.count("gizmo"), 0.0);
        assertFalse(Arrays.asList(k.logic.slots()).contains("gizmo"));
        assertNotNull(k.center());
    }

    @Test
    public void aLockedDeviceShowsNoWordOnlyTheHistoryKnows() {
        Keyboard k = new Keyboard();
        for (int i = 0; i < 3; i++) k.history.learnWord(null, "gizmo");
        k.history.setWeight(1.0);
        k.open("", TEXT, true, true);
        assertNotNull(k.center());
        assertFalse(Arrays.asList(k.logic.slots()).contains("gizmo"));
        k.open("", TEXT, true, false);
        assertTrue(Arrays.asList(k.logic.slots()).contains("gizmo"));
    }

    @Test
    public void aPasteIsRankedButNotLearnt() {
        Keyboard k = new Keyboard().open("", TEXT);
        k.editor.paste("gizmo ");
        k.settle();
        assertEquals("gizmo ", k.logic.cachedTextBeforeCursor());
        k.type("is ");
        assertEquals(0.0, k.history.count("gizmo"), 0.0);
        assertTrue(k.history.count("is") > 0);
    }

    @Test
    public void theStripSaysLoadingOnlyUntilTheModelIsLoaded() {
        Keyboard k = new Keyboard(false).open("", TEXT);
        assertTrue(k.logic.loading());
        k.ranker.loaded(predictor, k.history, null);
        k.logic.finishInputView();  // a rotation: the view goes and comes back
        k.logic.startInputView(false);
        assertFalse("no loading flash", k.logic.loading());
        k.settle();
        assertNotNull(k.center());
        assertNull(k.logic.message());
    }

    @Test
    public void aFailedLoadIsShownAndTypingStillWorks() {
        Keyboard k = new Keyboard(false);
        k.ranker.loadFailed("assets/model.tflite: not a TFLite file");
        k.open("", TEXT);
        k.type("abc");
        assertEquals("abc", k.editor.plain());
        assertEquals("assets/model.tflite: not a TFLite file", k.logic.message());
        assertFalse(k.logic.loading());
    }

    @Test
    public void backspaceIntoAWordComposesItAgain() {
        Keyboard k = new Keyboard().open("", TEXT);
        k.type("the printer ");
        k.type("\b");
        assertEquals("the <printer|>", k.editor.toString());
        k.type("\b\b\b");
        assertEquals("the <prin|>", k.editor.toString());
        String w = k.pickCenter();
        assertEquals("the " + w, k.editor.plain());
    }

    @Test
    public void theLayoutFollowsTheFieldClass() {
        assertEquals(InputLogic.LAYOUT_TEXT, InputLogic.layoutFor(TEXT));
        assertEquals(InputLogic.LAYOUT_NUMBER, InputLogic.layoutFor(FieldPolicy.TYPE_CLASS_NUMBER));
        assertEquals(InputLogic.LAYOUT_DATETIME, InputLogic.layoutFor(FieldPolicy.TYPE_CLASS_DATETIME));
        assertEquals(InputLogic.LAYOUT_PHONE, InputLogic.layoutFor(FieldPolicy.TYPE_CLASS_PHONE));
        assertEquals(InputLogic.LAYOUT_TEXT, InputLogic.layoutFor(FieldPolicy.TYPE_CLASS_TEXT | FieldPolicy.TYPE_TEXT_VARIATION_EMAIL_ADDRESS));
    }

    @Test
    public void capsModeFollowsAndroidsRules() {
        int s = FieldPolicy.TYPE_TEXT_FLAG_CAP_SENTENCES;
        int w = FieldPolicy.TYPE_TEXT_FLAG_CAP_WORDS;
        assertTrue(InputLogic.capsAt("", s));
        assertTrue(InputLogic.capsAt("Done. ", s));
        assertTrue(InputLogic.capsAt("Done? \"", s));
        assertTrue(InputLogic.capsAt("Done\n", s));
        assertFalse(InputLogic.capsAt("Done.", s));
        assertFalse(InputLogic.capsAt("Done, ", s));
        assertTrue(InputLogic.capsAt("Done, ", w));
        assertFalse(InputLogic.capsAt("Done. ", 0));
        assertEquals("HELLO", InputLogic.applyCase("hello", "HEL", false));
        assertEquals("Hello", InputLogic.applyCase("hello", "Hel", false));
        assertEquals("Hello", InputLogic.applyCase("hello", "H", false));
        assertEquals("hello", InputLogic.applyCase("hello", "hEL", false));
        assertEquals("Hello", InputLogic.applyCase("hello", "", true));
        assertEquals("I'm", InputLogic.applyCase("i'm", "", false));
    }
}
