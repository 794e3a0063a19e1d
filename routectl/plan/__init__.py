"""The pure plan: upstream's route controller rules, and what a change can touch.

* :mod:`~routectl.plan.reconcile`: the planner (``plan``, ``routes_created``,
  ``desired_condition``, ``needs_sync``, ``is_responsible``);
* :mod:`~routectl.plan.scope`: the Nodes and routes a change can affect (``RouteIndex``);
* :mod:`~routectl.plan.guard`: the mass-delete guard as a decision;
* :mod:`~routectl.plan.cidr_index`: ``ClaimIndex``, which Node names which pod CIDR;
* :mod:`~routectl.plan.conditions`: which Nodes get a NetworkUnavailable write, and which;
* :mod:`~routectl.plan.problems`: reports on bad or surprising input.

Pure: no I/O, no clock, no logging; everything here is a function of its arguments.
"""
