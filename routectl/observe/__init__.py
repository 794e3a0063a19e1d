"""What an operator sees of the process: logs, metrics, probes and how they are served.

* :mod:`~routectl.observe.logs`, :mod:`~routectl.observe.logctx`: klog's text and JSON
  lines, ``-v`` levels, the sync a line belongs to;
* :mod:`~routectl.observe.redact`: credentials kept out of logs and Events;
* :mod:`~routectl.observe.metrics`, :mod:`~routectl.observe.clientgo_metrics`: every
  Prometheus metric, client-go's names where they exist;
* :mod:`~routectl.observe.probes`, :mod:`~routectl.observe.serving`: ``/metrics``,
  ``/healthz``, ``/readyz``, over HTTP or HTTPS with delegated authentication.
"""
