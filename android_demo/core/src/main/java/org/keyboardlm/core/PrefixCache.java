package org.keyboardlm.core;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The model's results after recent token prefixes, for a predictor's stateless calls
 * (keyboard_lm/inference/prefix_cache.py).
 *
 * <p>{@link Predictor#suggest} and {@link Predictor#complete} stand where a session that typed
 * the context would: after the current training chunk of its last sentence (at most seqLen model
 * inputs, each chunk from a zero state; see {@link Session#commit(String, boolean)}). An app
 * usually passes the whole text field on every key event, so consecutive contexts share all but
 * their last word. A PrefixCache keeps, for the {@link #capacity()} most recently used input
 * prefixes of such chunks (token ids, {@code <bos>} included), the model's result after the
 * prefix (log-probs and state), and steps the model only over the inputs after the longest cached
 * prefix: a field one word longer costs one step, an edit in the middle the steps from the edit
 * on, the same field again none. Entries are evicted least recently used first. Each holds
 * vocabulary + state floats (the Java session ranks the full distribution): 2.8 MB for 64
 * entries at the paper's vocabulary of 10,000 and state of 766.
 *
 * <p>Thread-safe: one lock guards the table, and model steps run outside it. Cached results are
 * never written after they are stored, so a caller may read one after it was evicted.
 *
 * <p>Unlike Python's cache, this one does not keep the scan of recent contexts: each call scans
 * its whole context with the text spec.
 */
public final class PrefixCache {
    /** Token prefixes a {@link Predictor} keeps by default (Python's PREFIX_CACHE_SIZE). */
    public static final int DEFAULT_SIZE = 64;

    private final Predictor predictor;
    private final StepEngine engine;
    private final int seqLen;
    private final int capacity;
    /** Input prefix -> the model after its last input; access order, least recently used first. */
    private final LinkedHashMap<Key, StepEngine.FullStep> results;

    PrefixCache(Predictor predictor, final int capacity) {
        if (capacity < 1) throw new IllegalArgumentException("prefix cache size must be >= 1, got " + capacity);
        this.predictor = predictor;
        this.engine = predictor.model.engine;
        this.seqLen = predictor.model.seqLen;
        this.capacity = capacity;
        this.results = new LinkedHashMap<Key, StepEngine.FullStep>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Key, StepEngine.FullStep> eldest) {
                return size() > capacity;
            }
        };
    }

    /** The most prefixes kept. */
    public int capacity() {
        return capacity;
    }

    /** Prefixes kept now (at most {@link #capacity()}). */
    public int size() {
        synchronized (results) {
            return results.size();
        }
    }

    /**
     * The model inputs {@code commit(context, true)} steps from a zero state: the current chunk of
     * the last sentence. Input i of a sentence is {@code <bos>} (i = 0) or word i; chunks hold
     * seqLen inputs, and the chunk of the last input is the one replayed.
     */
    int[] chunkInputs(String context) {
        List<TextSpec.Item> items = TextSpec.scan(context);
        int lastEnd = -1;
        for (int i = 0; i < items.size(); i++) if (items.get(i).end) lastEnd = i;
        int words = items.size() - lastEnd - 1;
        int chunk = words / seqLen;  // chunk of the last input (word i is input i)
        Vocabulary vocab = predictor.vocab;
        if (chunk > 0) {
            int first = lastEnd + 1 + chunk * seqLen - 1;  // the word that is input 0 of the chunk
            int[] inputs = new int[items.size() - first];
            for (int i = 0; i < inputs.length; i++) inputs[i] = vocab.idOf(items.get(first + i).text);
            return inputs;
        }
        int[] inputs = new int[words + 1];
        inputs[0] = Vocabulary.BOS;
        for (int i = 1; i < inputs.length; i++) inputs[i] = vocab.idOf(items.get(lastEnd + i).text);
        return inputs;
    }

    /** The model after {@code context}, as a session that committed it with replayTail leaves it. Never write into it. */
    StepEngine.FullStep position(String context) {
        return position(chunkInputs(context));
    }

    /**
     * The model after {@code inputs} from the zero state. Steps only the inputs after the longest
     * cached prefix, and caches every prefix it steps. Never write into the result.
     */
    StepEngine.FullStep position(int[] inputs) {
        Key[] keys = new Key[inputs.length + 1];
        int hash = 1;
        for (int n = 1; n <= inputs.length; n++) {
            hash = 31 * hash + inputs[n - 1];
            keys[n] = new Key(inputs, n, hash);
        }
        int done = 0;
        StepEngine.FullStep at = null;
        synchronized (results) {
            for (int n = inputs.length; n > 0 && at == null; n--) {
                at = results.get(keys[n]);  // a hit becomes the most recently used
                if (at != null) done = n;
            }
        }
        if (done == inputs.length) return at;
        StepEngine.FullStep[] stepped = new StepEngine.FullStep[inputs.length + 1];
        int from = done;
        if (done == 0 && inputs[0] == Vocabulary.BOS) {
            // A sentence start: the predictor's one <bos> step, shared and never written.
            at = predictor.sentenceStart();
            stepped[1] = at;
            done = 1;
        }
        float[] state = at == null ? engine.initialState() : at.state;
        for (int n = done; n < inputs.length; n++) {
            at = engine.stepFull(inputs[n], state);
            stepped[n + 1] = at;
            state = at.state;
        }
        synchronized (results) {
            for (int n = from + 1; n <= inputs.length; n++) results.put(keys[n], stepped[n]);
        }
        return at;
    }

    /** The first {@code length} ids of an input array (never changed once built), as a map key. */
    private static final class Key {
        final int[] ids;
        final int length;
        final int hash;

        Key(int[] ids, int length, int hash) {
            this.ids = ids;
            this.length = length;
            this.hash = hash;
        }

        @Override
        public int hashCode() {
            return hash;
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Key)) return false;
            Key k = (Key) o;
            if (k.length != length || k.hash != hash) return false;
            for (int i = 0; i < length; i++) if (k.ids[i] != ids[i]) return false;
            return true;
        }
    }
}
