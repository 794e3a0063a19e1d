"""Node IPAM (``--allocate-node-cidrs``): pod CIDRs for Nodes registered without one.

* :mod:`routectl.ipam.core`: the pure allocator (no I/O, no clock, no logging): the sparse
  free structure, pools and KCM's checks, findings, quarantine, the allocator and its rebuild
  from the API, claim and patch objects, pool usage;
* :mod:`routectl.ipam.edge`: its step in the sync and the writes it makes: claim Leases, Node
  patches, Events, log lines and metrics.

This package imports nothing itself, so the pure core can be imported without the edge.
"""
