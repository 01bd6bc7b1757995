package org.keyboardlm.core;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.List;

/**
 * The Java side of benchmarks/android/android_engine_benchmark.py: times the Java core on one thread,
 * pass by pass on command, so the Python script can interleave it with the TFLite interpreter
 * in one run. Not part of the APK.
 *
 * <pre>java -cp CLASSES org.keyboardlm.core.EngineBenchmark MODEL.tflite WORDS.txt</pre>
 *
 * stdin commands, one line each, answered on stdout:
 * <ul>
 * <li>{@code pass}: stream the words as keyboard_lm/inference/bench.py does, per word
 *     {@code commit(word + " ")} then {@code suggestions(3)} (a suggestion), then
 *     {@code complete(first two code points, 3)} (a completion); prints "suggest_us ...",
 *     "complete_us ..." (microseconds per word), "suggest_cpu_us ..." (the suggestion's CPU
 *     time on this thread, which time the thread spends descheduled on a busy machine does not
 *     count), "ids ..." (3 ids per word) and "logprobs ...".
 * <li>{@code raw N}: N {@code stepFull} calls from the state of the last one; prints "raw_us ...".
 * <li>{@code ops N}: N {@code stepFull} calls over the words' ids (the state restarting every
 *     seq_len inputs, as in a session), each operator timed on its own (opt-in: the timer
 *     adds two clock reads per operator); prints "ops K STEP_US" (K operators, mean
 *     microseconds per whole call) then K lines "op MEAN_US LABEL" in plan order, LABEL being
 *     the operator's position in the file, builtin name and output shape.
 * <li>{@code quit}.
 * </ul>
 */
public final class EngineBenchmark {
    private EngineBenchmark() {}

    public static void main(String[] args) throws IOException, ModelFileException {
        Predictor p = new Predictor(ModelFile.load(args[0]), Collections.<String>emptyList());
        List<String> words = Files.readAllLines(Paths.get(args[1]), StandardCharsets.UTF_8);
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        out.println("ready " + p.vocab.size() + " " + p.model.stateSize() + " " + words.size());
        out.flush();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] cmd = line.trim().split(" ");
            if (cmd[0].equals("quit")) break;
            if (cmd[0].equals("pass")) {
                pass(p, words, out);
            } else if (cmd[0].equals("raw")) {
                raw(p.model.engine, Integer.parseInt(cmd[1]), out);
            } else if (cmd[0].equals("ops")) {
                ops(p, words, Integer.parseInt(cmd[1]), out);
            } else {
                out.println("error unknown command " + line);
            }
            out.flush();
        }
    }

    private static void pass(Predictor p, List<String> words, PrintStream out) {
        StringBuilder suggest = new StringBuilder("suggest_us");
        StringBuilder complete = new StringBuilder("complete_us");
        StringBuilder cpu = new StringBuilder("suggest_cpu_us");
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        StringBuilder ids = new StringBuilder("ids");
        StringBuilder logProbs = new StringBuilder("logprobs");
        Session s = p.session();
        for (String word : words) {
            String prefix = word.substring(0, word.offsetByCodePoints(0, Math.min(2, word.codePointCount(0, word.length()))));
            long c0 = threads.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            s.commit(word + " ");
            List<Suggestion> top = s.suggestions(3);
            long t1 = System.nanoTime();
            long c1 = threads.getCurrentThreadCpuTime();
            s.complete(prefix, 3);
            long t2 = System.nanoTime();
            suggest.append(' ').append((t1 - t0) / 1000.0);
            complete.append(' ').append((t2 - t1) / 1000.0);
            cpu.append(' ').append((c1 - c0) / 1000.0);
            for (int i = 0; i < 3; i++) {
                ids.append(' ').append(i < top.size() ? top.get(i).id : -1);
                logProbs.append(' ').append(i < top.size() ? top.get(i).logProb : Float.NaN);
            }
        }
        out.println(suggest);
        out.println(complete);
        out.println(cpu);
        out.println(ids);
        out.println(logProbs);
    }

    private static void raw(StepEngine engine, int n, PrintStream out) {
        StringBuilder b = new StringBuilder("raw_us");
        float[] state = engine.initialState();
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            state = engine.stepFull(5, state).state;
            b.append(' ').append((System.nanoTime() - t0) / 1000.0);
        }
        out.println(b);
    }

    private static void ops(Predictor p, List<String> words, int n, PrintStream out) {
        if (!(p.model.engine instanceof JavaStepEngine)) {
            out.println("ops 0 0");
            return;
        }
        JavaStepEngine engine = (JavaStepEngine) p.model.engine;
        String[] labels = engine.stepFullOperators();
        long[] nanos = new long[labels.length];
        float[] state = engine.initialState();
        long total = 0;
        for (int i = 0; i < n; i++) {
            int token = Vocabulary.BOS;
            if (i % p.model.seqLen == 0) {
                state = engine.initialState();
            } else {
                token = p.vocab.idOf(words.get(i % words.size()));
            }
            long t0 = System.nanoTime();
            state = engine.profileStepFull(token, state, nanos).state;
            total += System.nanoTime() - t0;
        }
        out.println("ops " + labels.length + " " + total / 1000.0 / n);
        for (int i = 0; i < labels.length; i++) out.println("op " + nanos[i] / 1000.0 / n + " " + labels[i]);
    }
}
