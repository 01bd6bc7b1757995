package org.keyboardlm.demo;

import android.app.KeyguardManager;
import android.content.Context;
import android.content.res.AssetFileDescriptor;
import android.inputmethodservice.InputMethodService;
import android.inputmethodservice.Keyboard;
import android.inputmethodservice.KeyboardView;
import android.os.Build;
import android.os.Handler;
import android.os.HandlerThread;
import android.os.IBinder;
import android.os.Looper;
import android.os.Process;
import android.os.SystemClock;
import android.util.Log;
import android.view.HapticFeedbackConstants;
import android.view.View;
import android.view.inputmethod.EditorInfo;
import android.view.inputmethod.InputConnection;
import android.view.inputmethod.InputMethodManager;
import android.widget.TextView;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;

import org.keyboardlm.core.ExternalModelPolicy;
import org.keyboardlm.core.HistoryStore;
import org.keyboardlm.core.IdleSaver;
import org.keyboardlm.core.InputLogic;
import org.keyboardlm.core.ModelFile;
import org.keyboardlm.core.ModelFileException;
import org.keyboardlm.core.Predictor;
import org.keyboardlm.core.RecentSentences;
import org.keyboardlm.core.Session;
import org.keyboardlm.core.StripRanker;
import org.keyboardlm.core.UserHistory;
import org.keyboardlm.core.UserHistoryException;
import org.keyboardlm.core.android.InputConnectionEditor;

/**
 * The keyboard's Android glue. What a key, a tap or a cursor move does to the text, and what
 * is ranked and learnt, is decided in the core ({@link InputLogic} over an
 * {@link InputConnectionEditor}, {@link StripRanker} on the ranking thread, {@link HistoryStore}
 * and {@link IdleSaver} for the history), where JUnit tests it; this class forwards Android's
 * callbacks there and draws the result. Any failure shows one line in the strip; typing keeps
 * working.
 *
 * <p>Threads: the UI thread (keys, the editor), the ranking thread ("kblm-ranking", default
 * priority: a strip is what the user waits for), and a background thread that writes the
 * history: at most {@link IdleSaver#DEFAULT_FLUSH_MILLIS} after it changed while the keyboard is
 * in use (a journal append), and while the keyboard is idle (after the input view closed,
 * cancelled when it shows again before the work started), where it also chooses its weight.
 *
 * <p>Logging: one line per failure, naming files and exception classes, never text: an
 * exception's message is logged only when it is an {@code IOException} or the core's
 * ({@link #describe}), whose messages name files and reasons only; the history's notice never
 * quotes the file ({@code UserHistoryFile}).
 *
 * <p>The model: {@code assets/model.tflite} memory-mapped from the APK (stored uncompressed,
 * {@code aapt -0 tflite}), or a file pushed to the app's external files directory when its
 * sha256 is listed in {@code R.array.external_model_sha256} ({@link ExternalModelPolicy}),
 * loaded from the very bytes whose sha256 was checked. The predictor is closed when the
 * service is destroyed.
 */
