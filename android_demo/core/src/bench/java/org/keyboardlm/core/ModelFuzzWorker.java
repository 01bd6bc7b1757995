package org.keyboardlm.core;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * benchmarks/export/model_fuzz.py's Java worker: reads model file paths on stdin and answers one line
 * per path: "loaded" (ModelFile.load, then one step and one full step), "refused" (a
 * ModelFileException of one line naming the file) or "uncaught" and what was thrown instead.
 * A line "time N PATH" is answered with the median milliseconds of N loads of PATH.
 * Uses only what every revision of the core compared has (ModelFile.load, the engine's steps).
 */
public final class ModelFuzzWorker {
    private ModelFuzzWorker() {}

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("ready");
        System.out.flush();
        String path;
        while ((path = in.readLine()) != null) {
            if (path.startsWith("time ")) {  // "time N PATH": median milliseconds of N loads
                String[] parts = path.split(" ", 3);
                double[] times = new double[Integer.parseInt(parts[1])];
                for (int i = 0; i < times.length; i++) {
                    long t = System.nanoTime();
                    ModelFile.load(parts[2]);
                    times[i] = (System.nanoTime() - t) / 1e6;
                }
                java.util.Arrays.sort(times);
                System.out.println("time " + times[times.length / 2]);
                System.out.flush();
                continue;
            }
            String out;
            try {
                ModelFile m = ModelFile.load(path);
                float[] state = m.engine.initialState();
                m.engine.step(2, state);
                m.engine.stepFull(2, state);
                out = "loaded";
            } catch (ModelFileException e) {
                String msg = String.valueOf(e.getMessage());
                out = msg.startsWith(path + ": ") && !msg.contains("\n") ? "refused" : "uncaught ModelFileException-not-one-line";
            } catch (Throwable t) {
                out = "uncaught " + t.getClass().getSimpleName();
            }
            System.out.println(out);
            System.out.flush();
        }
    }
}
