package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.io.File;
import java.util.ArrayList;
import java.util.List;

import javax.xml.parsers.DocumentBuilderFactory;

import org.junit.Assume;
import org.junit.BeforeClass;
import org.junit.Test;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * How typing feels, decided in {@link InputLogic} and the layouts: the double-space period (on
 * LatinIME's conditions), caps lock on a double tap of shift, the date and time pad and the
 * symbols toggle, and in the app's key layouts: no auto-repeat on the space bar, {@code ?} and
 * {@code !} a long press away on the letters, {@code /} and {@code :} on the date and time pad.
 */
public class TypingFeelTest {
    @BeforeClass
    public static void load() throws Exception {
        if (InputLogicTest.predictor == null) InputLogicTest.predictor = TextFieldTest.golden();  // its Keyboard's model
    }

    /** Keys at explicit times (milliseconds): a character, '^' shift, '\b' delete; each echoed and ranked. */
    static void keys(InputLogicTest.Keyboard k, long start, long step, String s) {
        long t = start;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            i += Character.charCount(cp);
            if (cp == '\b') k.logic.delete();
            else if (cp == '^') k.logic.shift(t);
            else k.logic.type(cp, t);
            k.editor.deliver(k.logic);
            k.settle();
            t += step;
        }
    }

    @Test
    public void twoQuickSpacesAfterAWordMakeAPeriodAndASpace() {
        InputLogicTest.Keyboard k = new InputLogicTest.Keyboard().open("", InputLogicTest.SENTENCES);
        keys(k, 0, 100, "see you  ");
        assertEquals("See you. ", k.editor.plain());
        assertTrue("a sentence starts: a capital next", k.logic.shifted());
        keys(k, 1000, 100, "then");
        assertEquals("See you. Then", k.editor.plain());
        assertTrue("the period ended the sentence: its words are learnt", k.history.count("you") > 0);
    }

    @Test
    public void theDoubleSpacePeriodKeepsLatinImesConditions() {
        String[][] cases = {
            // typed (100 ms apart), expected
            {"word  ", "word. "},
            {"5  ", "5. "},
            {"(so)  ", "(so). "},
            {"word.  ", "word.  "},      // not after a period
            {"word,  ", "word,  "},      // nor other punctuation
            {"word   ", "word.  "},      // a third space is a space
            {"a \bb  ", "ab. "},         // a delete in between starts over
            {"  ", "  "},                // nothing before
        };
        for (String[] c : cases) {
            InputLogicTest.Keyboard k = new InputLogicTest.Keyboard().open("", InputLogicTest.TEXT);
            keys(k, 0, 100, c[0]);
            assertEquals(c[0], c[1], k.editor.plain());
        }
        InputLogicTest.Keyboard slow = new InputLogicTest.Keyboard().open("", InputLogicTest.TEXT);
        keys(slow, 0, InputLogic.DOUBLE_SPACE_PERIOD_MILLIS, "word  ");
        assertEquals("too slow", "word  ", slow.editor.plain());
        InputLogicTest.Keyboard noTime = new InputLogicTest.Keyboard().open("", InputLogicTest.TEXT).type("word  ");
        assertEquals("no time given", "word  ", noTime.editor.plain());
        InputLogicTest.Keyboard moved = new InputLogicTest.Keyboard().open("", InputLogicTest.TEXT);
        keys(moved, 0, 100, "one two ");
        moved.editor.moveCursor(4);  // the user taps after "one "
        moved.settle();
        keys(moved, 900, 100, " ");
        assertEquals("a cursor move in between", "one  two ", moved.editor.plain());
        InputLogicTest.Keyboard password = new InputLogicTest.Keyboard().open("", InputLogicTest.PASSWORD);
        keys(password, 0, 100, "pw  ");
        assertEquals("never in a field the keyboard does not read", "pw  ", password.editor.plain());
    }

    @Test
    public void aTappedSuggestionThenTwoSpacesEndsTheSentence() {
        InputLogicTest.Keyboard k = new InputLogicTest.Keyboard().open("", InputLogicTest.TEXT);
        keys(k, 0, 100, "how are yo");
        String picked = k.pickCenter();
        keys(k, 2000, 100, "  ");
        assertEquals("how are " + picked + ". ", k.editor.plain());
    }

    @Test
    public void aDoubleTapOnShiftLocksCapitalsUntilTheNextTap() {
        InputLogicTest.Keyboard k = new InputLogicTest.Keyboard().open("", InputLogicTest.TEXT);
        keys(k, 0, 100, "^^");
        assertTrue(k.logic.capsLocked());
        keys(k, 1000, 100, "abc th");
        assertEquals("ABC TH", k.editor.plain());
        assertTrue("a suggestion in capitals too", k.logic.slots()[1] == null || k.logic.slots()[1].equals(k.logic.slots()[1].toUpperCase()));
        String picked = k.pickCenter();
        assertEquals(picked.toUpperCase(), picked);
        keys(k, 5000, 100, "^");
        assertFalse(k.logic.capsLocked());
        keys(k, 6000, 100, " f");
        assertEquals("ABC " + picked + " f", k.editor.plain());

        InputLogicTest.Keyboard slow = new InputLogicTest.Keyboard().open("", InputLogicTest.TEXT);
        keys(slow, 0, ShiftKey.DOUBLE_TAP_MILLIS, "^^");
        assertFalse("two slow taps: shift, then off", slow.logic.capsLocked());
        assertFalse(slow.logic.shifted());
        keys(slow, 2000, 100, "^a^b");
        assertFalse("a letter between two taps: no double tap", slow.logic.capsLocked());
        assertEquals("AB", slow.editor.plain());

        InputLogicTest.Keyboard restart = new InputLogicTest.Keyboard().open("", InputLogicTest.TEXT);
        keys(restart, 0, 100, "^^");
        restart.open("", InputLogicTest.TEXT);
        assertFalse("a new field starts without caps lock", restart.logic.capsLocked());
    }

    @Test
    public void dateAndTimeFieldsGetTheirPadAndTheModeKeyGoesToTheSymbolsAndBack() {
        assertEquals(InputLogic.LAYOUT_DATETIME, InputLogic.layoutFor(FieldPolicy.TYPE_CLASS_DATETIME));
        assertEquals(InputLogic.LAYOUT_DATETIME, InputLogic.layoutFor(FieldPolicy.TYPE_CLASS_DATETIME | FieldPolicy.TYPE_DATETIME_VARIATION_TIME));
        assertEquals(InputLogic.LAYOUT_NUMBER, InputLogic.layoutFor(FieldPolicy.TYPE_CLASS_NUMBER));
        InputLogicTest.Keyboard k = new InputLogicTest.Keyboard().open("", FieldPolicy.TYPE_CLASS_DATETIME | FieldPolicy.TYPE_DATETIME_VARIATION_DATE);
        assertEquals(InputLogic.LAYOUT_DATETIME, k.logic.layout());
        k.logic.toggleSymbols();
        assertEquals(InputLogic.LAYOUT_SYMBOLS, k.logic.layout());
        k.logic.toggleSymbols();
        assertEquals("back to the date pad, not the letters", InputLogic.LAYOUT_DATETIME, k.logic.layout());
        k.type("12/31");
        assertEquals("12/31", k.editor.plain());
        k.logic.toggleSymbols();
        k.open("", InputLogicTest.TEXT);
        assertEquals("a new field shows its own layout", InputLogic.LAYOUT_TEXT, k.logic.layout());
        k.logic.toggleSymbols();
        k.logic.toggleSymbols();
        assertEquals(InputLogic.LAYOUT_TEXT, k.logic.layout());
    }

    // -- the app's key layouts (res/xml), read where -Dkblm.readme points ---------------------

    private static List<Element> keysOf(String layout) throws Exception {
        String readme = System.getProperty("kblm.readme");
        Assume.assumeTrue("needs -Dkblm.readme (android_demo/README.md) to find the app's res/xml", readme != null);
        File xml = new File(new File(readme).getParentFile(), "app/src/main/res/xml/" + layout);
        NodeList nodes = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(xml).getElementsByTagName("Key");
        List<Element> out = new ArrayList<Element>();
        for (int i = 0; i < nodes.getLength(); i++) out.add((Element) nodes.item(i));
        return out;
    }

    private static List<Integer> codes(List<Element> keys) {
        List<Integer> out = new ArrayList<Integer>();
        for (Element k : keys) out.add(Integer.parseInt(k.getAttribute("android:codes")));
        return out;
    }

    @Test
    public void theSpaceBarNeverRepeatsAndOnlyDeleteDoes() throws Exception {
        for (String layout : new String[] {"qwerty.xml", "symbols.xml", "numbers.xml", "phone.xml", "datetime.xml"}) {
            for (Element key : keysOf(layout)) {
                boolean repeats = "true".equals(key.getAttribute("android:isRepeatable"));
                assertEquals(layout + " key " + key.getAttribute("android:codes"), key.getAttribute("android:codes").equals("-5"), repeats);
            }
        }
    }

    @Test
    public void questionAndExclamationMarksAreALongPressAwayOnTheLetters() throws Exception {
        boolean question = false;
        boolean exclamation = false;
        for (Element key : keysOf("qwerty.xml")) {
            String more = key.getAttribute("android:popupCharacters").replace("\\", "");
            if (more.isEmpty()) continue;
            assertFalse("a popup needs its template", key.getAttribute("android:popupKeyboard").isEmpty());
            question |= more.contains("?");
            exclamation |= more.contains("!");
        }
        assertTrue(question && exclamation);
        assertFalse("the letters' own keys have no ? or ! key to find", codes(keysOf("qwerty.xml")).contains((int) '?'));
    }

    @Test
    public void theDateAndTimePadHasSlashColonAndTheModeKey() throws Exception {
        List<Integer> codes = codes(keysOf("datetime.xml"));
        for (int c : new int[] {'/', ':', '-', '.', ' ', '\n', -2, -5, -101}) assertTrue("datetime.xml lacks " + c, codes.contains(c));
        for (int d = '0'; d <= '9'; d++) assertTrue(codes.contains(d));
    }
}
