package org.keyboardlm.demo;

import android.app.Activity;
import android.app.AlertDialog;
import android.content.Context;
import android.content.DialogInterface;
import android.content.Intent;
import android.os.Bundle;
import android.provider.Settings;
import android.view.View;
import android.view.inputmethod.InputMethodManager;
import android.widget.CheckBox;
import android.widget.CompoundButton;
import android.widget.TextView;
import android.widget.Toast;

import java.text.DateFormat;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import org.keyboardlm.core.HistoryStore;

/**
 * The launcher screen: enable and choose the keyboard, a field to try it in, the settings (key
 * previews, haptic feedback, pause learning), and what the keyboard learnt: the notice of a
 * history file that could not be used, the copies kept aside (each can be restored), and a
 * clear, after a confirmation.
 *
 * <p>Everything that touches the history runs on one background thread ({@link #work}): a
 * clear waits for a save's fsync under way, and a first read of the file may retry; results come
 * back to the UI thread, and are dropped when the screen is gone.
 */
public final class SetupActivity extends Activity {
    private ExecutorService work;

    @Override
    protected void onCreate(Bundle state) {
        super.onCreate(state);
        setContentView(R.layout.setup);
        work = Executors.newSingleThreadExecutor();
        findViewById(R.id.enable).setOnClickListener(new View.OnClickListener() {
            @Override
            public void onClick(View v) {
                startActivity(new Intent(Settings.ACTION_INPUT_METHOD_SETTINGS));
            }
        });
        findViewById(R.id.choose).setOnClickListener(new View.OnClickListener() {
            @Override
            public void onClick(View v) {
                ((InputMethodManager) getSystemService(Context.INPUT_METHOD_SERVICE)).showInputMethodPicker();
            }
        });
        bindSetting(R.id.key_previews, KeyboardSettings.KEY_PREVIEWS, KeyboardSettings.keyPreviews(this));
        bindSetting(R.id.haptics, KeyboardSettings.HAPTICS, KeyboardSettings.haptics(this));
        bindSetting(R.id.pause_learning, KeyboardSettings.PAUSE_LEARNING, KeyboardSettings.learningPaused(this));
        findViewById(R.id.clear_history).setOnClickListener(new View.OnClickListener() {
            @Override
            public void onClick(View v) {
                confirmClear();
            }
        });
        findViewById(R.id.restore_history).setOnClickListener(new View.OnClickListener() {
            @Override
            public void onClick(View v) {
                chooseRestore();
            }
        });
    }

    @Override
    protected void onResume() {
        super.onResume();
        refresh();  // the keyboard, when it reads the history, may have kept a damaged file aside
    }

    @Override
    protected void onDestroy() {
        work.shutdown();  // a clear or restore under way finishes; its result is not shown
        super.onDestroy();
    }

    private void bindSetting(int id, final String key, boolean value) {
        CheckBox box = (CheckBox) findViewById(id);
        box.setChecked(value);
        box.setOnCheckedChangeListener(new CompoundButton.OnCheckedChangeListener() {
            @Override
            public void onCheckedChanged(CompoundButton button, boolean checked) {
                KeyboardSettings.set(SetupActivity.this, key, checked);
            }
        });
    }

    /** Run {@code job} on the background thread, then {@code done} on the UI thread while the screen lives. */
    private void background(final Runnable job, final Runnable done) {
        work.execute(new Runnable() {
            @Override
            public void run() {
                job.run();
                runOnUiThread(new Runnable() {
                    @Override
                    public void run() {
                        if (!isFinishing() && !isDestroyed()) done.run();
                    }
                });
            }
        });
    }

    /** The notice and the kept copies, read off the UI thread. */
    private void refresh() {
        final String[] notice = new String[1];
        final List<HistoryStore.KeptCopy> kept = new ArrayList<HistoryStore.KeptCopy>();
        background(new Runnable() {
            @Override
            public void run() {
                notice[0] = UserHistoryStore.notice(SetupActivity.this);
                kept.addAll(UserHistoryStore.kept(SetupActivity.this));
            }
        }, new Runnable() {
            @Override
            public void run() {
                show(notice[0], kept);
            }
        });
    }

