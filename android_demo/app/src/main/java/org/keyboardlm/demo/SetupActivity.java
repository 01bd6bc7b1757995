package org.keyboardlm.demo;

import android.app.Activity;
import android.content.Context;
import android.content.Intent;
import android.os.Bundle;
import android.provider.Settings;
import android.view.View;
import android.view.inputmethod.InputMethodManager;
import android.widget.TextView;
import android.widget.Toast;

import java.io.File;

/**
 * The launcher screen: enable and choose the keyboard, a field to try it in, and an action
 * that clears what the keyboard learnt (the user history and its files). While a damaged
 * history file is kept aside, a notice names it until the user clears it.
 */
public final class SetupActivity extends Activity {
    @Override
    protected void onCreate(Bundle state) {
        super.onCreate(state);
        setContentView(R.layout.setup);
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
        findViewById(R.id.clear_history).setOnClickListener(new View.OnClickListener() {
            @Override
            public void onClick(View v) {
                boolean cleared = UserHistoryStore.clear(SetupActivity.this);
                Toast.makeText(SetupActivity.this, cleared ? R.string.history_cleared : R.string.history_not_cleared,
                        Toast.LENGTH_SHORT).show();
                showDamagedNotice();
            }
        });
    }

    @Override
    protected void onResume() {
        super.onResume();
        showDamagedNotice();  // the keyboard, when it reads the history, keeps a damaged file aside
    }

    private void showDamagedNotice() {
        TextView notice = (TextView) findViewById(R.id.history_notice);
        File bad = UserHistoryStore.damagedCopy(this);
        notice.setVisibility(bad == null ? View.GONE : View.VISIBLE);
        if (bad != null) notice.setText(getString(R.string.history_damaged, bad.getName()));
    }
}
