package org.keyboardlm.core;

import java.io.Closeable;
import java.util.List;

/**
 * Next-word suggestions and word completion from one model file, following
 * keyboard_lm/inference/predictor.py rule by rule. Special tokens (including OOV) and
 * blocklisted words are never suggested. Thread-safe: sessions share it.
 *
 * <p>Ranking: every source (the model, the file's phrase table, a session's user history) is
 * merged in one place, the predictor's {@link Ranker}; where only the model ranks, log-prob
 * descending, ties by id ascending (the golden fixture's order). Completion candidates are the
 * suggestable words that start with the normalized prefix (see {@link Ranker}).
 *
 * <p>Phrase table: a model file may carry one ({@link ModelFile#phrases}); then at every position
 * the longest stored context among the last {@link PhraseTable#MAX_ORDER} model inputs of the
 * current training chunk mixes its next words in, weighted by the file's {@link PhraseGate}.
 * A file without a table ranks as the model alone.
 *
 * <p>User history: a session may hold a {@link UserHistory} (see {@link Session}); the
 * blocklist's tokens, in the vocabulary or not, are never learnt nor suggested from it.
 *
 * <p>Stateless calls ({@link #suggest}, {@link #complete}) keep the model's results after the
 * most recently used token prefixes in a {@link PrefixCache} (64 by default), so a call whose
 * context extends a recent one by a word costs one model step. A prefix cache size of 0 turns it
 * off: each call then replays its context's chunk. The answers are the same either way.
 *
 * <p>{@link #close} closes the model (see {@link ModelFile#close}) and drops the prefix
 * cache; calls after it, this predictor's and its sessions', throw IllegalStateException.
 */
public final class Predictor implements Closeable {
    public final ModelFile model;
    public final Vocabulary vocab;
    /** What may be suggested and how the sources merge (model, phrase table, user history). */
    final Ranker ranker;
    /** The model after {@code <bos>} from the zero state, the same for every sentence; computed on first use, never written. */
    private volatile StepEngine.FullStep sentenceStart;
    /** Null when the cache is off (size 0) or the predictor is closed. */
    private volatile PrefixCache prefixCache;
    private volatile boolean closed;

    /**
     * @param blocklist words never to suggest; each entry is tokenized by the text spec and
     *     every token found in the vocabulary is blocked; entries with no such token are kept
     *     in {@link #ignoredBlocklistWords()} (Python ignores them silently). Every token, in the
     *     vocabulary or not, is also kept out of the user history ({@link #isBlocked}).
     */
    public Predictor(ModelFile model, Iterable<String> blocklist) {
        this(model, blocklist, PrefixCache.DEFAULT_SIZE);
    }

    /**
     * As {@link #Predictor(ModelFile, Iterable)}, keeping {@code prefixCacheSize} token prefixes
     * for the stateless calls (see {@link PrefixCache}); 0 turns the cache off.
     */
    public Predictor(ModelFile model, Iterable<String> blocklist, int prefixCacheSize) {
        this(model, blocklist, prefixCacheSize, TypoModel.DEFAULT);
    }

    /**
     * As {@link #Predictor(ModelFile, Iterable, int)}, correcting one typing slip per word in
     * completions with {@code typos} (see {@link TypoIndex}); null: completions match the letters
     * as typed only. The other constructors use {@link TypoModel#DEFAULT}. Nothing is corrected on
     * its own: a correction is a word in the strip, and the letters as typed keep a place beside it.
     */
    public Predictor(ModelFile model, Iterable<String> blocklist, int prefixCacheSize, TypoModel typos) {
        if (prefixCacheSize < 0) {
            throw new IllegalArgumentException("prefixCacheSize must be >= 0 (0 turns the cache off), got " + prefixCacheSize);
        }
        this.model = model;
        this.vocab = model.vocab;
        this.ranker = new Ranker(vocab, blocklist, model.phrases, model.phraseGate, typos);
        prefixCache = prefixCacheSize == 0 ? null : new PrefixCache(this, prefixCacheSize);
    }

    /** Load a .tflite exported by keyboard-lm export; ModelFileException names the file. */
    public static Predictor load(String path, Iterable<String> blocklist) throws ModelFileException {
        return new Predictor(ModelFile.load(path), blocklist);
    }

