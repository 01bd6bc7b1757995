/**
 * On-device next-word prediction for keyboards, in plain Java 8 with no dependencies: a model
 * exported by {@code keyboard-lm export} is loaded ({@link org.keyboardlm.core.ModelFile}), run
 * ({@link org.keyboardlm.core.Predictor}) and turned into a keyboard's 3-word strip
 * ({@link org.keyboardlm.core.TextField}), with the user's history and the keyboard logic of the
 * demo keyboard. android_demo/EMBEDDING.md in the repository shows how an app uses it.
 *
 * <h2>Public API at 0.x</h2>
 *
 * <p>The classes an app is meant to use: {@link org.keyboardlm.core.ModelFile},
 * {@link org.keyboardlm.core.ModelFileException}, {@link org.keyboardlm.core.Predictor},
 * {@link org.keyboardlm.core.Vocabulary}, {@link org.keyboardlm.core.Suggestion},
 * {@link org.keyboardlm.core.Session}, {@link org.keyboardlm.core.TextField},
 * {@link org.keyboardlm.core.UserHistory}, {@link org.keyboardlm.core.UserHistoryException},
 * {@link org.keyboardlm.core.HistoryStore}, {@link org.keyboardlm.core.IdleSaver},
 * {@link org.keyboardlm.core.RecentSentences}, {@link org.keyboardlm.core.FieldPolicy},
 * {@link org.keyboardlm.core.InputLogic}, {@link org.keyboardlm.core.StripRanker},
 * {@link org.keyboardlm.core.EditorConnection}, {@link org.keyboardlm.core.ExternalModelPolicy},
 * {@link org.keyboardlm.core.Version}, and {@code org.keyboardlm.core.android.InputConnectionEditor}.
 * While the version is 0.x, a minor release (0.1 to 0.2) may change them; a patch release (0.1.0 to
 * 0.1.1) does not.
 *
 * <p>The other public classes ({@link org.keyboardlm.core.StepEngine},
 * {@link org.keyboardlm.core.JavaStepEngine}, {@link org.keyboardlm.core.ModelArchive},
 * {@link org.keyboardlm.core.PhraseTable}, {@link org.keyboardlm.core.PhraseGate},
 * {@link org.keyboardlm.core.PrefixCache}, {@link org.keyboardlm.core.TextSpec},
 * {@link org.keyboardlm.core.TypoModel}, {@link org.keyboardlm.core.HistoryJournal},
 * {@link org.keyboardlm.core.UserHistoryFile}) are public for the tests, the benchmarks and tools
 * that read model and history files; any release may change them.
 *
 * <h2>Null</h2>
 *
 * <p>No public method or field of this package returns null, and no array or collection it returns
 * holds null, unless its Javadoc says so ("null when ...", "or null", "null where empty"). A
 * parameter may be null only where its Javadoc says so; the constructors and methods that check
 * refuse a null elsewhere with an {@link java.lang.IllegalArgumentException} naming the parameter.
 */
package org.keyboardlm.core;
