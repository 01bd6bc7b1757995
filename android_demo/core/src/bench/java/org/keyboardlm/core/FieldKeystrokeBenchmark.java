package org.keyboardlm.core;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.List;

/**
 * The Java side of benchmarks/android/keystroke_host_benchmark.py: the time from a key to its strip on the
 * ranking thread's path, {@code TextField.update(textBeforeCursor, true)} then {@code Strip.slots()},
 * one call per typed character (letters, the space after each word), and the bytes the thread
 * allocates for it. It uses only what the core had before InputLogic existed, so the same source
 * compiles against an earlier revision's core and the two are compared in one run. Not part of the APK.
 *
 * <pre>java -cp CLASSES org.keyboardlm.core.FieldKeystrokeBenchmark MODEL.tflite WORDS.txt WARMUP PASSES SAVING HISTORY_FILE</pre>
 *
 * The field has a {@link UserHistory} that first learns the words once (so a save has a full
 * history's JSON to write), and learns as it is typed. SAVING "1": a second thread saves that history
 * to HISTORY_FILE ({@code UserHistory.save}: its JSON under the history's lock, then a write, fsync
 * and rename) over and over while the keys are timed, so every key meets a save in progress; "0":
 * no save. Each pass types the words into a fresh field. WARMUP passes run first, untimed. Prints,
 * one line each: "key_us ..." (microseconds per key over the timed passes), "key_bytes ..." (bytes
 * the timing thread allocated per key, from com.sun.management.ThreadMXBean), "keys N" (keys per
 * pass), "saves N" (saves finished while timing), "slots ..." (the last pass's final strip) and
 * "vm ..." (java.vm.name, os.arch, java.version).
 */
public final class FieldKeystrokeBenchmark {
    private FieldKeystrokeBenchmark() {}

    public static void main(String[] args) throws IOException, ModelFileException, InterruptedException {
        if (args.length != 6) {
            throw new IllegalArgumentException("usage: FieldKeystrokeBenchmark MODEL WORDS WARMUP PASSES SAVING(0|1) HISTORY_FILE");
        }
        Predictor predictor = new Predictor(ModelFile.load(args[0]), Collections.<String>emptyList());
        List<String> words = Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8);
        int warmup = Integer.parseInt(args[2]);
        int passes = Integer.parseInt(args[3]);
        boolean saving = "1".equals(args[4]);
        final String historyFile = args[5];
        final UserHistory history = new UserHistory();
        history.learn(words);

        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long me = Thread.currentThread().getId();
        StringBuilder times = new StringBuilder("key_us");
        StringBuilder bytes = new StringBuilder("key_bytes");
        String[] last = new String[0];
        int keys = 0;
        final long[] saves = {0};
        final StopFlag stop = new StopFlag();
        Thread saver = null;
        if (saving) {
            saver = new Thread(new Runnable() {
                @Override
                public void run() {
                    try {
                        while (!stop.value) {
                            history.save(historyFile);
                            synchronized (saves) {
                                saves[0]++;
                            }
                        }
                    } catch (IOException e) {
                        throw new RuntimeException(e);
                    }
                }
            }, "kblm-saver");
        }
        for (int pass = 0; pass < warmup + passes; pass++) {
            boolean timed = pass >= warmup;
            if (timed && pass == warmup && saver != null) {
                saver.start();
                while (true) {  // time keys only once a save is under way
                    synchronized (saves) {
                        if (saves[0] > 0) break;
                    }
                    Thread.sleep(1);
                }
                synchronized (saves) {
                    saves[0] = 0;
                }
            }
            TextField field = new TextField(predictor, history);
            field.update("", false);
            StringBuilder text = new StringBuilder();
            keys = 0;
            for (String word : words) {
                String typed = word + " ";
                for (int i = 0; i < typed.length(); i++) {
                    text.append(typed.charAt(i));
                    String before = text.toString();
                    long b0 = threads.getThreadAllocatedBytes(me);
                    long t0 = System.nanoTime();
                    String[] slots = field.update(before, true).slots();
                    long t1 = System.nanoTime();
                    long b1 = threads.getThreadAllocatedBytes(me);
                    keys++;
                    last = slots;
                    if (timed) {
                        times.append(' ').append((t1 - t0) / 1000.0);
                        bytes.append(' ').append(b1 - b0);
                    }
                }
            }
        }
        long finished;
        synchronized (saves) {
            finished = saves[0];
        }
        if (saver != null) {
            stop.value = true;
            saver.join();
        }
        new File(historyFile).delete();
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        out.println(times);
        out.println(bytes);
        out.println("keys " + keys);
        out.println("saves " + finished);
        StringBuilder s = new StringBuilder("slots");
        for (String w : last) s.append(' ').append(w);
        out.println(s);
        out.println("vm " + System.getProperty("java.vm.name").replace(' ', '_') + " " + System.getProperty("os.arch")
                + " " + System.getProperty("java.version"));
        out.flush();
    }

    /** A flag the saver thread reads (a field of an object, since a local cannot be volatile). */
    private static final class StopFlag {
        volatile boolean value;
    }
}
