"""``routectl simulate``: the real controller against a fake cluster and a simulated cloud.

The informer, queue, worker and rate limiter are routectl's own code, talking HTTP to
:class:`~routectl.testing.apiserver.FakeApiServer` and calling a
:class:`~routectl.testing.FakeCloud`, under a virtual clock (looptime), so hours of
cluster life take minutes. Each controller profile is expressed only through
``routectl run`` flags (:mod:`routectl.simulate.profiles`) and runs the same seeded
workload (:mod:`routectl.simulate.workload`); :mod:`routectl.simulate.measure` records what
each costs, and :mod:`routectl.simulate.report` prints and plots it.
"""
