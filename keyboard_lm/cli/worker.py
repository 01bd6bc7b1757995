"""``keyboard-lm worker``: a TFF worker that ``train --workers`` sends clients to."""

from __future__ import annotations

from keyboard_lm.cli.args import positive_int


def cmd_worker(args) -> int:
    """Run TFF's C++ worker in the foreground until interrupted."""
    from keyboard_lm.federated import remote

    proc = remote.start_worker(args.port, bind=args.bind, max_concurrent_calls=args.max_concurrent_calls,
                               max_message_mb=args.max_message_mb)
    # TFF 0.87's worker binary has no address flag: it listens on every interface whatever --bind says.
    print(f"TFF worker (pid {proc.pid}) on port {args.port}; Ctrl-C stops it. Warning: TFF's worker listens on "
          f"every interface and has no authentication; block the port from other machines (firewall) and reach "
          f"it through an SSH tunnel or a private network (docs/distributed.md)", flush=True)
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        proc.wait(timeout=10)
        raise


def register(sub) -> None:
    """Add ``worker``."""
    wk = sub.add_parser("worker", help="run a TFF worker that `train --workers` can send clients to")
    wk.add_argument("--port", type=positive_int, required=True)
    wk.add_argument("--bind", default="127.0.0.1",
                    help="127.0.0.1 (default) or 0.0.0.0; either way TFF's worker binary listens on every "
                         "interface (it has no address flag), so firewall the port")
    wk.add_argument("--max-concurrent-calls", type=positive_int, default=64, help="(64)")
    wk.add_argument("--max-message-mb", type=positive_int, default=1024, help="gRPC message limit in MB (1024)")
    wk.set_defaults(func=cmd_worker)
