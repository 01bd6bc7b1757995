package org.keyboardlm.core;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assume.assumeTrue;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

import org.junit.Test;

/**
 * A typed letter (no model step) allocates a small, bounded amount, however long the text
 * before the cursor: an update reuses the chunks the last one scanned instead of scanning
 * (and copying) the whole window again, and ranks completions without copying the prefix's
 * ids. Measured with {@code com.sun.management.ThreadMXBean#getThreadAllocatedBytes}; skipped
 * where the JVM has none.
 */
public class TextFieldAllocationTest {
    /** Bytes a letter key may allocate (it allocated about 100 KB with a 1,000-char window before). */
    static final long LETTER_BOUND = 32 * 1024;

    @Test
    public void aLetterKeyAllocatesLittleWithAFullWindow() throws Exception {
        ThreadMXBean bean = ManagementFactory.getThreadMXBean();
        assumeTrue("no com.sun.management.ThreadMXBean on this JVM: allocation per key not checked",
                bean instanceof com.sun.management.ThreadMXBean);
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) bean;
        assumeTrue("thread allocation measurement unsupported on this JVM: allocation per key not checked",
                threads.isThreadAllocatedMemorySupported());
        threads.setThreadAllocatedMemoryEnabled(true);
        long me = Thread.currentThread().getId();

        UserHistory history = new UserHistory();
        TextField field = new TextField(TextFieldTest.golden(), history);
        field.update("", false);
        String[] words = {"the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "ran", "to", "house"};
        StringBuilder text = new StringBuilder();
        long worst = 0;
        int measured = 0;
        for (int w = 0; w < 1000; w++) {
            String typed = words[w % words.length] + (w % 9 == 8 ? ". " : " ");
            for (int i = 0; i < typed.length(); i++) {
                char c = typed.charAt(i);
                text.append(c);
                // As InputLogic sends it: at most its window before the cursor.
                String before = text.length() > InputLogic.WINDOW ? text.substring(text.length() - InputLogic.WINDOW) : text.toString();
                boolean letter = Character.isLetter(c);
                long b0 = threads.getThreadAllocatedBytes(me);
                TextField.Strip strip = field.update(before, true);
                long b1 = threads.getThreadAllocatedBytes(me);
                if (letter) assertEquals(0, strip.steps);
                if (letter && text.length() > 2 * InputLogic.WINDOW) {  // warm, and the window full
                    worst = Math.max(worst, b1 - b0);
                    measured++;
                }
            }
        }
        assertTrue("too few letter keys measured: " + measured, measured > 1000);
        assertTrue("a letter key allocated " + worst + " bytes with a " + InputLogic.WINDOW + "-char window (bound "
                + LETTER_BOUND + ")", worst <= LETTER_BOUND);
    }
}
