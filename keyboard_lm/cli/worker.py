"""``keyboard-lm worker``: a TFF worker that ``train --workers`` sends clients to."""

from __future__ import annotations

from keyboard_lm.cli.args import port_number, positive_int


def cmd_worker(args) -> int:
    """Run TFF's worker in the foreground, reachable only at --bind:--port, until Ctrl-C or SIGTERM."""
    import signal

    from keyboard_lm.errors import ConfigError
    from keyboard_lm.federated import worker_relay
    from keyboard_lm.federated.distributed import remote, worker_tls

    if args.tls_init:
        given = [f for f, v in (("--port", args.port), ("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key),
                                ("--tls-client-ca", args.tls_client_ca)) if v]
        if given:
            raise ConfigError(f"--tls-init writes certificates and exits; it takes no {', '.join(given)}")
        for path in worker_tls.init_dir(args.tls_init, args.tls_host or []):
            print(path)
        print("worker: ca.pem, server.pem, server-key.pem; driver (train): ca.pem, client.pem, client-key.pem "
              "(docs/distributed.md)")
        return 0
    if args.tls_host:
        raise ConfigError("--tls-host names hosts for the certificate that --tls-init writes; give --tls-init DIR")
    if args.port is None:
        raise ConfigError("--port is required (or --tls-init DIR to write certificates)")
    tls = worker_tls.tls_from_flags(args.tls_cert, args.tls_key, args.tls_client_ca, "--tls-client-ca")
    if tls is not None and args.insecure:
        raise ConfigError("--insecure allows plaintext; it cannot go with --tls-cert")
    # SIGTERM (docker stop, kill, systemd) ends the worker as Ctrl-C does, not this process alone: from before
    # the worker starts, so that a SIGTERM at any moment stops it (it used to come after the first line printed).
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    proc = remote.start_worker(args.port, bind=args.bind, max_concurrent_calls=args.max_concurrent_calls,
                               max_message_mb=args.max_message_mb, tls=tls, insecure=args.insecure,
                               allow_all_interfaces=args.allow_all_interfaces)
    try:
        if proc.isolated:
            how = "TLS, client certificates signed by " + tls.ca if tls is not None else "plaintext, no authentication"
            print(f"TFF worker on {args.bind}:{args.port} only ({how}); pid {proc.pid}; Ctrl-C stops it", flush=True)
        else:
            print(f"TFF worker (pid {proc.pid}) on port {args.port}; Ctrl-C stops it. Warning: this system does not "
                  f"permit network namespaces, so TFF's worker listens on every interface, whatever --bind says, "
                  f"with no authentication; firewall the port (docs/distributed.md)", flush=True)
        return proc.wait()
    except KeyboardInterrupt:
        worker_relay.stop_process(proc, timeout=10)
        raise


def register(sub) -> None:
    """Add ``worker``."""
    wk = sub.add_parser("worker", help="run a TFF worker that `train --workers` can send clients to",
                        description="Run TFF's worker reachable only at --bind:--port: it runs in its own network "
                                    "namespace and a relay forwards connections to it, after verifying a client "
                                    "certificate with --tls-*. Plaintext is refused on a non-loopback --bind "
                                    "unless --insecure (docs/distributed.md).")
    wk.add_argument("--port", type=port_number, default=None, help="TCP port to listen on (required)")
    wk.add_argument("--bind", default="127.0.0.1",
                    help="the one address to listen on (127.0.0.1); 0.0.0.0 or :: for every interface")
    wk.add_argument("--tls-cert", metavar="FILE", help="the worker's certificate chain (PEM)")
    wk.add_argument("--tls-key", metavar="FILE", help="its private key (PEM)")
    wk.add_argument("--tls-client-ca", metavar="FILE",
                    help="CA (PEM) that must have signed the client certificate of `train --tls-cert`; "
                         "connections without one are refused before they reach the worker")
    wk.add_argument("--insecure", action="store_true",
                    help="allow plaintext gRPC with no authentication on a non-loopback --bind (a trusted "
                         "private network only)")
    wk.add_argument("--allow-all-interfaces", action="store_true",
                    help="where the system does not permit network namespaces (the worker is refused there "
                         "without this flag), run TFF's worker as it is: plaintext, on every interface")
    wk.add_argument("--tls-init", metavar="DIR",
                    help="write a self-signed CA (ca.pem), a server certificate and a client certificate with "
                         "their keys into DIR, then exit; never overwrites")
    wk.add_argument("--tls-host", action="append", metavar="HOST",
                    help="with --tls-init: a host name or IP address the workers are reached at (repeatable; "
                         "127.0.0.1 and localhost are always in)")
    wk.add_argument("--max-concurrent-calls", type=positive_int, default=64, help="(64)")
    wk.add_argument("--max-message-mb", type=positive_int, default=1024, help="gRPC message limit in MB (1024)")
    wk.set_defaults(func=cmd_worker)
