package org.keyboardlm.core;

import java.io.File;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;

/**
 * The Java side of {@code benchmarks/android/java_arm64_benchmark.py --input-logic}: the keyboard's whole
 * path from a key to its strip, as the service runs it, on any JVM (the emulated aarch64 one
 * too). Not part of the APK.
 *
 * <pre>java -cp CLASSES org.keyboardlm.core.InputLogicBenchmark MODEL.tflite WORDS.txt WARMUP PASSES PENDING(0|1) DIR</pre>
 *
 * <ul>
 * <li>Load: the model memory-mapped ({@code ModelFile.load}), timed, with the heap used after a
 * full GC before and after it (the mapped file's bytes are not on the heap).</li>
 * <li>Keys: this thread is the UI thread. Each typed character is {@code InputLogic.type}, the
 * editor's selection report ({@code FakeEditor}, the JUnit tests' editor over a string: its
 * reads are counted, not timed as IPC), then a wait for the strip of that text from the
 * {@link StripRanker} on its own ranking thread, then {@code InputLogic.onStrip}: the time from
 * the key to the strip shown. Per key also: the editor reads {@code InputLogic} made, and the
 * bytes allocated by this thread and the ranking thread (com.sun.management.ThreadMXBean).</li>
 * <li>PENDING 1: a third thread (the keyboard's idle executor) keeps a history save
 * ({@code HistoryStore.save}, in DIR: a journal append, or a compaction when due) and a weight
 * choice ({@code Session.chooseHistoryWeight} on the user's sentences) running, one after the
 * other, for as long as keys are timed, so every key meets them under way.</li>
 * </ul>
 * Prints one line each: "key_us ...", "key_reads ...", "key_bytes ..." (both threads), "keys N",
 * "saves N", "choices N", "save_bytes N" (bytes the saves wrote in all), "load_ms X",
 * "heap_before_mb X", "heap_model_mb X" (after loading, full GC), "heap_after_mb X" (after the
 * keys, full GC), "vm ...".
 */
public final class InputLogicBenchmark {
    private InputLogicBenchmark() {}

    static final int TEXT = FieldPolicy.TYPE_CLASS_TEXT | FieldPolicy.TYPE_TEXT_FLAG_AUTO_CORRECT | FieldPolicy.TYPE_TEXT_FLAG_MULTI_LINE;

    /** The last strip the ranking thread produced (its sequence number and slots). */
    private static final class Strips implements StripRanker.Listener {
        int seq = -1;
        String[] slots;
        boolean completing;

        @Override
        public synchronized void onStrip(int seq, String[] slots, boolean completing) {
            this.seq = seq;
            this.slots = slots;
            this.completing = completing;
            notifyAll();
        }

        @Override
        public synchronized void onMessage(int seq, String message) {
            this.seq = seq;
            this.slots = null;
            notifyAll();
        }

        synchronized void await(int wanted) throws InterruptedException {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (seq < wanted) {
                long left = end - System.nanoTime();
                if (left <= 0) throw new IllegalStateException("no strip for text " + wanted + " after 30 s (last " + seq + ")");
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }
    }

    private static double usedMb() {
        Runtime rt = Runtime.getRuntime();
        for (int i = 0; i < 3; i++) System.gc();
        return (rt.totalMemory() - rt.freeMemory()) / 1048576.0;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6) throw new IllegalArgumentException("usage: InputLogicBenchmark MODEL WORDS WARMUP PASSES PENDING(0|1) DIR");
        double heapBefore = usedMb();
        long t0 = System.nanoTime();
        final Predictor predictor = new Predictor(ModelFile.load(args[0]), Collections.<String>emptyList());
        double loadMs = (System.nanoTime() - t0) / 1e6;
        double heapModel = usedMb();
        List<String> words = Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8);
        int warmup = Integer.parseInt(args[2]);
        int passes = Integer.parseInt(args[3]);
        boolean pending = "1".equals(args[4]);
        File dir = new File(args[5]);
        final HistoryStore store = new HistoryStore(new File(dir, "user.history").getPath());
        final UserHistory history = store.history();
        history.learn(words);  // a history with something to save and choose on
        store.save();
        final List<List<String>> sentences = new ArrayList<List<String>>();
        for (int i = 0; i + 10 <= words.size() && sentences.size() < 20; i += 10) sentences.add(words.subList(i, i + 10));

