package org.keyboardlm.core;

/** A model file that cannot be used; the message names the file and what is wrong, in one line. */
public class ModelFileException extends Exception {
    private static final long serialVersionUID = 1L;

    public ModelFileException(String message) {
        super(message);
    }
}
