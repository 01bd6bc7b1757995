package org.keyboardlm.core;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * benchmarks/model_fuzz.py's Java worker: reads model file paths on stdin and answers one line
 * per path: "loaded" (ModelFile.load, then one step and one full step), "refused" (a
 * ModelFileException of one line naming the file) or "uncaught" and what was thrown instead.
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