    /** As {@link #load(String, Iterable)}, with {@code prefixCacheSize} token prefixes cached (0: none). */
    public static Predictor load(String path, Iterable<String> blocklist, int prefixCacheSize) throws ModelFileException {
        return new Predictor(ModelFile.load(path), blocklist, prefixCacheSize);
    }

    /** The stateless calls' cache; null when it is off (or the predictor is closed). */
    public PrefixCache prefixCache() {
        return prefixCache;
    }

    /**
     * Closes the model (idempotent) and drops the prefix cache and the sentence start: the
     * memory goes even while something still holds this predictor. A {@link ModelFile} shared
     * by several predictors is closed for all of them.
     */
    @Override
    public void close() {
        closed = true;
        prefixCache = null;
        sentenceStart = null;
        model.close();
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException(model.path + ": the predictor is closed");
    }

    /** Blocklist entries none of whose tokens is in the vocabulary (they block no model word, only history words). */
    public List<String> ignoredBlocklistWords() {
        return ranker.ignoredBlocklistWords();
    }

    /** True when {@code token} is a token of a blocklist entry: never suggested, never learnt. */
    public boolean isBlocked(String token) {
        return ranker.blocked(token);
    }

    public Session session() {
        return new Session(this, model.seqLen, null, false);
    }

    /** A session that can rewind {@code rewindDepth} commits (see {@link Session#rewind}). */
    public Session session(int rewindDepth) {
        return new Session(this, rewindDepth, null, false);
    }

    /**
     * A new text field with the user's history ({@code history}, shared by the user's sessions;
     * null for none); {@code learn} false: a field never learnt from (a password field).
     */
    public Session session(UserHistory history, boolean learn) {
        return new Session(this, model.seqLen, history, learn);
    }

    /** As {@link #session(UserHistory, boolean)}, rewinding at most {@code rewindDepth} commits. */
    public Session session(int rewindDepth, UserHistory history, boolean learn) {
        return new Session(this, rewindDepth, history, learn);
    }

    /**
     * The k most likely next words after {@code context}, most likely first (the strip's center):
     * what a session that committed {@code context} suggests. The prefix cache makes a call whose
     * context extends a recent one cost only the new words' steps.
     */
    public List<Suggestion> suggest(String context, int k) {
        checkOpen();
        PrefixCache cache = prefixCache;
        if (cache == null) {
            Session s = session();
            s.commit(context, true);
            return s.suggestions(k);
        }
        return stateless(cache, context, "", k);
    }

    /**
     * The k most probable vocabulary words being typed as {@code prefix} after {@code context}
     * (see {@link Session#complete}: with typo corrections where this predictor makes them).
     */
    public List<Suggestion> complete(String context, String prefix, int k) {
        checkOpen();
        PrefixCache cache = prefixCache;
        if (cache == null) {
            Session s = session();
            s.commit(context, true);
            return s.complete(prefix, k);
        }
        if (prefix == null) throw new IllegalArgumentException("prefix must not be null");
        return stateless(cache, context, Session.strip(TextSpec.normalize(prefix)), k);
    }

    /**
     * As a session without a history that committed {@code context} ranks after it, from the
     * prefix cache: the model's result after the chunk's inputs (read, never written), merged with
     * the phrase table's entry for their last few. {@code prefix}: normalized and stripped.
     */
    private List<Suggestion> stateless(PrefixCache cache, String context, String prefix, int k) {
        if (context == null) throw new IllegalArgumentException("text must not be null");
        int[] inputs = cache.chunkInputs(context);
        float[] logProbs = cache.position(inputs).logProbs;
        Ranker.PhraseMatch phrase = ranker.phraseMatch(inputs, inputs.length);
        if (!prefix.isEmpty()) return ranker.complete(logProbs, prefix, k, phrase, null, 0.0, null);
        return ranker.merge(ranker.top(logProbs, ranker.suggestableIds(), k), k, prefix, phrase, null, 0.0, null, logProbs);
    }

    // -- shared by sessions ---------------------------------------------------------------

    /**
     * The step every sentence starts with ({@code <bos>} from the zero state), computed once:
     * an engine's answer depends only on its inputs. Callers copy it and never write into it.
     */
    StepEngine.FullStep sentenceStart() {
        StepEngine.FullStep s = sentenceStart;
        if (s == null) {
            checkOpen();
            s = model.engine.stepFull(Vocabulary.BOS, model.engine.initialState());
            sentenceStart = s;
        }
        return s;
    }
}
