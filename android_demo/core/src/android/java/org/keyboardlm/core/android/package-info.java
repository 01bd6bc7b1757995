/**
 * The core's glue to Android's input method API: {@link org.keyboardlm.core.android.InputConnectionEditor}
 * adapts an {@code InputMethodService}'s {@code InputConnection} to the core's
 * {@link org.keyboardlm.core.EditorConnection}. Compiled against Android's API, which the phone
 * provides; nothing else in the library uses Android. Public API at 0.x, with the same rules on
 * null as {@link org.keyboardlm.core}: nothing returns null unless its Javadoc says so.
 */
package org.keyboardlm.core.android;
