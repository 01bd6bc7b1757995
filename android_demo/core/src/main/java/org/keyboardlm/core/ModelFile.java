package org.keyboardlm.core;

/**
 * A loaded model (keyboard_lm/inference/model_file.py): the checked archive (vocabulary,
 * metadata) and a {@link StepEngine} over the same file. Every problem at load is a
 * {@link ModelFileException} naming the file in one line; a loaded model is immutable and
 * may be used from many threads.
 */
public final class ModelFile {
    public final String path;
    public final Vocabulary vocab;
    public final StepEngine engine;
    /** Inputs per training chunk; sessions restart the state after this many (see {@link Session}). */
    public final int seqLen;
    /** keyboard_lm.json as stored in the file (empty for a model built in code). */
    public final String metadataJson;

    /** A model from parts (tests, or a LiteRT engine with a vocabulary read elsewhere); checks they agree. */
    public ModelFile(String path, Vocabulary vocab, StepEngine engine, int seqLen, String metadataJson)
            throws ModelFileException {
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
        this.path = path;
        this.vocab = vocab;
        this.engine = engine;
        this.seqLen = seqLen;
        this.metadataJson = metadataJson;
    }

    /** Read and check {@code path}, a .tflite written by keyboard-lm export. */
    public static ModelFile load(String path) throws ModelFileException {
        return fromBytes(path, ModelArchive.readFile(path));
    }

    /**
     * A model from a file's bytes (an Android asset, a download); {@code path} names it in
     * errors. The archive is checked first, as in Python, then the step engine loads the
     * flatbuffer; anything the engine trips over becomes a ModelFileException too.
     */
    public static ModelFile fromBytes(String path, byte[] data) throws ModelFileException {
        ModelArchive archive = ModelArchive.fromBytes(path, data);
        StepEngine engine;
        try {
            engine = JavaStepEngine.fromBytes(path, data);
        } catch (RuntimeException e) {
            throw new ModelFileException(path + ": the TFLite flatbuffer is corrupt (" + e + ")");
        }
        return new ModelFile(path, archive.vocabulary, engine, archive.seqLen, archive.metadataJson);
    }

    public int stateSize() {
        return engine.stateSize();
    }
}
