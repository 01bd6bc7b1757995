package org.keyboardlm.demo;

import android.app.KeyguardManager;
import android.content.Context;
import android.inputmethodservice.InputMethodService;
import android.inputmethodservice.Keyboard;
import android.inputmethodservice.KeyboardView;
import android.os.Build;
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
import java.io.FileInputStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.keyboardlm.core.ExternalModelPolicy;
import org.keyboardlm.core.FieldPolicy;
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
 * <p>Fields: {@link FieldPolicy} decides in {@link #onStartInput}, which runs for every field,
 * with or without the input view (a hardware keyboard), and the session restarts there, so no
 * field is ever read or learnt under the previous field's attributes. Selection updates are
 * ignored while the input view is hidden. Each text sent to the background thread says whether
 * only the keyboard's own keys and taps changed it ({@link TextField#update(String, boolean)}):
 * pastes and the editor's changes are never learnt.
 *
 * <p>User history: one {@link UserHistoryStore} history per user, read from the app's private
 * storage when the keyboard starts and written there when the input view finishes; the
 * TextField learns what is typed only where {@link FieldPolicy#mayLearn} allows it. It never
 * leaves the device. While the device is locked ({@code KeyguardManager}), the strip shows no
 * word only the history knows ({@link TextField#setDeviceLocked}). A damaged history file is
 * kept aside and the strip says so once (see {@link UserHistoryStore}).
 *
 * <p>The model: {@code assets/model.tflite} from the APK, or a file pushed to the app's
 * external files directory when its sha256 is listed in {@code R.array.external_model_sha256}
 * ({@link ExternalModelPolicy}); a refused file is logged and the APK's model is used.
 *
 * <p>The history's weight: the sentences a typed terminator finishes in those fields are kept
 * in memory ({@link RecentSentences}, at most 200, never written); when the input view
 * finishes and at least 50 arrived since the last choice, the background thread chooses the
 * user's weight on them ({@link Session#chooseHistoryWeight}, over the history as it was
 * before they were learnt) and saves the history. Bounded work (at most 4,000 words: one
 * model step and six rankings each) while the keyboard is hidden.
 *
 * <p>Fields where {@link FieldPolicy#mayPredict} is false (passwords, e-mail, URI, filter,
 * number, phone, date/time, raw, no-suggestion and auto-complete fields) get no strip, and
 * their text is never read: the model does not run there.
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
    /** Background thread: the current field's learning and the lock state, for a field created after they were set. */
    private boolean fieldLearns;
    private boolean fieldLocked = true;
    /** Background thread: the field {@link #field} was last reset for (see {@link #generation}). */
    private int fieldGeneration;
    /**
     * Latest text not yet ranked (guarded by {@link #pendingLock}); the background thread takes
     * it, so bursts of keys coalesce. {@link #pendingByKeyboard}: only the keyboard's keys and
     * taps made the changes coalesced into it. {@link #pendingGeneration}: the field it was
     * read from; the background thread leaves it until {@link #field} was reset for that field.
     */
    private final Object pendingLock = new Object();
    private String pendingText;
    private boolean pendingByKeyboard;
    private int pendingGeneration;

    // UI thread only.
    /** Counts the fields started (onStartInput). */
    private int generation;
    private final TextView[] slots = new TextView[TextField.SLOTS];
    private String[] shown = new String[TextField.SLOTS];
    private String lastText;
    /** False in a field where the keyboard must not predict (see {@link FieldPolicy#mayPredict}); set in onStartInput. */
    private boolean predicting;
    /** A notice the strip shows instead of suggestions until the next key or tap (a damaged history file). */
    private String notice;
    /** True once the damaged-history notice was shown in this process (see {@link #showDamagedNotice}). */
    private boolean noticeShown;
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

    /**
     * Background thread: a model pushed to the app's external files directory if its sha256 is
     * one this build accepts, else the one in the APK.
     */
    private void load() {
        try {
            ModelFile model = pushedModel();
            if (model == null) model = ModelFile.fromBytes("assets/" + MODEL, readAsset(MODEL));
            UserHistory history = UserHistoryStore.get(this);  // never throws: a damaged file is kept aside
            predictor = new Predictor(model, blocklist());
            recent = UserHistoryStore.recentSentences(this);
            field = new TextField(predictor, history);
            field.reset(fieldLearns);
            field.setDeviceLocked(fieldLocked);
            loadError = null;
            ui.post(new Runnable() {
                @Override
                public void run() {
                    showDamagedNotice();  // the history was just read: a damaged file is kept aside now
                }
            });
        } catch (ModelFileException e) {
            loadError = e.getMessage();
        } catch (IOException e) {
            loadError = "assets/" + MODEL + ": " + e.getMessage();
        } catch (RuntimeException | OutOfMemoryError e) {
            loadError = "cannot load the model: " + e;
        }
        if (loadError != null) showMessage(loadError);
    }

    /**
     * The pushed model, or null (logged) when there is none, its sha256 is not accepted, or it
     * cannot be read or loaded. The bytes checked are the bytes loaded, so the file cannot be
     * swapped in between.
     */
    private ModelFile pushedModel() {
        File dir = getExternalFilesDir(null);
        File pushed = dir == null ? null : new File(dir, MODEL);
        if (pushed == null || !pushed.isFile()) return null;
        try {
            byte[] bytes = readAll(new FileInputStream(pushed));
            ExternalModelPolicy policy = new ExternalModelPolicy(Arrays.asList(getResources().getStringArray(R.array.external_model_sha256)));
            String refusal = policy.refusal(pushed.getPath(), bytes);
            if (refusal != null) {
                Log.w(TAG, refusal + "; using assets/" + MODEL);
                return null;
            }
            return ModelFile.fromBytes(pushed.getPath(), bytes);
        } catch (IOException | ModelFileException | RuntimeException | OutOfMemoryError e) {
            Log.w(TAG, pushed.getPath() + ": not used (" + e.getMessage() + "); using assets/" + MODEL);
            return null;
        }
    }

    private byte[] readAsset(String name) throws IOException {
        return readAll(getAssets().open(name));
    }

    /** Reads {@code in} to its end and closes it. */
    private static byte[] readAll(InputStream in) throws IOException {
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

    /**
     * Every field starts here, shown or not (with a hardware keyboard the input view never
     * starts): the field's attributes are decided and the session restarts, restart or not, so
     * nothing of this field is read or learnt under the previous one's.
     */
    @Override
    public void onStartInput(EditorInfo info, boolean restarting) {
        super.onStartInput(info, restarting);
        int inputType = info == null ? FieldPolicy.TYPE_NULL : info.inputType;
        int imeOptions = info == null ? 0 : info.imeOptions;
        predicting = FieldPolicy.mayPredict(inputType);
        final boolean learn = FieldPolicy.mayLearn(inputType, imeOptions);
        final boolean locked = deviceLocked();
        final int started = ++generation;
        lastText = null;
        synchronized (pendingLock) {
            pendingText = null;  // a text queued from the previous field is not ranked
        }
        if (strip != null) strip.setVisibility(predicting ? View.VISIBLE : View.GONE);
        show(new String[TextField.SLOTS]);
        background.post(new Runnable() {
            @Override
            public void run() {
                fieldLearns = learn;
                fieldLocked = locked;
                synchronized (pendingLock) {
                    fieldGeneration = started;
                }
                if (field == null) return;
                field.reset(learn);
                field.setDeviceLocked(locked);
            }
        });
    }

    @Override
    public void onStartInputView(EditorInfo info, boolean restarting) {
        super.onStartInputView(info, restarting);
        if (strip != null) strip.setVisibility(predicting ? View.VISIBLE : View.GONE);
        if (!predicting) return;
        final boolean locked = deviceLocked();  // may have changed since onStartInput
        background.post(new Runnable() {
            @Override
            public void run() {
                fieldLocked = locked;
                if (field != null) field.setDeviceLocked(locked);
            }
        });
        showDamagedNotice();
        lastText = null;  // a new view: rank again even if the text is unchanged
        scheduleUpdate(false);  // the field's own text: never learnt
    }

    /**
     * UI thread: once per process, while a damaged history file is kept aside, the strip says so
     * until the next key or tap.
     */
    private void showDamagedNotice() {
        if (noticeShown || !predicting) return;  // shown with the next field that has a strip
        File bad = UserHistoryStore.damagedCopy(this);
        if (bad == null) return;
        noticeShown = true;
        notice = getString(R.string.history_damaged, bad.getName());
        show(shown);
    }

    /** True while the device is locked or the lock screen shows; true when that cannot be known. */
    private boolean deviceLocked() {
        KeyguardManager keyguard = (KeyguardManager) getSystemService(Context.KEYGUARD_SERVICE);
        if (keyguard == null) return true;
        boolean locked = keyguard.isKeyguardLocked();
        if (Build.VERSION.SDK_INT >= 22) locked |= keyguard.isDeviceLocked();
        return locked;
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
        if (!isInputViewShown()) return;  // a hardware keyboard's field: not read
        // The user moved the cursor, or the editor changed the text (a paste): not the keyboard's
        // typing. The keyboard's own edits were read already (the text is then unchanged).
        scheduleUpdate(false);
    }

    /**
     * UI thread: hand the text before the cursor to the background thread; {@code byKeyboard}:
     * the keyboard's own key or tap changed it.
     */
    private void scheduleUpdate(boolean byKeyboard) {
        if (!predicting) return;  // the field's text is not read
        InputConnection ic = getCurrentInputConnection();
        if (ic == null) return;
        CharSequence before = ic.getTextBeforeCursor(WINDOW, 0);
        String text = before == null ? "" : before.toString();
        if (text.equals(lastText)) return;
        lastText = text;
        boolean post;
        synchronized (pendingLock) {
            post = pendingText == null;
            pendingByKeyboard = (post || pendingByKeyboard) && byKeyboard;
            pendingText = text;
            pendingGeneration = generation;
        }
        if (post) {
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
        final String text;
        final boolean byKeyboard;
        synchronized (pendingLock) {
            // A text of a field not yet reset for waits for the rank posted after that reset.
            if (pendingGeneration != fieldGeneration) return;
            text = pendingText;
            byKeyboard = pendingByKeyboard;
            pendingText = null;
        }
        if (text == null) return;
        if (field == null) {
            showMessage(loadError != null ? loadError : getString(R.string.loading));
            return;
        }
        try {
            final String[] words = field.update(text, byKeyboard).slots();
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

    /** UI thread; a pending {@link #notice} takes the strip instead. */
    private void show(String[] words) {
        shown = words;
        for (int i = 0; i < slots.length; i++) {
            String text = notice != null ? (i == 1 ? notice : "") : words[i];
            if (slots[i] != null) slots[i].setText(text == null ? "" : text);
        }
    }

    /** UI thread: the user acted after a notice was shown; the strip shows suggestions again. */
    private void dismissNotice() {
        if (notice == null) return;
        notice = null;
        show(shown);
    }

    /** UI thread: a tapped slot replaces the word being typed. */
    private void pick(int slot) {
        if (notice != null) {
            dismissNotice();
            return;
        }
        String word = shown[slot];
        InputConnection ic = getCurrentInputConnection();
        if (word == null || ic == null) return;
        CharSequence before = ic.getTextBeforeCursor(WINDOW, 0);
        TextField.Edit edit = TextField.pick(before == null ? "" : before.toString(), word);
        ic.beginBatchEdit();
        if (edit.deleteBefore > 0) ic.deleteSurroundingText(edit.deleteBefore, 0);
        ic.commitText(edit.insert, 1);
        ic.endBatchEdit();
        scheduleUpdate(true);
    }

    @Override
    public void onKey(int code, int[] codes) {
        dismissNotice();
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
        scheduleUpdate(true);
    }

    @Override
    public void onText(CharSequence text) {
        InputConnection ic = getCurrentInputConnection();
        if (ic == null) return;
        ic.commitText(text, 1);
        scheduleUpdate(true);
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
