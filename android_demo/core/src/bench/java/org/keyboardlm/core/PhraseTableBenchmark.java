package org.keyboardlm.core;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The Java side of benchmarks/latency/phrase_table_latency.py: what a model file's phrase table adds to the
 * keyboard's calls, timed in one JVM against the same loaded model with the table set aside (the
 * public parts constructor, without the table: the model alone ranks). The two variants' calls
 * alternate word by word and key by key, which goes first alternating too, so a shared machine's
 * drift and preemptions hit both alike. Run the same way on any JVM (the host's, or an aarch64 one
 * under qemu). Not part of the APK.
 *
 * <pre>java -cp CLASSES org.keyboardlm.core.PhraseTableBenchmark MODEL.tflite WORDS.txt WARMUP PASSES</pre>
 *
 * Per word of each pass, for each variant: a session's {@code commit(word + " ")} + {@code suggestions(3)}
 * (as {@link KeystrokeBenchmark}), the stateless {@code suggest(field, 3)} without a prefix cache, then
 * with one. Per typed character (each word's letters, then a space), for each variant: a
 * {@link TextField} with a {@link UserHistory} (the words learnt once first) {@code update(text, true)}
 * + {@code slots()}, the ranking thread's work for a key (as {@link FieldKeystrokeBenchmark}). WARMUP
 * passes run first, untimed. Each call is timed twice: wall-clock ({@code System.nanoTime}, what a
 * user waits, preemptions included) and the timing thread's CPU time ({@code ThreadMXBean}: the work
 * alone, which a loaded machine's preemptions do not inflate). Prints, one line each, for V in "on"
 * and "off" and C in "session", "stateless", "cached" (per word) and "key" (per key): "V_C_us ..."
 * (wall) and "V_C_cpu_us ..." (CPU), over the timed passes; then "keys N" (keys per pass), "phrases N" (the table's contexts), "changed N" (words of the last
 * pass whose session top 3 the table changes), "mismatches N" (words where a stateless answer differs
 * from its session's top 3, or the cached one from the uncached one) and "vm ...".
 */
public final class PhraseTableBenchmark {
    private PhraseTableBenchmark() {}

    /** One variant: its predictors (default cache, and none), its user history and what it timed. */
    private static final class Variant {
        final String name;
        final Predictor cached;
        final Predictor uncached;
        final UserHistory history = new UserHistory();
        final Timing session;
        final Timing stateless;
        final Timing fromCache;
        final Timing key;
        Session s;
        TextField field;
        List<Integer> top = new ArrayList<Integer>();

        Variant(String name, ModelFile model, List<String> words) {
            this.name = name;
            cached = new Predictor(model, Collections.<String>emptyList());
            uncached = new Predictor(model, Collections.<String>emptyList(), 0);
            history.learn(words);
            session = new Timing(name + "_session");
            stateless = new Timing(name + "_stateless");
            fromCache = new Timing(name + "_cached");
            key = new Timing(name + "_key");
        }

        void newPass() {
            s = cached.session();
            field = new TextField(cached, history);
            field.update("", false);
        }
    }

    /** One call's samples: wall-clock and the thread's CPU time, microseconds. */
    private static final class Timing {
        final StringBuilder wall;
        final StringBuilder cpu;

        Timing(String name) {
            wall = new StringBuilder(name + "_us");
            cpu = new StringBuilder(name + "_cpu_us");
        }

        void add(long wallNanos, long cpuNanos) {
            wall.append(' ').append(wallNanos / 1000.0);
            cpu.append(' ').append(cpuNanos / 1000.0);
        }
    }

    public static void main(String[] args) throws IOException, ModelFileException {
        if (args.length != 4) {
            throw new IllegalArgumentException("usage: PhraseTableBenchmark MODEL WORDS WARMUP PASSES");
        }
        ModelFile model = ModelFile.load(args[0]);
        if (model.phrases == null) throw new IllegalArgumentException(args[0] + ": the file carries no phrase table");
        ModelFile alone = new ModelFile(model.path, model.vocab, model.engine, model.seqLen, model.metadataJson);
        List<String> words = Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8);
        int warmup = Integer.parseInt(args[2]);
        int passes = Integer.parseInt(args[3]);
        Variant[] both = {new Variant("on", model, words), new Variant("off", alone, words)};
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        int keys = 0;
        int changed = 0;
        int mismatches = 0;
        long turn = 0;
        for (int pass = 0; pass < warmup + passes; pass++) {
            boolean timed = pass >= warmup;
            for (Variant v : both) v.newPass();
            StringBuilder text = new StringBuilder();
            keys = 0;
            changed = 0;
            for (String word : words) {
                String typed = word + " ";
                for (int i = 0; i < typed.length(); i++) {
                    text.append(typed.charAt(i));
                    String before = text.toString();
                    for (int j = 0; j < 2; j++) {
                        Variant v = both[(int) ((turn + j) % 2)];
                        long c0 = threads.getCurrentThreadCpuTime();
                        long t0 = System.nanoTime();
                        v.field.update(before, true).slots();
                        long t1 = System.nanoTime();
                        long c1 = threads.getCurrentThreadCpuTime();
                        if (timed) v.key.add(t1 - t0, c1 - c0);
                    }
                    turn++;
                    keys++;
                }
                String context = text.toString();
                for (int j = 0; j < 2; j++) {
                    Variant v = both[(int) ((turn + j) % 2)];
                    long c0 = threads.getCurrentThreadCpuTime();
                    long t0 = System.nanoTime();
                    v.s.commit(typed);
                    List<Suggestion> top = v.s.suggestions(3);
                    long t1 = System.nanoTime();
                    long c1 = threads.getCurrentThreadCpuTime();
                    List<Suggestion> replayed = v.uncached.suggest(context, 3);
                    long t2 = System.nanoTime();
                    long c2 = threads.getCurrentThreadCpuTime();
                    List<Suggestion> cached = v.cached.suggest(context, 3);
                    long t3 = System.nanoTime();
                    long c3 = threads.getCurrentThreadCpuTime();
                    if (timed) {
                        v.session.add(t1 - t0, c1 - c0);
                        v.stateless.add(t2 - t1, c2 - c1);
                        v.fromCache.add(t3 - t2, c3 - c2);
                    }
                    v.top = idsOf(top);
                    if (!v.top.equals(idsOf(replayed)) || !idsOf(replayed).equals(idsOf(cached))) mismatches++;
                }
                turn++;
                if (!both[0].top.equals(both[1].top)) changed++;
            }
        }
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        for (Variant v : both) {
            for (Timing t : new Timing[] {v.session, v.stateless, v.fromCache, v.key}) {
                out.println(t.wall);
                out.println(t.cpu);
            }
        }
        out.println("keys " + keys);
        out.println("phrases " + model.phrases.size());
        out.println("changed " + changed);
        out.println("mismatches " + mismatches);
        out.println("vm " + System.getProperty("java.vm.name").replace(' ', '_') + " " + System.getProperty("os.arch")
                + " " + System.getProperty("java.version"));
        out.flush();
    }

    private static List<Integer> idsOf(List<Suggestion> top) {
        List<Integer> out = new ArrayList<Integer>();
        for (Suggestion s : top) out.add(s.id);
        return out;
    }
}
