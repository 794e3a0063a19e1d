"""The parts of the fake Compute API (:class:`routectl_gce.testing.FakeCompute`), one a concept.

* :mod:`~routectl_gce.fake.shapes`: the API's error bodies and its list ``filter`` language;
* :mod:`~routectl_gce.fake.routes`: global routes (list, get, insert, delete);
* :mod:`~routectl_gce.fake.operations`: global operations (``get``, ``wait``), which make
  the routes' changes when they end;
* :mod:`~routectl_gce.fake.instances`: zonal instances, their listing and aggregated list;
* :mod:`~routectl_gce.fake.metadata`: the metadata server and a token-url endpoint.

Each part is a mixin of ``FakeCompute``, which holds the state, the faults and the server.
"""
