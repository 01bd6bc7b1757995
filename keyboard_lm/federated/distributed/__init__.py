"""TFF across machines: remote TFF workers and their watchdog (``remote``), TLS in front of them
(``worker_tls``), and client data that workers read themselves (``worker_data``).

Part of the federated layer (it imports TFF). What single-machine runs need as well stays outside this
package and is shared from there: starting TFF in this process (``federated.runtime``), its local worker
(``federated.local_worker``), the relay in front of a worker (``federated.worker_relay``) and starting the
worker binary (``federated.worker_process``).
"""
