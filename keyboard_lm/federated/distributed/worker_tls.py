"""TLS with client certificates between ``train --workers`` and ``keyboard-lm worker``.

Both ends hold the same three files: their own certificate and key, and the
CA that signed the other end's certificate (``TLSFiles``).  The worker's relay
(``federated.worker_relay``) terminates TLS with Python's ``ssl`` (ALPN "h2", a client
certificate required and verified); the driver's gRPC channels present the
client certificate (``channel_credentials``).  ``init_dir`` writes a
self-signed CA, a server and a client certificate for a quick start.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import re
import shutil
import subprocess
import tempfile

from keyboard_lm.errors import ConfigError

#: The files ``init_dir`` writes: the CA certificate, the worker's and the driver's certificate and key.
INIT_FILES = ("ca.pem", "server.pem", "server-key.pem", "client.pem", "client-key.pem")
#: Hosts every server certificate names, so a worker is reachable through an SSH tunnel or on its own machine.
LOCAL_HOSTS = ("127.0.0.1", "localhost")


@dataclasses.dataclass(frozen=True)
class TLSFiles:
    """Own certificate chain and private key (PEM), and the CA (PEM) that signed the peer's certificate."""

    cert: str
    key: str
    ca: str

    def read(self) -> tuple[bytes, bytes, bytes]:
        """(cert, key, ca) bytes; one clear error naming a file that cannot be read or is not PEM."""
        out = []
        for what, path in (("certificate", self.cert), ("key", self.key), ("CA certificate", self.ca)):
            try:
                with open(path, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise ConfigError(f"TLS {what} {path}: {e.strerror}") from None
            if b"-----BEGIN " not in data:
                raise ConfigError(f"TLS {what} {path}: not a PEM file")
            out.append(data)
        return tuple(out)


def tls_from_flags(cert: str | None, key: str | None, ca: str | None, ca_flag: str) -> TLSFiles | None:
    """The TLSFiles of ``--tls-cert``, ``--tls-key`` and ``ca_flag``; None if none is given, an error if some are."""
    given = {"--tls-cert": cert, "--tls-key": key, ca_flag: ca}
    if not any(given.values()):
        return None
    missing = [flag for flag, value in given.items() if not value]
    if missing:
        have = [flag for flag, value in given.items() if value]
        raise ConfigError(f"{' and '.join(have)} without {' and '.join(missing)}: TLS needs all three of "
                          f"--tls-cert, --tls-key and {ca_flag}")
    files = TLSFiles(cert, key, ca)
    files.read()
    return files


def server_context(files: TLSFiles):
    """The worker's ``ssl.SSLContext``: TLS 1.2+, ALPN h2 (gRPC requires it), client certificate REQUIRED."""
    import ssl

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(files.cert, files.key)
        ctx.load_verify_locations(cafile=files.ca)
    except (ssl.SSLError, OSError) as e:
        raise ConfigError(f"TLS files {files.cert}, {files.key}, {files.ca}: {e}") from None
    ctx.verify_mode = ssl.CERT_REQUIRED
    ctx.set_alpn_protocols(["h2"])
    return ctx


def channel_credentials(files: TLSFiles):
    """``grpc.ssl_channel_credentials`` of the driver: trust ``files.ca``, present ``files.cert``."""
    import grpc

    cert, key, ca = files.read()
    return grpc.ssl_channel_credentials(root_certificates=ca, private_key=key, certificate_chain=cert)


def init_dir(directory: str, hosts: list[str] = (), days: int = 825, *, tool: str | None = None) -> list[str]:
    """Write a self-signed CA, a server and a client certificate with their keys into ``directory``.

    The server certificate names ``hosts`` and ``LOCAL_HOSTS`` (SubjectAltName);
    the CA's key is not kept.  Refuses to overwrite any of ``INIT_FILES``.
    ``tool``: "cryptography" or "openssl"; by default the ``cryptography``
    package if importable, else the ``openssl`` command.  Returns the paths
    written.
    """
    paths = [os.path.join(directory, name) for name in INIT_FILES]
    present = [p for p in paths if os.path.exists(p)]
    if present:
        raise ConfigError(f"--tls-init {directory}: {', '.join(os.path.basename(p) for p in present)} already "
                          "there; refusing to overwrite (give an empty or new directory)")
    names = list(dict.fromkeys([*hosts, *LOCAL_HOSTS]))
    for host in names:
        problem = host_problem(host)
        if problem:
            raise ConfigError(f"--tls-host {host!r}: {problem}")
    import importlib.util

    if tool is None:
        tool = ("cryptography" if importlib.util.find_spec("cryptography") is not None
                else "openssl" if shutil.which("openssl") is not None else None)
    if tool is None:
        raise ConfigError("--tls-init needs the Python package 'cryptography' or the openssl command; "
                          "neither is installed")
    pems = (_with_cryptography if tool == "cryptography" else _with_openssl)(names, days)
    os.makedirs(directory, exist_ok=True)
    for path, name in zip(paths, INIT_FILES):
        # A key is readable by its owner only; O_EXCL: never overwrite a file that appeared meanwhile.
        mode = 0o600 if name.endswith("-key.pem") else 0o644
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(pems[name])
    return paths


#: A DNS name as a certificate's SubjectAltName holds it: ASCII labels of letters, digits, '-' and '_'
#: (1-63 characters, no '-' at either end), an optional leading '*.' wildcard, at most 253 characters.
_DNS_NAME = re.compile(r"(\*\.)?(?!-)[A-Za-z0-9_-]{1,63}(?<!-)(\.(?!-)[A-Za-z0-9_-]{1,63}(?<!-))*\.?")


def host_problem(host: str) -> str | None:
    """Why ``host`` cannot be named in a certificate (None if it can: an IP address or an ASCII DNS name).

    A name with non-ASCII letters must be given in its IDNA form (``xn--...``), as DNS and the TLS
    handshake carry it; the message says what that form is.
    """
    if _is_ip(host):
        return None
    if not host.isascii():
        try:
            ascii_form = host.encode("idna").decode("ascii")
        except UnicodeError:
            return "not a host name or IP address"
        return f"not an ASCII host name; give its IDNA form, {ascii_form}"
    if len(host) > 253 or not _DNS_NAME.fullmatch(host):
        return "not a host name or IP address"
    return None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def _with_cryptography(hosts: list[str], days: int) -> dict[str, bytes]:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=days)

    def name(cn):
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

    def pem_key(key):
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name("keyboard-lm worker CA")
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    out = {"ca.pem": ca.public_bytes(serialization.Encoding.PEM)}
    alt = [x509.IPAddress(ipaddress.ip_address(h)) if _is_ip(h) else x509.DNSName(h) for h in hosts]
    for role, usage, extra in (("server", ExtendedKeyUsageOID.SERVER_AUTH, [x509.SubjectAlternativeName(alt)]),
                               ("client", ExtendedKeyUsageOID.CLIENT_AUTH, [])):
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder().subject_name(name(f"keyboard-lm {role}")).issuer_name(ca.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(start).not_valid_after(end)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                                  critical=False))
        for ext in extra:
            builder = builder.add_extension(ext, critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        out[f"{role}.pem"] = cert.public_bytes(serialization.Encoding.PEM)
        out[f"{role}-key.pem"] = pem_key(key)
    return out


def _with_openssl(hosts: list[str], days: int) -> dict[str, bytes]:
    alt = ",".join(f"IP:{h}" if _is_ip(h) else f"DNS:{h}" for h in hosts)
    with tempfile.TemporaryDirectory() as tmp:
        def run(*args):
            done = subprocess.run(["openssl", *args], cwd=tmp, capture_output=True, text=True)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["failed"])[-1]
                raise ConfigError(f"--tls-init: openssl {args[0]}: {last}")

        curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        run("req", "-x509", *curve, "-keyout", "ca-key.pem", "-out", "ca.pem", "-days", str(days),
            "-subj", "/CN=keyboard-lm worker CA", "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        for role, ext in (("server", f"extendedKeyUsage=serverAuth\nsubjectAltName={alt}\n"),
                          ("client", "extendedKeyUsage=clientAuth\n")):
            with open(os.path.join(tmp, f"{role}.ext"), "w", encoding="utf-8") as f:
                f.write("basicConstraints=critical,CA:FALSE\n" + ext)
            run("req", "-new", *curve, "-keyout", f"{role}-key.pem", "-out", f"{role}.csr",
                "-subj", f"/CN=keyboard-lm {role}")
            run("x509", "-req", "-in", f"{role}.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
                "-days", str(days), "-sha256", "-extfile", f"{role}.ext", "-out", f"{role}.pem")
        out = {}
        for name in INIT_FILES:
            with open(os.path.join(tmp, name), "rb") as f:
                out[name] = f.read()
        return out
