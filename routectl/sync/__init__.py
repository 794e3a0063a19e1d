"""The sync loop: from a Node change to the cloud's routes and the Nodes' conditions.

* :mod:`~routectl.sync.changes`: the Nodes changed since the last sync;
* :mod:`~routectl.sync.queue`: the single-key coalescing queue;
* :mod:`~routectl.sync.worker`: claims syncs, requeues failures by error type;
* :mod:`~routectl.sync.controller`: one sync, top-down;
* :mod:`~routectl.sync.apply`: a plan carried out per route or in one batch;
* :mod:`~routectl.sync.condition_stream`: each Node's NetworkUnavailable written the moment
  its own routes are settled.
"""
