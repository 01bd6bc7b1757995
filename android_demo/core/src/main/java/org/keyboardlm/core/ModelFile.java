package org.keyboardlm.core;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;

/**
 * A loaded model (keyboard_lm/inference/model_file.py): the checked archive (vocabulary,
 * metadata) and a {@link StepEngine} over the same file. Every problem at load is a
 * {@link ModelFileException} naming the file in one line; a loaded model is immutable and
 * may be used from many threads.
 *
 * <p>Where the bytes come from: {@link #load} maps the file into memory, {@link #fromBuffer}
 * reads any buffer in place (an uncompressed Android asset mapped through its file
 * descriptor, see android_demo/EMBEDDING.md), {@link #fromBytes} an array and
 * {@link #fromStream} a stream (read into one array first). The weights are decoded from the
 * bytes once, and the model keeps no reference to the bytes: after loading, its heap is the
 * decoded weights, and a mapped file may be replaced or deleted.
 *
 * <p>A file may carry a phrase table ({@link #phrases}, weighted by {@link #phraseGate}), which
 * a {@link Predictor} over it mixes into every strip; one that is damaged, foreign (another
 * vocabulary) or missing where the metadata describes it is a ModelFileException naming the file.
 *
 * <p>{@link #close} releases the engine's memory (a {@link JavaStepEngine}'s weights, or
 * whatever a {@link Closeable} engine holds); steps after it throw IllegalStateException.
 */
public final class ModelFile implements Closeable {
    public final String path;
    public final Vocabulary vocab;
    public final StepEngine engine;
    /** Inputs per training chunk; sessions restart the state after this many (see {@link Session}). */
    public final int seqLen;
    /** keyboard_lm.json as stored in the file (empty for a model built in code). */
    public final String metadataJson;
    /** The phrase table the file carries, or null: the model alone ranks. */
    public final PhraseTable phrases;
    /** The table's weight by context length and users; null exactly when {@link #phrases} is. */
    public final PhraseGate phraseGate;

    /** A model from parts (tests, or a LiteRT engine with a vocabulary read elsewhere), without a phrase table; checks they agree. */
    public ModelFile(String path, Vocabulary vocab, StepEngine engine, int seqLen, String metadataJson)
            throws ModelFileException {
        this(path, vocab, engine, seqLen, metadataJson, null, null);
    }

    /**
     * As {@link #ModelFile(String, Vocabulary, StepEngine, int, String)}, with the phrase table
     * and gate the file carries (both null: none); the table must be for this vocabulary.
     */
    public ModelFile(String path, Vocabulary vocab, StepEngine engine, int seqLen, String metadataJson, PhraseTable phrases,
                     PhraseGate phraseGate) throws ModelFileException {
        if (engine.vocabSize() != vocab.size()) {
            throw new ModelFileException(path + ": the model scores " + engine.vocabSize() + " words but its vocabulary has "
                    + vocab.size());
        }
        if (seqLen < 1) {
            throw new ModelFileException(path + ": seq_len " + seqLen + " is not positive");
        }
        Integer stateSize = ModelArchive.intField(metadataJson, "state_size");
        if (stateSize != null && stateSize != engine.stateSize()) {
            throw new ModelFileException(path + ": the model's state has " + engine.stateSize()
                    + " values, its metadata says " + stateSize);
        }
        if ((phrases == null) != (phraseGate == null)) {
            throw new IllegalArgumentException("a phrase table needs its gate and a gate its table");
        }
        if (phrases != null && phrases.vocabSize != vocab.size()) {
            throw new ModelFileException(path + ": the phrase table is for a vocabulary of " + phrases.vocabSize
                    + " words, the model has " + vocab.size());
        }
        this.path = path;
        this.vocab = vocab;
        this.engine = engine;
        this.seqLen = seqLen;
        this.metadataJson = metadataJson;
        this.phrases = phrases;
        this.phraseGate = phraseGate;
    }

    /** Read and check {@code path}, a .tflite written by keyboard-lm export; the file is mapped, not copied. */
    public static ModelFile load(String path) throws ModelFileException {
        return fromBuffer(path, ModelArchive.map(path));
    }

    /**
     * A model from a file's bytes (a download, an asset read into memory); {@code path} names
     * it in errors. The array is read, never written, and not kept.
     */
    public static ModelFile fromBytes(String path, byte[] data) throws ModelFileException {
        if (data == null) throw new IllegalArgumentException("data must not be null");
        return fromBuffer(path, ByteBuffer.wrap(data));
    }

    /**
     * A model from the rest of {@code in}, read into one array that is dropped after loading
     * (the stream is not closed); {@code name} names it in errors. A mapped buffer
     * ({@link #fromBuffer}) avoids holding the file on the heap while it loads.
     */
    public static ModelFile fromStream(String name, InputStream in) throws ModelFileException {
        return fromBuffer(name, ModelArchive.readStream(name, in));
    }

    /**
     * A model from the bytes of {@code data} between its position and its limit, read in place:
     * typically a {@link java.nio.MappedByteBuffer} of a file or of an uncompressed asset's
     * range. The buffer's position is not moved and no reference to it is kept. The archive is
     * checked first, as in Python, then the step engine loads the flatbuffer; anything the
     * engine trips over becomes a ModelFileException too, as does a mapped file that shrinks
     * while it is read.
     */
    public static ModelFile fromBuffer(String path, ByteBuffer data) throws ModelFileException {
        if (data == null) throw new IllegalArgumentException("data must not be null");
        ModelArchive archive = ModelArchive.fromBuffer(path, data);
        StepEngine engine;
        try {
            engine = JavaStepEngine.fromBuffer(path, data, true);  // the archive's check verified the checksum
        } catch (RuntimeException e) {
            throw new ModelFileException(path + ": the TFLite flatbuffer is corrupt (" + e + ")");
        }
        return new ModelFile(path, archive.vocabulary, engine, archive.seqLen, archive.metadataJson, archive.phrases,
                archive.phraseGate);
    }

    public int stateSize() {
        return engine.stateSize();
    }

    /**
     * Releases the engine's memory (idempotent): a {@link Closeable} engine is closed, and its
     * steps throw IllegalStateException afterwards. Sessions and predictors over this model
     * stop working; the vocabulary and metadata stay readable.
     */
    @Override
    public void close() {
        if (engine instanceof Closeable) {
            try {
                ((Closeable) engine).close();
            } catch (IOException e) {
                throw new IllegalStateException(path + ": closing the step engine failed: " + e.getMessage(), e);
            }
        }
    }
}
