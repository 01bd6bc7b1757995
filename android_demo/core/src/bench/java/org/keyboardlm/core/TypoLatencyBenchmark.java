package org.keyboardlm.core;

import java.io.IOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.List;

/**
 * The Java side of benchmarks/latency/typo_latency.py: {@code Session.complete} with typo correction and
 * without it, timed call by call on one thread over the same typed letters. Not part of the APK.
 *
 * <pre>java -cp CLASSES org.keyboardlm.core.TypoLatencyBenchmark MODEL.tflite TYPED.txt WARMUP PASSES</pre>
 *
 * TYPED.txt holds one word a line, "intended TAB typed" (the typed letters may carry a slip). Two
 * predictors share one loaded model, one with {@link TypoModel#DEFAULT}, one without typos; each
 * has a session that commits the intended words (untimed). At the start of each pass the first
 * forgets the typed letters it completed ({@link Ranker#forgetTyped}: its cache of recent typed
 * letters starts empty; its index, built with it as in the app, stays). For every word, after its
 * predecessor is committed, each prefix of the typed letters is completed
 * ({@code complete(prefix, 3)}) by both sessions, the order alternating prefix by prefix. WARMUP
 * passes run first, untimed, so the JIT compiles. Prints "on_us ..." and "off_us ..." (wall-clock
 * microseconds per call over the timed passes, in call order), "on_cpu_us ..." and "off_cpu_us ..."
 * (the thread's CPU time of the same calls), "letters ..." (each call's prefix length), "load_ms X"
 * (the model and both predictors, the typo index built), "jit_ms X" (the JIT's compile time during
 * the timed passes, -1 where the VM does not tell) and "vm ...".
 */
public final class TypoLatencyBenchmark {
    private TypoLatencyBenchmark() {}

    public static void main(String[] args) throws IOException, ModelFileException {
        long l0 = System.nanoTime();
        ModelFile model = ModelFile.load(args[0]);
        Predictor on = new Predictor(model, Collections.<String>emptyList(), PrefixCache.DEFAULT_SIZE, TypoModel.DEFAULT);
        Predictor off = new Predictor(model, Collections.<String>emptyList(), PrefixCache.DEFAULT_SIZE, null);
        long l1 = System.nanoTime();
        List<String> lines = Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8);
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        boolean jitTimed = jit != null && jit.isCompilationTimeMonitoringSupported();
        long jitMs = 0;
        int warmup = Integer.parseInt(args[2]);
        int passes = Integer.parseInt(args[3]);
        StringBuilder onUs = new StringBuilder("on_us");
        StringBuilder offUs = new StringBuilder("off_us");
        StringBuilder onCpu = new StringBuilder("on_cpu_us");
        StringBuilder offCpu = new StringBuilder("off_cpu_us");
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        StringBuilder letters = new StringBuilder("letters");
        int calls = 0;
        for (int pass = 0; pass < warmup + passes; pass++) {
            boolean timed = pass >= warmup;
            on.ranker.forgetTyped();  // each pass types its letters for the first time
            Session a = on.session();
            Session b = off.session();
            long jit0 = jitTimed ? jit.getTotalCompilationTime() : 0;
            for (String line : lines) {
                if (line.isEmpty()) continue;
                String intended = line.substring(0, line.indexOf('\t'));
                String typed = line.substring(line.indexOf('\t') + 1);
                for (int i = 1; i <= typed.length(); i++) {
                    String prefix = typed.substring(0, i);
                    boolean onFirst = (calls++ & 1) == 0;
                    long c0 = threads.getCurrentThreadCpuTime();
                    long t0 = System.nanoTime();
                    if (onFirst) a.complete(prefix, 3);
                    else b.complete(prefix, 3);
                    long t1 = System.nanoTime();
                    long c1 = threads.getCurrentThreadCpuTime();
                    long t1b = System.nanoTime();
                    if (onFirst) b.complete(prefix, 3);
                    else a.complete(prefix, 3);
                    long t2 = System.nanoTime();
                    long c2 = threads.getCurrentThreadCpuTime();
                    if (timed) {
                        onUs.append(' ').append((onFirst ? t1 - t0 : t2 - t1b) / 1000.0);
                        offUs.append(' ').append((onFirst ? t2 - t1b : t1 - t0) / 1000.0);
                        onCpu.append(' ').append((onFirst ? c1 - c0 : c2 - c1) / 1000.0);
                        offCpu.append(' ').append((onFirst ? c2 - c1 : c1 - c0) / 1000.0);
                        letters.append(' ').append(i);
                    }
                }
                a.commit(intended + " ");
                b.commit(intended + " ");
            }
            if (timed && jitTimed) jitMs += jit.getTotalCompilationTime() - jit0;
        }
        System.out.println(onUs);
        System.out.println(offUs);
        System.out.println(onCpu);
        System.out.println(offCpu);
        System.out.println(letters);
        System.out.println("load_ms " + (l1 - l0) / 1e6);
        System.out.println("jit_ms " + (jitTimed ? jitMs : -1));
        System.out.println("vm " + (System.getProperty("java.vm.name") + " " + System.getProperty("os.arch") + " "
                + System.getProperty("java.version")).replace(' ', '_'));
    }
}