        final Thread[] rankingThread = new Thread[1];
        ExecutorService ranking = Executors.newSingleThreadExecutor(new ThreadFactory() {
            @Override
            public Thread newThread(Runnable r) {
                rankingThread[0] = new Thread(r, "kblm-ranking");
                return rankingThread[0];
            }
        });
        final Strips strips = new Strips();
        final StripRanker ranker = new StripRanker(ranking, strips);
        final RecentSentences recent = store.recentSentences();
        ranking.submit(new Runnable() {
            @Override
            public void run() {
                ranker.loaded(predictor, history, recent);
            }
        }).get();
        InputLogic logic = new InputLogic(ranker, new InputLogic.Listener() {
            @Override
            public void onStateChanged() {
            }
        });

        final long[] saves = {0, 0, 0};  // saves, choices, bytes saved
        final boolean[] stop = {false};
        Thread idle = null;
        if (pending) {
            idle = new Thread(new Runnable() {
                @Override
                public void run() {
                    Session session = predictor.session(history, false);
                    while (true) {
                        synchronized (stop) {
                            if (stop[0]) return;
                        }
                        try {
                            history.learnWord(null, "idle");  // something to save each time
                            if (store.save()) {
                                synchronized (saves) {
                                    saves[0]++;
                                    saves[2] += store.lastSaveBytes();
                                }
                            }
                        } catch (IOException e) {
                            throw new RuntimeException(e);
                        }
                        session.chooseHistoryWeight(sentences);
                        synchronized (saves) {
                            saves[1]++;
                        }
                    }
                }
            }, "kblm-idle");
        }

        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long me = Thread.currentThread().getId();
        long rankId = rankingThread[0].getId();
        StringBuilder times = new StringBuilder("key_us");
        StringBuilder reads = new StringBuilder("key_reads");
        StringBuilder bytes = new StringBuilder("key_bytes");
        int keys = 0;
        for (int pass = 0; pass < warmup + passes; pass++) {
            boolean timed = pass >= warmup;
            if (timed && pass == warmup && idle != null) {
                idle.start();
                while (true) {  // time keys only once the idle work is under way
                    synchronized (saves) {
                        if (saves[0] > 0 && saves[1] > 0) break;
                    }
                    Thread.sleep(1);
                }
                synchronized (saves) {
                    saves[0] = saves[1] = saves[2] = 0;
                }
            }
            FakeEditor editor = new FakeEditor("");
            logic.startInput(editor, TEXT, 0, 0, 0, false);
            logic.startInputView(false);
            editor.deliver(logic);
            strips.await(logic.sequence());
            keys = 0;
            for (String word : words) {
                String typed = word + " ";
                for (int i = 0; i < typed.length(); i++) {
                    int r0 = logic.editorReads();
                    long b0 = threads.getThreadAllocatedBytes(me) + threads.getThreadAllocatedBytes(rankId);
                    long k0 = System.nanoTime();
                    logic.type(typed.charAt(i));
                    editor.deliver(logic);
                    int seq = logic.sequence();
                    strips.await(seq);
                    String[] slots;
                    boolean completing;
                    synchronized (strips) {
                        slots = strips.slots;
                        completing = strips.completing;
                    }
                    if (slots != null) logic.onStrip(seq, slots, completing);
                    long k1 = System.nanoTime();
                    long b1 = threads.getThreadAllocatedBytes(me) + threads.getThreadAllocatedBytes(rankId);
                    keys++;
                    if (timed) {
                        times.append(' ').append((k1 - k0) / 1000.0);
                        reads.append(' ').append(logic.editorReads() - r0);
                        bytes.append(' ').append(b1 - b0);
                    }
                }
            }
            logic.finishInputView();
            logic.finishInput();
        }
        long[] done;
        synchronized (saves) {
            done = saves.clone();
        }
        if (idle != null) {
            synchronized (stop) {
                stop[0] = true;
            }
            idle.join();
        }
        ranking.shutdown();
        ranking.awaitTermination(10, TimeUnit.SECONDS);
        double heapAfter = usedMb();
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        out.println(times);
        out.println(reads);
        out.println(bytes);
        out.println("keys " + keys);
        out.println("saves " + done[0]);
        out.println("choices " + done[1]);
        out.println("save_bytes " + done[2]);
        out.println("load_ms " + loadMs);
        out.println("heap_before_mb " + heapBefore);
        out.println("heap_model_mb " + heapModel);
        out.println("heap_after_mb " + heapAfter);
        out.println("vm " + System.getProperty("java.vm.name").replace(' ', '_') + " " + System.getProperty("os.arch")
                + " " + System.getProperty("java.version"));
        out.flush();
        predictor.close();
    }
}
