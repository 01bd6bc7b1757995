import java.io.File;
import java.util.Collections;

import org.keyboardlm.core.FieldPolicy;
import org.keyboardlm.core.HistoryStore;
import org.keyboardlm.core.ModelFile;
import org.keyboardlm.core.Predictor;
import org.keyboardlm.core.TextField;
import org.keyboardlm.core.UserHistory;
import org.keyboardlm.core.Version;

/**
 * The keyboard_lm core embedded in a plain Java program, as an app would use it: one model
 * and one predictor per process, one {@link TextField} per text field, one {@link UserHistory}
 * shared by every field, read and saved through a {@link HistoryStore}, and everything closed at
 * the end.
 *
 * <pre>
 *   android_demo/build_core_jar.sh
 *   javac -cp android_demo/build/keyboardlm-core-VERSION.jar -d android_demo/build/sample android_demo/samples/EmbeddingSample.java
 *   java -cp android_demo/build/keyboardlm-core-VERSION.jar:android_demo/build/sample EmbeddingSample MODEL.tflite HISTORY.json
 * </pre>
 *
 * It types into two fields, one key at a time as a keyboard sends them, and prints the strip
 * after each word: the slots left to right, the most likely word in the middle. The message
 * field learns what is typed; the search field does not: {@link FieldPolicy} decides both from
 * the fields' attributes (Android's {@code EditorInfo.inputType}), see android_demo/EMBEDDING.md.
 * Run it twice: the second run starts from the history the first one saved.
 */
public final class EmbeddingSample {
    private EmbeddingSample() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: EmbeddingSample MODEL.tflite HISTORY.json");
            System.exit(2);
        }
        String modelPath = args[0];
        String historyPath = args[1];
        System.out.println("keyboardlm-core " + Version.NAME);

        // The user's history: read once, shared by every field (its methods are synchronized). A
        // damaged file is never overwritten: the store moves it aside and starts an empty history,
        // and its notice says so in one line.
        boolean known = new File(historyPath).exists();
        HistoryStore store = new HistoryStore(historyPath);
        UserHistory history = store.history();
        if (store.notice() != null) System.out.println("history: " + store.notice());
        System.out.println("history: " + history.numWords() + " words (" + (known ? "loaded" : "new") + ")");

        // The model is mapped, not read onto the heap; ModelFile.fromStream and fromBuffer take
        // other sources (an Android asset: EMBEDDING.md). Closing the predictor closes the model.
        try (Predictor predictor = new Predictor(ModelFile.load(modelPath), Collections.<String>emptyList())) {
            System.out.println("model: " + predictor.vocab.size() + " words");

            // A multi-line message field learns; a one-line search field predicts but learns nothing.
            int messageType = FieldPolicy.TYPE_CLASS_TEXT | FieldPolicy.TYPE_TEXT_FLAG_MULTI_LINE;
            int searchType = FieldPolicy.TYPE_CLASS_TEXT;
            TextField message = new TextField(predictor, history);
            message.reset(FieldPolicy.mayLearn(messageType, 0));
            TextField search = new TextField(predictor, history);
            search.reset(FieldPolicy.mayLearn(searchType, 0));

            type("message", message, "how are you? i like it. you ");
            type("search", search, "weather how are ");

            // Save when typing stops, never per keystroke: store.save() appends what changed; close(),
            // when the app goes away, writes one full file (the JSON Python's UserHistory reads).
            store.close();
            System.out.println("history: " + history.numWords() + " words saved");
        }
    }

    /** Sends {@code text} to {@code field} one character at a time; prints the strip after each space. */
    private static void type(String name, TextField field, String text) {
        for (int end = 1; end <= text.length(); end++) {
            String beforeCursor = text.substring(0, end);
            TextField.Strip strip = field.update(beforeCursor);
            if (text.charAt(end - 1) == ' ') {
                String[] slots = strip.slots();
                System.out.println(name + " \"" + beforeCursor + "\" -> " + slot(slots[0]) + " | " + slot(slots[1]) + " | "
                        + slot(slots[2]));
            }
        }
    }

    private static String slot(String word) {
        return word == null ? "-" : word;
    }
}
