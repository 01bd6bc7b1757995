package org.keyboardlm.core;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The Java side of benchmarks/android/java_arm64_benchmark.py: the keyboard's two per-word calls, timed
 * interleaved word by word on one thread, as benchmarks/latency/latency_benchmark.py times the Python
 * predictor. Run the same way on any JVM (the host's, or an aarch64 one under qemu). Not part of the APK.
 *
 * <pre>java -cp CLASSES org.keyboardlm.core.KeystrokeBenchmark MODEL.tflite WORDS.txt WARMUP PASSES</pre>
 *
 * Per word of each pass: a session's {@code commit(word + " ")} + {@code suggestions(3)} (a user who
 * takes words from the strip), then the stateless {@code Predictor.suggest(field, 3)} with the text
 * field one word longer, first on a predictor without a prefix cache (it replays the field's current
 * chunk, at most seq_len steps), then on the default one (its {@link PrefixCache}: one step). Both
 * predictors share one loaded model. WARMUP passes run first, untimed, so the JIT compiles. Prints,
 * one line each: "load_ms X", "session_us ...", "stateless_us ..." and "stateless_cached_us ..."
 * (microseconds per word over the timed passes), "ids ..." (the session's top-3 ids per word of the
 * last pass), "mismatches N" (words where a stateless answer differs from the session's top 3, or
 * the cached one from the uncached one), "heap_peak_mb X" (sum of the heap pools' peak use),
 * "heap_after_gc_mb X" (what the loaded predictors, the cache included, keep), "heap_max_mb X",
 * "rss_peak_mb X" (the process's VmHWM, -1 where unknown),
 * "model V S" (vocabulary and state size) and "vm ..." (java.vm.name, os.arch, java.version).
 */
public final class KeystrokeBenchmark {
    private KeystrokeBenchmark() {}

    public static void main(String[] args) throws IOException, ModelFileException {
        long l0 = System.nanoTime();
        Predictor p = new Predictor(ModelFile.load(args[0]), Collections.<String>emptyList());
        long l1 = System.nanoTime();
        Predictor uncached = new Predictor(p.model, Collections.<String>emptyList(), 0);
        List<String> words = Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8);
        int warmup = Integer.parseInt(args[2]);
        int passes = Integer.parseInt(args[3]);
        StringBuilder session = new StringBuilder("session_us");
        StringBuilder stateless = new StringBuilder("stateless_us");
        StringBuilder cached = new StringBuilder("stateless_cached_us");
        StringBuilder ids = new StringBuilder();
        int mismatches = 0;
        for (int pass = 0; pass < warmup + passes; pass++) {
            boolean timed = pass >= warmup;
            ids.setLength(0);
            Session s = p.session();
            StringBuilder field = new StringBuilder();
            for (String word : words) {
                field.append(word).append(' ');
                String context = field.toString();
                long t0 = System.nanoTime();
                s.commit(word + " ");
                List<Suggestion> top = s.suggestions(3);
                long t1 = System.nanoTime();
                List<Suggestion> replayed = uncached.suggest(context, 3);
                long t2 = System.nanoTime();
                List<Suggestion> fromCache = p.suggest(context, 3);
                long t3 = System.nanoTime();
                if (!idsOf(top).equals(idsOf(replayed)) || !same(replayed, fromCache)) mismatches++;
                if (timed) {
                    session.append(' ').append((t1 - t0) / 1000.0);
                    stateless.append(' ').append((t2 - t1) / 1000.0);
                    cached.append(' ').append((t3 - t2) / 1000.0);
                }
                for (int i = 0; i < 3; i++) ids.append(' ').append(i < top.size() ? top.get(i).id : -1);
            }
        }
        long peak = 0;
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP && pool.getPeakUsage() != null) peak += pool.getPeakUsage().getUsed();
        }
        System.gc();
        long after = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        out.println("load_ms " + (l1 - l0) / 1e6);
        out.println(session);
        out.println(stateless);
        out.println(cached);
        out.println("ids" + ids);
        out.println("mismatches " + mismatches);
        out.println("heap_peak_mb " + peak / 1048576.0);
        out.println("heap_after_gc_mb " + after / 1048576.0);
        out.println("heap_max_mb " + Runtime.getRuntime().maxMemory() / 1048576.0);
        out.println("rss_peak_mb " + rssPeakMb());
        // Used after the GC, so the predictors are still reachable there (heap_after_gc_mb counts them).
        out.println("model " + p.vocab.size() + " " + uncached.model.stateSize());
        out.println("vm " + System.getProperty("java.vm.name").replace(' ', '_') + " " + System.getProperty("os.arch")
                + " " + System.getProperty("java.version"));
        out.flush();
    }

    /** Same ids and log-prob bits, in order. */
    private static boolean same(List<Suggestion> a, List<Suggestion> b) {
        if (a.size() != b.size()) return false;
        for (int i = 0; i < a.size(); i++) {
            if (a.get(i).id != b.get(i).id) return false;
            if (Float.floatToIntBits(a.get(i).logProb) != Float.floatToIntBits(b.get(i).logProb)) return false;
        }
        return true;
    }

    private static List<Integer> idsOf(List<Suggestion> top) {
        List<Integer> out = new ArrayList<Integer>();
        for (Suggestion s : top) out.add(s.id);
        return out;
    }

    /** VmHWM of /proc/self/status in MB, or -1 (no such file: not Linux). */
    private static double rssPeakMb() {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(new FileInputStream("/proc/self/status"),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (line.startsWith("VmHWM:")) return Long.parseLong(line.split("\\s+")[1]) / 1024.0;
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }
}
