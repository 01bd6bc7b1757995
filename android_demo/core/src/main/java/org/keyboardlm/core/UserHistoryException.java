package org.keyboardlm.core;

/** A user history file that cannot be used; the message names the file and what is wrong, in one line. */
public class UserHistoryException extends Exception {
    public UserHistoryException(String message) {
        super(message);
    }
}
