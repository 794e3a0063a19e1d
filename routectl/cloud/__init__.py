"""The cloud boundary: the path every cloud call takes from a sync to a provider plugin.

* :mod:`~routectl.cloud.gate`: ``CloudGate``, the one gate every call passes (budget,
  concurrency, timeout, retries, the fence, checks on what the plugin answers);
* :mod:`~routectl.cloud.policy`: ``CallPolicy``, how the gate paces and retries;
* :mod:`~routectl.cloud.budget`: ``Budget``, the token bucket every request spends, handed to
  plugins, and a cloud's Retry-After pause;
* :mod:`~routectl.cloud.fence`: ``Fence``, no write starts unless this replica's Lease outlives it;
* :mod:`~routectl.cloud.listing`: ``ListingCache``, the routes as last listed, kept current
  with routectl's own writes.

The plugin contract itself (:mod:`routectl.provider`) stays in the plugin SDK at the root.
"""