    private void show(String notice, List<HistoryStore.KeptCopy> kept) {
        TextView noticeView = (TextView) findViewById(R.id.history_notice);
        noticeView.setVisibility(notice == null ? View.GONE : View.VISIBLE);
        if (notice != null) noticeView.setText(getString(R.string.history_notice, notice));
        TextView keptView = (TextView) findViewById(R.id.history_kept);
        keptView.setText(kept.isEmpty() ? getString(R.string.kept_none) : describe(kept));
        findViewById(R.id.restore_history).setEnabled(!restorable(kept).isEmpty());
    }

    private String describe(List<HistoryStore.KeptCopy> kept) {
        StringBuilder b = new StringBuilder(getString(R.string.kept_title));
        for (HistoryStore.KeptCopy c : kept) b.append('\n').append(line(c));
        return b.toString();
    }

    /** One kept copy for the user: its number, when, how big, and whether it can be restored. */
    private String line(HistoryStore.KeptCopy c) {
        String when = DateFormat.getDateTimeInstance(DateFormat.MEDIUM, DateFormat.SHORT).format(new Date(c.lastModified));
        return getString(c.restorable ? R.string.kept_line : R.string.kept_line_journal, c.number, when, c.bytes);
    }

    private static List<HistoryStore.KeptCopy> restorable(List<HistoryStore.KeptCopy> kept) {
        List<HistoryStore.KeptCopy> out = new ArrayList<HistoryStore.KeptCopy>();
        for (HistoryStore.KeptCopy c : kept) if (c.restorable) out.add(c);
        return out;
    }

    private void confirmClear() {
        new AlertDialog.Builder(this)
                .setMessage(R.string.clear_confirm)
                .setNegativeButton(android.R.string.cancel, null)
                .setPositiveButton(R.string.clear_history, new DialogInterface.OnClickListener() {
                    @Override
                    public void onClick(DialogInterface dialog, int which) {
                        clear();
                    }
                })
                .show();
    }

    private void clear() {
        final boolean[] cleared = new boolean[1];
        background(new Runnable() {
            @Override
            public void run() {
                cleared[0] = UserHistoryStore.clear(SetupActivity.this);
            }
        }, new Runnable() {
            @Override
            public void run() {
                Toast.makeText(SetupActivity.this, cleared[0] ? R.string.history_cleared : R.string.history_not_cleared,
                        Toast.LENGTH_SHORT).show();
                refresh();
            }
        });
    }

    /** The restorable copies, newest first, to pick one; then a confirmation. */
    private void chooseRestore() {
        final List<HistoryStore.KeptCopy> kept = new ArrayList<HistoryStore.KeptCopy>();
        background(new Runnable() {
            @Override
            public void run() {
                kept.addAll(restorable(UserHistoryStore.kept(SetupActivity.this)));
            }
        }, new Runnable() {
            @Override
            public void run() {
                if (kept.isEmpty()) return;
                final String[] lines = new String[kept.size()];
                for (int i = 0; i < lines.length; i++) lines[i] = line(kept.get(lines.length - 1 - i));
                new AlertDialog.Builder(SetupActivity.this)
                        .setTitle(R.string.restore_history)
                        .setItems(lines, new DialogInterface.OnClickListener() {
                            @Override
                            public void onClick(DialogInterface dialog, int which) {
                                confirmRestore(kept.get(lines.length - 1 - which).number);
                            }
                        })
                        .setNegativeButton(android.R.string.cancel, null)
                        .show();
            }
        });
    }

    private void confirmRestore(final int number) {
        new AlertDialog.Builder(this)
                .setMessage(getString(R.string.restore_confirm, number))
                .setNegativeButton(android.R.string.cancel, null)
                .setPositiveButton(R.string.restore, new DialogInterface.OnClickListener() {
                    @Override
                    public void onClick(DialogInterface dialog, int which) {
                        restore(number);
                    }
                })
                .show();
    }

    private void restore(final int number) {
        final String[] failure = new String[1];
        background(new Runnable() {
            @Override
            public void run() {
                try {
                    UserHistoryStore.restore(SetupActivity.this, number);
                } catch (Exception e) {
                    failure[0] = KeyboardService.describe(e);  // names the kept file and why; shown, not logged
                }
            }
        }, new Runnable() {
            @Override
            public void run() {
                String text = failure[0] == null ? getString(R.string.history_restored, number)
                        : getString(R.string.history_not_restored, failure[0]);
                Toast.makeText(SetupActivity.this, text, Toast.LENGTH_LONG).show();
                refresh();
            }
        });
    }
}
