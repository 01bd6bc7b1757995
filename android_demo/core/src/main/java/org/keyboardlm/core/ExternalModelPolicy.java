package org.keyboardlm.core;

import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Locale;

/**
 * Whether the keyboard may use a model file from outside its signed APK (a file pushed to the
 * app's external files directory, which other apps or a USB user can write): only when the
 * file's sha256 is one the app was built with. The accepted digests ship inside the APK (the
 * app's resources), so the signature that vouches for the bundled model vouches for them too;
 * nothing stored beside the file (a sidecar digest) could, since whoever writes the file can
 * write that as well. Any other file is refused with one line naming it and its digest, and
 * the keyboard uses the model in the APK.
 */
public final class ExternalModelPolicy {
    private final List<String> accepted;

    /**
     * {@code acceptedSha256}: lowercase or uppercase hex sha256 digests (64 digits each);
     * empty entries are ignored (an empty list accepts no file). A malformed entry raises
     * IllegalArgumentException naming it, since it could never match.
     */
    public ExternalModelPolicy(Collection<String> acceptedSha256) {
        if (acceptedSha256 == null) throw new IllegalArgumentException("acceptedSha256 must not be null");
        accepted = new ArrayList<String>();
        for (String digest : acceptedSha256) {
            String d = digest == null ? "" : digest.trim().toLowerCase(Locale.ROOT);
            if (d.isEmpty()) continue;
            if (!d.matches("[0-9a-f]{64}")) {
                throw new IllegalArgumentException("accepted model sha256 '" + digest + "' is not 64 hex digits");
            }
            accepted.add(d);
        }
    }

    /** Null when the model file at {@code path}, whose content is {@code bytes}, may be used; else why not, in one line. */
    public String refusal(String path, byte[] bytes) {
        String digest = sha256(bytes);
        if (accepted.contains(digest)) return null;
        return path + ": not used: its sha256 " + digest + (accepted.isEmpty()
                ? " is not accepted (this app accepts no model from outside its APK)"
                : " is none of the " + accepted.size() + " this app accepts");
    }

    /** Lowercase hex sha256 of {@code bytes}. */
    public static String sha256(byte[] bytes) {
        try {
            byte[] d = MessageDigest.getInstance("SHA-256").digest(bytes);
            StringBuilder b = new StringBuilder(64);
            for (byte x : d) b.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
            return b.toString();
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("this Java has no SHA-256", e);
        }
    }
}
