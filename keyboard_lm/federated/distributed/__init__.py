"""TFF across processes and machines: the local worker (``local_worker``), remote TFF workers and their
watchdog (``remote``), the relay and TLS in front of them (``worker_relay``,
``worker_tls``), and client data that workers read themselves (``worker_data``).

Part of the federated layer (it imports TFF). Starting TFF in this process is ``federated.runtime``, which
single-machine training and these workers share.
"""
