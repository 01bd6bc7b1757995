"""TFF's runtime in this process and across machines: the local worker's lifecycle (``runtime``), remote
TFF workers and their watchdog (``remote``), the relay and TLS in front of them (``worker_relay``,
``worker_tls``), and client data that workers read themselves (``worker_data``).

Part of the federated layer (it imports TFF); nothing here is needed to train in one process.
"""
