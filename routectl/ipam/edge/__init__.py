"""Node IPAM's edge: the allocator's step inside a sync, and every write it makes.

* :mod:`~routectl.ipam.edge.step`: ``NodeIpam``, the step the controller runs after the
  listing and before the plan;
* :mod:`~routectl.ipam.edge.writer`: ``CidrWriter``, claims then Node patches, through the fence;
* :mod:`~routectl.ipam.edge.leases`: ``ClaimLeases``, the claim Lease per allocated CIDR;
* :mod:`~routectl.ipam.edge.report`: ``IpamReport``, Events, log lines and metrics once per
  transition;
* :mod:`~routectl.ipam.edge.metrics`: node IPAM's metrics.
"""