public final class KeyboardService extends InputMethodService
        implements KeyboardView.OnKeyboardActionListener, InputLogic.Listener {
    private static final String MODEL = "model.tflite";
    private static final String BLOCKLIST = "blocklist.txt";
    private static final String TAG = "kblm";
    /** The key that switches to the next keyboard (layouts' {@code android:codes}). */
    static final int KEYCODE_SWITCH_KEYBOARD = -101;

    private HandlerThread rankingThread;
    private Handler ranking;
    private Handler ui;
    private ScheduledThreadPoolExecutor idleThread;
    private IdleSaver saver;
    private HistoryStore store;
    private StripRanker ranker;
    private InputLogic logic;
    /** Set on the ranking thread once loaded; read by the idle thread. */
    private volatile Predictor predictor;
    private volatile RecentSentences recent;
    private volatile boolean destroyed;

    // UI thread only.
    private final TextView[] slots = new TextView[3];
    private View strip;
    private KeyboardView keyboardView;
    private Keyboard letters;
    private Keyboard symbols;
    private Keyboard numbers;
    private Keyboard phone;
    /** A notice the strip shows instead of suggestions until the next key or tap (a damaged history file). */
    private String notice;
    private boolean noticeShown;
    /** Set once the history was read, when the store has a notice (see {@link #showDamagedNotice}). */
    private boolean historyProblem;
    /** The settings, read when a field's view starts (see {@link KeyboardSettings}). */
    private boolean previews;
    private boolean haptics;
    private Keyboard datetime;
    /** Idle thread: the last save failure logged, so a failing save logs once, not at every flush. */
    private String lastSaveFailure;

    @Override
    public void onCreate() {
        super.onCreate();
        ui = new Handler(Looper.getMainLooper());
        rankingThread = new HandlerThread("kblm-ranking", Process.THREAD_PRIORITY_DEFAULT);
        rankingThread.start();
        ranking = new Handler(rankingThread.getLooper());
        idleThread = new ScheduledThreadPoolExecutor(1, new ThreadFactory() {
            @Override
            public Thread newThread(final Runnable r) {
                return new Thread(new Runnable() {
                    @Override
                    public void run() {
                        Process.setThreadPriority(Process.THREAD_PRIORITY_BACKGROUND);
                        r.run();
                    }
                }, "kblm-idle");
            }
        });
        store = UserHistoryStore.get(this);
        saver = new IdleSaver(idleThread, IdleSaver.DEFAULT_DELAY_MILLIS, new Runnable() {
            @Override
            public void run() {
                whileIdle();
            }
        }, IdleSaver.DEFAULT_FLUSH_MILLIS, new Runnable() {
            @Override
            public void run() {
                save();  // while typing: what changed, appended to the journal
            }
        });
        store.setChangeListener(new Runnable() {
            @Override
            public void run() {
                saver.changed();  // under the history's lock: only schedules
            }
        });
        ranker = new StripRanker(new Executor() {
            @Override
            public void execute(Runnable r) {
                ranking.post(r);
            }
        }, new StripRanker.Listener() {
            @Override
            public void onStrip(final int seq, final String[] words, final boolean completing) {
                ui.post(new Runnable() {
                    @Override
                    public void run() {
                        logic.onStrip(seq, words, completing);
                    }
                });
            }

            @Override
            public void onMessage(final int seq, final String message) {
                ui.post(new Runnable() {
                    @Override
                    public void run() {
                        logic.onMessage(seq, message);
                    }
                });
            }
        });
        logic = new InputLogic(ranker, this);
        ranking.post(new Runnable() {
            @Override
            public void run() {
                load();
            }
        });
    }

    @Override
    public void onDestroy() {
        destroyed = true;
        store.setChangeListener(null);
        rankingThread.quitSafely();
        // On the idle thread, after any work under way there: the last save, then the model is closed.
        saver.busy();
        idleThread.execute(new Runnable() {
            @Override
            public void run() {
                try {
                    rankingThread.join(2000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                try {
                    store.close();  // the last save, as one snapshot (the journal folded in)
                } catch (IOException | RuntimeException e) {
                    Log.w(TAG, "cannot save the user history: " + describe(e));
                }
                Predictor p = predictor;
                if (p != null) p.close();
            }
        });
        idleThread.shutdown();
        super.onDestroy();
    }

    // -- loading (ranking thread) ------------------------------------------------------------

    private void load() {
        String error;
        try {
            ModelFile model = pushedModel();
            if (model == null) model = assetModel();
            UserHistory history = store.history();  // never throws: a damaged file is kept aside
            final boolean problem = store.notice() != null;
            if (problem) Log.w(TAG, store.notice());  // files and reasons, never their content
            Predictor p = new Predictor(model, blocklist());
            recent = store.recentSentences();
            predictor = p;
            ranker.loaded(p, history, recent);
            ui.post(new Runnable() {
                @Override
                public void run() {
                    historyProblem = problem;
                    showDamagedNotice();  // the history was just read: a damaged file is kept aside now
                    logic.refresh();
                }
            });
            return;
        } catch (ModelFileException e) {
            error = e.getMessage();
        } catch (IOException e) {
            error = "assets/" + MODEL + ": " + e.getMessage();
        } catch (RuntimeException | OutOfMemoryError e) {
            error = "cannot load the model: " + e.getClass().getName();
        }
        ranker.loadFailed(error);
        ui.post(new Runnable() {
            @Override
            public void run() {
                logic.refresh();
            }
        });
    }

    /**
     * {@code assets/model.tflite}, memory-mapped from the APK (no copy of the file on the heap);
     * read as a stream if the asset was compressed after all.
     */
    private ModelFile assetModel() throws IOException, ModelFileException {
        AssetFileDescriptor fd;
        try {
            fd = getAssets().openFd(MODEL);
        } catch (FileNotFoundException compressed) {
            Log.w(TAG, "assets/" + MODEL + " is compressed in the APK; reading it into memory");
            InputStream in = getAssets().open(MODEL);
            try {
                return ModelFile.fromStream("assets/" + MODEL, in);
            } finally {
                in.close();
            }
        }
        try {
            FileInputStream in = new FileInputStream(fd.getFileDescriptor());
            try {
                MappedByteBuffer mapped = in.getChannel().map(FileChannel.MapMode.READ_ONLY,
                        fd.getStartOffset(), fd.getDeclaredLength());
                return ModelFile.fromBuffer("assets/" + MODEL, mapped);
            } finally {
                in.close();
            }
        } finally {
            fd.close();
        }
    }

    /**
     * The pushed model, or null (logged) when there is none, its sha256 is not accepted, or it
     * cannot be read or loaded. It is read into memory and loaded from the bytes whose sha256
     * was checked, so the file cannot be swapped in between (a mapping would show the file as
     * it is when read).
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
            Log.w(TAG, pushed.getPath() + ": not used (" + describe(e) + "); using assets/" + MODEL);
            return null;
        }
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
            for (String line : new String(readAll(getAssets().open(BLOCKLIST)), StandardCharsets.UTF_8).split("\n")) {
                words.add(line.trim());
            }
        } catch (IOException e) {
            // no blocklist in this APK
        }
        return words;
    }

    // -- idle work (idle thread) -------------------------------------------------------------

    /** Choose the history's weight when enough sentences arrived (see {@link RecentSentences}), then save. */
    private void whileIdle() {
        Predictor p = predictor;
        RecentSentences r = recent;
        if (!destroyed && p != null && r != null && r.due()) {
            try {
                Session.HistoryWeightChoice choice = r.chooseIfDue(p);
                if (choice != null) Log.i(TAG, "history weight: " + choice);  // the weight and hit counts only, no text
            } catch (RuntimeException | OutOfMemoryError e) {
                Log.w(TAG, "cannot choose the history weight: " + describe(e));
            }
        }
        save();
    }

    /** Idle thread: write what changed (a journal append); a failure is logged once until it changes. */
    private void save() {
        try {
            store.save();  // only if something changed: appended to the journal; learning never waits for the disk
            lastSaveFailure = null;
        } catch (IOException | RuntimeException e) {
            String why = describe(e);
            if (!why.equals(lastSaveFailure)) Log.w(TAG, "cannot save the user history: " + why);
            lastSaveFailure = why;
        }
    }

    /**
     * What a log line may say of a failure: the message of an I/O or a core exception (they name
     * files and reasons, never what the user typed), else the exception's class alone, since a
     * message from elsewhere could quote anything.
     */
    static String describe(Throwable e) {
        boolean ours = e instanceof IOException || e instanceof ModelFileException || e instanceof UserHistoryException;
        return ours && e.getMessage() != null ? e.getMessage() : e.getClass().getName();
    }

    // -- views (UI thread) -------------------------------------------------------------------

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
                    if (dismissNotice()) return;
                    logic.pick(slot);
                }
            });
            slots[i].setOnLongClickListener(new View.OnLongClickListener() {
                @Override
                public boolean onLongClick(View view) {
                    return !dismissNotice() && logic.removeSuggestion(slot);
                }
            });
        }
        strip = v.findViewById(R.id.strip);
        keyboardView = (KeyboardView) v.findViewById(R.id.keyboard);
        letters = new Keyboard(this, R.xml.qwerty);
        symbols = new Keyboard(this, R.xml.symbols);
        numbers = new Keyboard(this, R.xml.numbers);
        phone = new Keyboard(this, R.xml.phone);
        datetime = new Keyboard(this, R.xml.datetime);
        keyboardView.setPreviewEnabled(false);  // per key, in onPress
        keyboardView.setOnKeyboardActionListener(this);
        showLayout(logic.layout());
        render();  // what the keyboard showed before (a rotation): no "loading" once the model is loaded
        return v;
    }

    private void showLayout(int which) {
        if (keyboardView == null) return;
        Keyboard k = which == InputLogic.LAYOUT_SYMBOLS ? symbols
                : which == InputLogic.LAYOUT_NUMBER ? numbers
                : which == InputLogic.LAYOUT_PHONE ? phone
                : which == InputLogic.LAYOUT_DATETIME ? datetime : letters;
        if (keyboardView.getKeyboard() != k) keyboardView.setKeyboard(k);
    }

    @Override
    public void onStateChanged() {
        render();
    }

    /** Draw the strip and the shift state from {@link InputLogic}; a pending {@link #notice} takes the strip instead. */
    private void render() {
        if (strip == null) return;
        strip.setVisibility(logic.predicting() ? View.VISIBLE : View.GONE);
        String[] words = logic.slots();
        String message = notice != null ? notice
                : logic.loading() ? getString(R.string.loading)
                : logic.message();
        for (int i = 0; i < slots.length; i++) {
            String text = message != null ? (i == 1 ? message : "") : words[i];
            slots[i].setText(text == null ? "" : text);
        }
        showLayout(logic.layout());
        if (keyboardView.getKeyboard() == letters) {
            int index = letters.getShiftKeyIndex();
            Keyboard.Key shiftKey = index >= 0 ? letters.getKeys().get(index) : null;
            String label = logic.capsLocked() ? "\u21ea" : "\u21e7";  // caps lock, shift
            boolean relabel = shiftKey != null && (shiftKey.label == null || !label.contentEquals(shiftKey.label));
            if (relabel) shiftKey.label = label;
            if (letters.isShifted() != logic.shifted() || relabel) {
                letters.setShifted(logic.shifted());
                keyboardView.invalidateAllKeys();
            }
        }
    }

    /**
     * UI thread: once per process, when the history read was not used as it was (a damaged file
     * kept aside, a file that could not be read), the strip says so until the next key or tap and
     * points to the setup screen, which says what happened and can restore a kept copy.
     */
    private void showDamagedNotice() {
        if (noticeShown || !historyProblem || !logic.predicting()) return;  // shown with the next field that has a strip
        noticeShown = true;
        notice = getString(R.string.history_problem);
        render();
    }

    /** The user acted after a notice was shown: the strip shows suggestions again. True if there was one. */
    private boolean dismissNotice() {
        if (notice == null) return false;
        notice = null;
        render();
        return true;
    }

    /** True while the device is locked or the lock screen shows; true when that cannot be known. */
    private boolean deviceLocked() {
        KeyguardManager keyguard = (KeyguardManager) getSystemService(Context.KEYGUARD_SERVICE);
        if (keyguard == null) return true;
        boolean locked = keyguard.isKeyguardLocked();
        if (Build.VERSION.SDK_INT >= 22) locked |= keyguard.isDeviceLocked();
        return locked;
    }

    // -- Android's callbacks, forwarded ------------------------------------------------------

    @Override
    public void onStartInput(EditorInfo info, boolean restarting) {
        super.onStartInput(info, restarting);
        int inputType = info == null ? 0 : info.inputType;
        logic.setLearningPaused(KeyboardSettings.learningPaused(this));
        logic.startInput(new InputConnectionEditor(this), inputType, info == null ? 0 : info.imeOptions,
                info == null ? -1 : info.initialSelStart, info == null ? -1 : info.initialSelEnd, deviceLocked());
        showLayout(logic.layout());
    }

    @Override
    public void onStartInputView(EditorInfo info, boolean restarting) {
        super.onStartInputView(info, restarting);
        saver.busy();
        previews = KeyboardSettings.keyPreviews(this);
        haptics = KeyboardSettings.haptics(this);
        showLayout(logic.layout());
        logic.startInputView(deviceLocked());
        showDamagedNotice();
    }

    @Override
    public void onFinishInputView(boolean finishingInput) {
        super.onFinishInputView(finishingInput);
        logic.finishInputView();
        saver.idle();
    }

    @Override
    public void onFinishInput() {
        super.onFinishInput();
        logic.finishInput();
    }

    @Override
    public void onUpdateSelection(int oldSelStart, int oldSelEnd, int newSelStart, int newSelEnd,
                                  int candidatesStart, int candidatesEnd) {
        super.onUpdateSelection(oldSelStart, oldSelEnd, newSelStart, newSelEnd, candidatesStart, candidatesEnd);
        logic.updateSelection(oldSelStart, oldSelEnd, newSelStart, newSelEnd, candidatesStart, candidatesEnd);
    }

    @Override
    public void onKey(int code, int[] codes) {
        dismissNotice();
        if (code == Keyboard.KEYCODE_SHIFT) {
            logic.shift(SystemClock.uptimeMillis());  // a double tap locks capitals
        } else if (code == Keyboard.KEYCODE_DELETE) {
            logic.delete();
        } else if (code == Keyboard.KEYCODE_MODE_CHANGE) {
            logic.toggleSymbols();  // redrawn through onStateChanged
        } else if (code == KEYCODE_SWITCH_KEYBOARD) {
            switchKeyboard();
        } else if (code == '\n') {
            EditorInfo info = getCurrentInputEditorInfo();
            int action = info == null ? EditorInfo.IME_ACTION_NONE : info.imeOptions & EditorInfo.IME_MASK_ACTION;
            boolean noAction = info == null || (info.imeOptions & EditorInfo.IME_FLAG_NO_ENTER_ACTION) != 0;
            InputConnection ic = getCurrentInputConnection();
            if (ic != null && !noAction && action != EditorInfo.IME_ACTION_NONE && action != EditorInfo.IME_ACTION_UNSPECIFIED) {
                logic.finishComposing();
                ic.performEditorAction(action);
            } else {
                logic.type('\n');
            }
        } else if (code > 0) {
            logic.type(code, SystemClock.uptimeMillis());  // a second space soon after a first makes a period
        }
    }

    /** The next keyboard, or the system's picker when there is none to switch to. */
    private void switchKeyboard() {
        InputMethodManager imm = (InputMethodManager) getSystemService(Context.INPUT_METHOD_SERVICE);
        if (imm == null) return;
        IBinder token = getWindow() == null || getWindow().getWindow() == null ? null
                : getWindow().getWindow().getAttributes().token;
        if (token == null || !imm.switchToNextInputMethod(token, false)) imm.showInputMethodPicker();
    }

    @Override
    public void onText(CharSequence text) {
        String s = text.toString();
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            logic.type(cp);
            i += Character.charCount(cp);
        }
    }

    /**
     * A key goes down (before its preview would show): a short vibration, and the preview only
     * for keys that type a visible character (not space, enter, shift, delete or the mode keys),
     * each as the settings say.
     */
    @Override
    public void onPress(int primaryCode) {
        if (keyboardView == null) return;
        keyboardView.setPreviewEnabled(previews && primaryCode > ' ');
        if (haptics) {
            keyboardView.performHapticFeedback(HapticFeedbackConstants.KEYBOARD_TAP,
                    HapticFeedbackConstants.FLAG_IGNORE_GLOBAL_SETTING);  // the keyboard's own setting decides
        }
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
