package org.keyboardlm.demo;

import android.inputmethodservice.InputMethodService;
import android.inputmethodservice.Keyboard;
import android.inputmethodservice.KeyboardView;
import android.os.Handler;
import android.os.HandlerThread;
import android.os.Looper;
import android.os.Process;
import android.util.Log;
import android.view.KeyEvent;
import android.view.View;
import android.view.inputmethod.EditorInfo;
import android.view.inputmethod.InputConnection;
import android.widget.TextView;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import org.keyboardlm.core.ModelFile;
import org.keyboardlm.core.ModelFileException;
import org.keyboardlm.core.Predictor;
import org.keyboardlm.core.RecentSentences;
import org.keyboardlm.core.Session;
import org.keyboardlm.core.TextField;
import org.keyboardlm.core.UserHistory;

/**
 * The keyboard: keys edit the field on the UI thread; after every edit the text before the
 * cursor goes to one background thread, where {@link TextField} (the core) brings the
 * recurrent state along and ranks the 3-slot strip, which comes back to the UI thread.
 * Everything a test needs lives in the core; this class only moves text and results between
 * the editor, the thread and the views. Any failure shows one line in the strip; typing
 * keeps working.
 *
 * <p>User history: one {@link UserHistoryStore} history per user, read from the app's private
 * storage when the keyboard starts and written there when the input view finishes; the
 * TextField learns what is typed except in password, no-suggestion and incognito fields
 * ({@link TextField#mayLearn}). It never leaves the device.
 *
 * <p>The history's weight: the sentences a typed terminator finishes in those fields are kept
 * in memory ({@link RecentSentences}, at most 200, never written); when the input view
 * finishes and at least 50 arrived since the last choice, the background thread chooses the
 * user's weight on them ({@link Session#chooseHistoryWeight}, over the history as it was
 * before they were learnt) and saves the history. Bounded work (at most 4,000 words: one
 * model step and six rankings each) while the keyboard is hidden.
 *
 * <p>Password, no-suggestion and raw fields ({@link TextField#mayPredict} false) get no strip,
 * and their text never reaches the background thread: the model does not run there.
 */
public final class KeyboardService extends InputMethodService implements KeyboardView.OnKeyboardActionListener {
    /** Characters of context read before the cursor (the session restarts every seq_len words anyway). */
    private static final int WINDOW = 1000;
    private static final String MODEL = "model.tflite";
    private static final String BLOCKLIST = "blocklist.txt";
    private static final String TAG = "kblm";

    private HandlerThread thread;
    private Handler background;
    private Handler ui;
    /** Owned by the background thread. */
    private TextField field;
    /** Set with {@link #field} by the background thread: the model, and the newest sentences to choose the weight on. */
    private Predictor predictor;
    private RecentSentences recent;
    /** Written by the background thread, read by the UI thread for a new view. */
    private volatile String loadError;
    /** Latest text not yet ranked; the background thread takes it, so bursts of keys coalesce. */
    private final AtomicReference<String> pending = new AtomicReference<String>();

    // UI thread only.
    private final TextView[] slots = new TextView[TextField.SLOTS];
    private String[] shown = new String[TextField.SLOTS];
    private String lastText;
    /** False in a field where the keyboard must not predict (see {@link TextField#mayPredict}). */
    private boolean predicting = true;
    /** True after such a field: the next field resets the session even when it is a restart. */
    private boolean skippedField;
    private View strip;
    private KeyboardView keyboardView;
    private Keyboard keyboard;

    @Override
    public void onCreate() {
        super.onCreate();
        ui = new Handler(Looper.getMainLooper());
        thread = new HandlerThread("kblm-inference", Process.THREAD_PRIORITY_BACKGROUND);
        thread.start();
        background = new Handler(thread.getLooper());
        background.post(new Runnable() {
            @Override
            public void run() {
                load();
            }
        });
    }

    @Override
    public void onDestroy() {
        thread.quitSafely();
        super.onDestroy();
    }

    /** Background thread: the model pushed to the app's files directory, else the one in the APK. */
    private void load() {
        try {
            File dir = getExternalFilesDir(null);
            File pushed = dir == null ? null : new File(dir, MODEL);
            ModelFile model = pushed != null && pushed.isFile()
                    ? ModelFile.load(pushed.getPath())
                    : ModelFile.fromBytes("assets/" + MODEL, readAsset(MODEL));
            UserHistory history = UserHistoryStore.get(this);  // never throws: a damaged file gives an empty one
            predictor = new Predictor(model, blocklist());
            recent = UserHistoryStore.recentSentences(this);
            field = new TextField(predictor, history);
            loadError = null;
        } catch (ModelFileException e) {
            loadError = e.getMessage();
        } catch (IOException e) {
            loadError = "assets/" + MODEL + ": " + e.getMessage();
        } catch (RuntimeException | OutOfMemoryError e) {
            loadError = "cannot load the model: " + e;
        }
        if (loadError != null) showMessage(loadError);
    }

