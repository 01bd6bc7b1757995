package org.keyboardlm.core;

import java.io.FileInputStream;
import java.io.InputStream;
import java.io.RandomAccessFile;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.Collections;

/**
 * The Java heap a loaded model keeps: used heap after full GCs before loading, and again with
 * the {@link ModelFile}, a {@link Predictor} and one {@link Session} that has ranked a strip
 * held. One load per JVM; benchmarks/android/android_heap_benchmark.py runs it for each way
 * of loading, compiled against this tree and against an earlier revision, and searches the
 * largest ballast each load still fits beside (from which the peak the load needs follows).
 *
 * <pre>java -XX:+UseSerialGC -cp CLASSES org.keyboardlm.core.HeapBenchmark MODE MODEL.tflite [BALLAST_KB]</pre>
 *
 * MODE: {@code path} ({@code ModelFile.load}), {@code bytes} (the file read into an array,
 * then {@code fromBytes}, the array dropped by the caller), {@code buffer} (the file mapped,
 * {@code fromBuffer}), {@code stream} ({@code fromStream} of a FileInputStream), {@code none}
 * (no model: the JVM's own floor). {@code buffer} and {@code stream} are called by reflection so
 * that this class also compiles against revisions without them (it then prints "unsupported").
 * BALLAST_KB: an array of that size is allocated first and kept live, so that the heap left
 * for the load is known to the kilobyte (-Xmx itself is rounded to 2 MB).
 * Prints one JSON line; exit status 3 on OutOfMemoryError, 4 for an unsupported mode.
 */
public final class HeapBenchmark {
    private HeapBenchmark() {}

    private static long usedAfterGc() throws InterruptedException {
        Runtime rt = Runtime.getRuntime();
        long best = Long.MAX_VALUE;
        int stable = 0;
        for (int i = 0; i < 50 && stable < 3; i++) {
            System.gc();
            Thread.sleep(5);
            long used = rt.totalMemory() - rt.freeMemory();
            if (used < best) {
                best = used;
                stable = 0;
            } else {
                stable++;
            }
        }
        return best;
    }

    private static Object load(String mode, String path) throws Exception {
        if (mode.equals("path")) return ModelFile.load(path);
        if (mode.equals("bytes")) {
            byte[] data;
            try (RandomAccessFile f = new RandomAccessFile(path, "r")) {
                data = new byte[(int) f.length()];
                f.readFully(data);
            }
            return ModelFile.fromBytes(path, data);
        }
        if (mode.equals("buffer")) {
            ByteBuffer mapped;
            try (RandomAccessFile f = new RandomAccessFile(path, "r")) {
                mapped = f.getChannel().map(FileChannel.MapMode.READ_ONLY, 0, f.length());
            }
            return call("fromBuffer", ByteBuffer.class, path, mapped);
        }
        if (mode.equals("stream")) {
            try (InputStream in = new FileInputStream(path)) {
                return call("fromStream", InputStream.class, path, in);
            }
        }
        throw new IllegalArgumentException("unknown mode " + mode + " (path, bytes, buffer, stream, none)");
    }

    private static Object call(String name, Class<?> source, String path, Object arg) throws Exception {
        Method m;
        try {
            m = ModelFile.class.getMethod(name, String.class, source);
        } catch (NoSuchMethodException e) {
            System.out.println("{\"mode\": \"" + name + "\", \"ok\": false, \"error\": \"unsupported\"}");
            System.exit(4);
            return null;
        }
        try {
            return m.invoke(null, path, arg);
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            if (cause instanceof Exception) throw (Exception) cause;
            throw (Error) cause;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2 && args.length != 3) {
            System.err.println("usage: HeapBenchmark path|bytes|buffer|stream|none MODEL.tflite [BALLAST_KB]");
            System.exit(2);
        }
        String mode = args[0];
        byte[] ballast;
        try {
            ballast = new byte[args.length == 3 ? Integer.parseInt(args[2]) * 1024 : 0];
        } catch (OutOfMemoryError e) {
            System.out.println("{\"mode\": \"" + mode + "\", \"ok\": false, \"error\": \"OutOfMemoryError (ballast)\"}");
            System.exit(3);
            return;
        }
        try {
            run(mode, args[1], ballast);
        } catch (OutOfMemoryError e) {
            System.out.println("{\"mode\": \"" + mode + "\", \"ok\": false, \"error\": \"OutOfMemoryError\"}");
            System.exit(3);
        }
    }

    private static void run(String mode, String path, byte[] ballast) throws Exception {
        long baseline = usedAfterGc() - ballast.length;
        ModelFile model = null;
        Predictor predictor = null;
        Session session = null;
        long loadNanos = 0;
        String top = "";
        if (!mode.equals("none")) {
            long t0 = System.nanoTime();
            model = (ModelFile) load(mode, path);
            loadNanos = System.nanoTime() - t0;
            predictor = new Predictor(model, Collections.<String>emptyList());
            session = predictor.session();
            session.commit("how are ");
            top = session.suggestions(3).get(0).word;
        }
        long after = usedAfterGc() - ballast.length;
        StringBuilder out = new StringBuilder();
        out.append("{\"mode\": \"").append(mode).append("\", \"ok\": true")
                .append(", \"baseline_bytes\": ").append(baseline)
                .append(", \"after_load_bytes\": ").append(after)
                .append(", \"retained_bytes\": ").append(after - baseline)
                .append(", \"load_ms\": ").append(String.format(java.util.Locale.ROOT, "%.1f", loadNanos / 1e6))
                .append(", \"heap_max_bytes\": ").append(Runtime.getRuntime().maxMemory())
                .append(", \"ballast_bytes\": ").append(ballast.length)
                .append(", \"vm\": \"").append(System.getProperty("java.vm.name")).append(' ')
                .append(System.getProperty("java.vm.version")).append(' ').append(System.getProperty("os.arch")).append('"');
        if (model != null) {
            out.append(", \"vocab_size\": ").append(model.vocab.size()).append(", \"state_size\": ").append(model.stateSize())
                    .append(", \"top_after_how_are\": \"").append(top).append('"');
        }
        out.append('}');
        System.out.println(out);
        // Keep everything reachable until the second measurement is printed.
        if (session != null && predictor != null && model.vocab.size() < ballast.length - Integer.MAX_VALUE) {
            System.out.println(session.suggestions(1));
        }
    }
}
