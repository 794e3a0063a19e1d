"""The running process: the one builder, the service's tasks, and leader election.

* :mod:`~routectl.process.wiring`: ``build_service``, the only place the pieces meet;
* :mod:`~routectl.process.service`: informer, leader, worker, timers, shutdown;
* :mod:`~routectl.process.election`: leader election on a Lease, bounded and safe.
"""