    private byte[] readAsset(String name) throws IOException {
        InputStream in = getAssets().open(name);
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            byte[] buf = new byte[65536];
            int n;
            while ((n = in.read(buf)) > 0) out.write(buf, 0, n);
            return out.toByteArray();
        } finally {
            in.close();
        }
    }

    /** assets/blocklist.txt, one word a line, if the APK has one. */
    private List<String> blocklist() {
        List<String> words = new ArrayList<String>();
        try {
            for (String line : new String(readAsset(BLOCKLIST), StandardCharsets.UTF_8).split("\n")) words.add(line.trim());
        } catch (IOException e) {
            // no blocklist in this APK
        }
        return words;
    }

    @Override
    public View onCreateInputView() {
        View v = getLayoutInflater().inflate(R.layout.input, null);
        int[] ids = {R.id.slot_left, R.id.slot_center, R.id.slot_right};
        for (int i = 0; i < ids.length; i++) {
            slots[i] = (TextView) v.findViewById(ids[i]);
            final int slot = i;
            slots[i].setOnClickListener(new View.OnClickListener() {
                @Override
                public void onClick(View view) {
                    pick(slot);
                }
            });
        }
        strip = v.findViewById(R.id.strip);
        strip.setVisibility(predicting ? View.VISIBLE : View.GONE);
        keyboardView = (KeyboardView) v.findViewById(R.id.keyboard);
        keyboard = new Keyboard(this, R.xml.qwerty);
        keyboardView.setKeyboard(keyboard);
        keyboardView.setPreviewEnabled(false);
        keyboardView.setOnKeyboardActionListener(this);
        slots[1].setText(loadError != null ? loadError : getString(R.string.loading));
        lastText = null;  // a new view: rank again even if the text is unchanged
        return v;
    }

    @Override
    public void onStartInputView(EditorInfo info, final boolean restarting) {
        super.onStartInputView(info, restarting);
        // No strip and no model in passwords, fields that ask for no suggestions, or raw fields.
        predicting = info != null && TextField.mayPredict(info.inputType);
        if (strip != null) strip.setVisibility(predicting ? View.VISIBLE : View.GONE);
        if (!predicting) {
            lastText = null;
            pending.set(null);  // a text queued from the previous field is not ranked
            show(new String[TextField.SLOTS]);
            skippedField = true;
            return;
        }
        // Never learn from passwords, fields that ask for no suggestions, or incognito fields.
        final boolean learn = TextField.mayLearn(info.inputType, info.imeOptions);
        final boolean reset = !restarting || skippedField;
        skippedField = false;
        if (reset) lastText = null;
        background.post(new Runnable() {
            @Override
            public void run() {
                if (field == null) return;
                if (reset) field.reset(learn);
                else field.setLearning(learn);
            }
        });
        scheduleUpdate();
    }

    @Override
    public void onFinishInputView(boolean finishingInput) {
        super.onFinishInputView(finishingInput);
        // After the updates already queued, so what they learnt is written too.
        background.post(new Runnable() {
            @Override
            public void run() {
                UserHistoryStore.save(KeyboardService.this);
                chooseHistoryWeight();
            }
        });
    }

    /**
     * Background thread: once enough sentences were finished since the last choice, choose the
     * user's history weight on them (see {@link RecentSentences}) and save it with the history.
     */
    private void chooseHistoryWeight() {
        if (field == null || !recent.due()) return;
        try {
            Session.HistoryWeightChoice choice = recent.chooseIfDue(predictor);
            if (choice == null) return;
            Log.i(TAG, choice.toString());  // the weight and hit counts only, no text
            UserHistoryStore.save(this);
        } catch (RuntimeException | OutOfMemoryError e) {
            Log.w(TAG, "cannot choose the history weight: " + e);
        }
    }

    @Override
    public void onUpdateSelection(int oldSelStart, int oldSelEnd, int newSelStart, int newSelEnd,
                                  int candidatesStart, int candidatesEnd) {
        super.onUpdateSelection(oldSelStart, oldSelEnd, newSelStart, newSelEnd, candidatesStart, candidatesEnd);
        scheduleUpdate();  // the user moved the cursor, or the editor changed the text
    }

    /** UI thread: hand the text before the cursor to the background thread. */
    private void scheduleUpdate() {
        if (!predicting) return;  // the field's text is not read
        InputConnection ic = getCurrentInputConnection();
        if (ic == null) return;
        CharSequence before = ic.getTextBeforeCursor(WINDOW, 0);
        String text = before == null ? "" : before.toString();
        if (text.equals(lastText)) return;
        lastText = text;
        if (pending.getAndSet(text) == null) {
            background.post(new Runnable() {
                @Override
                public void run() {
                    rank();
                }
            });
        }
    }

    /** Background thread: one TextField update for the latest text. */
    private void rank() {
        final String text = pending.getAndSet(null);
        if (text == null) return;
        if (field == null) {
            showMessage(loadError != null ? loadError : getString(R.string.loading));
            return;
        }
        try {
            final String[] words = field.update(text).slots();
            for (List<String> sentence : field.takeFinishedSentences()) recent.add(sentence);  // learning fields only
            ui.post(new Runnable() {
                @Override
                public void run() {
                    if (text.equals(lastText)) show(words);
                }
            });
        } catch (RuntimeException | OutOfMemoryError e) {
            field.reset();
            showMessage("suggestions failed: " + e);
        }
    }

    private void showMessage(final String message) {
        ui.post(new Runnable() {
            @Override
            public void run() {
                show(new String[] {null, null, null});
                if (slots[1] != null) slots[1].setText(message);
            }
        });
    }

    /** UI thread. */
    private void show(String[] words) {
        shown = words;
        for (int i = 0; i < slots.length; i++) {
            if (slots[i] != null) slots[i].setText(words[i] == null ? "" : words[i]);
        }
    }

    /** UI thread: a tapped slot replaces the word being typed. */
    private void pick(int slot) {
        String word = shown[slot];
        InputConnection ic = getCurrentInputConnection();
        if (word == null || ic == null) return;
        CharSequence before = ic.getTextBeforeCursor(WINDOW, 0);
        TextField.Edit edit = TextField.pick(before == null ? "" : before.toString(), word);
        ic.beginBatchEdit();
        if (edit.deleteBefore > 0) ic.deleteSurroundingText(edit.deleteBefore, 0);
        ic.commitText(edit.insert, 1);
        ic.endBatchEdit();
        scheduleUpdate();
    }

    @Override
    public void onKey(int code, int[] codes) {
        InputConnection ic = getCurrentInputConnection();
        if (ic == null) return;
        if (code == Keyboard.KEYCODE_SHIFT) {
            keyboard.setShifted(!keyboard.isShifted());
            keyboardView.invalidateAllKeys();
            return;
        }
        if (code == Keyboard.KEYCODE_DELETE) {
            CharSequence selected = ic.getSelectedText(0);
            CharSequence before = ic.getTextBeforeCursor(2, 0);
            int n = TextField.backspaceLength(before == null ? "" : before.toString());
            if (selected != null && selected.length() > 0) ic.commitText("", 1);
            else if (n > 0) ic.deleteSurroundingText(n, 0);
            else sendDownUpKeyEvents(KeyEvent.KEYCODE_DEL);
        } else if (code == '\n') {
            EditorInfo info = getCurrentInputEditorInfo();
            int action = info == null ? EditorInfo.IME_ACTION_NONE : info.imeOptions & EditorInfo.IME_MASK_ACTION;
            boolean noAction = info == null || (info.imeOptions & EditorInfo.IME_FLAG_NO_ENTER_ACTION) != 0;
            if (!noAction && action != EditorInfo.IME_ACTION_NONE && action != EditorInfo.IME_ACTION_UNSPECIFIED) {
                ic.performEditorAction(action);
            } else {
                sendKeyChar('\n');
            }
        } else if (code > 0) {
            String s = new String(Character.toChars(code));
            if (keyboard.isShifted()) {
                s = s.toUpperCase(java.util.Locale.ROOT);
                keyboard.setShifted(false);  // one capital, as a phone's shift does
                keyboardView.invalidateAllKeys();
            }
            ic.commitText(s, 1);
        }
        scheduleUpdate();
    }

    @Override
    public void onText(CharSequence text) {
        InputConnection ic = getCurrentInputConnection();
        if (ic == null) return;
        ic.commitText(text, 1);
        scheduleUpdate();
    }

    @Override
    public void onPress(int primaryCode) {
    }

    @Override
    public void onRelease(int primaryCode) {
    }

    @Override
    public void swipeLeft() {
    }

    @Override
    public void swipeRight() {
    }

    @Override
    public void swipeDown() {
    }

    @Override
    public void swipeUp() {
    }
}
