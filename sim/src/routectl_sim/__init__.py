"""``routectl simulate``: the real controller against a fake cluster and a simulated cloud.

The informer, queue, worker and rate limiter are routectl's own code, talking HTTP to
:class:`~routectl_sim.apiserver.FakeApiServer` and calling a
:class:`~routectl.testing.FakeCloud`, under a virtual clock, so hours of
cluster life take minutes. Each controller profile is expressed only through
``routectl run`` flags (:mod:`routectl_sim.profiles`) and runs the same seeded
workload (:mod:`routectl_sim.workload`); :mod:`routectl_sim.measure` records what
each costs, and :mod:`routectl_sim.report` prints and plots it.
"""
