"""The coalescing queue against a tiny model of its promises (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from routectl.queue import QueueState

TICK = 1e-6  # the queue treats a wait shorter than a clock tick as done (virtual clocks)

steps = st.lists(
    st.tuples(st.sampled_from(["request", "claim", "done", "retry", "tick"]), st.floats(0, 5)),
    max_size=60,
)


@settings(max_examples=500, deadline=None)
@given(steps=steps, window=st.floats(0, 3), interval=st.floats(0, 10))
def test_queue_never_loses_a_request_and_never_overlaps(steps, window, interval) -> None:
    """Every request is followed by a sync claimed after it; syncs never overlap or crowd."""
    q = QueueState(batch_window=window, min_interval=interval)
    now = 0.0
    pending_since: float | None = None  # the model: a request not yet covered by a claim
    running = False
    starts: list[float] = []
    for op, amount in steps:
        if op == "tick":
            now += amount
        elif op == "request":
            q.request(now=now, trigger="node_change")
            pending_since = now if pending_since is None else pending_since
        elif op == "retry":
            q.retry_after(now=now, delay=amount, trigger="retry")
            pending_since = now if pending_since is None else pending_since
        elif op == "claim":
            batch = q.claim(now=now)
            if batch is not None:
                assert not running, "two syncs at once"
                assert pending_since is not None, "a sync nobody asked for"
                assert now >= pending_since + window - TICK, "batch window not honoured"
                if starts:
                    assert now >= starts[-1] + interval - TICK, "syncs closer than min_interval"
                running, pending_since = True, None
                starts.append(now)
        elif op == "done" and running:
            q.done()
            running = False
    if running:
        q.done()
    if pending_since is not None:
        wait = q.due_in(now=now)
        assert wait is not None, "a pending request was lost"
        assert q.claim(now=now + wait) is not None


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 50), window=st.floats(0.01, 3))
def test_many_requests_before_a_claim_make_one_sync(n, window) -> None:
    """N requests while idle coalesce into exactly one sync that counts them."""
    q = QueueState(batch_window=window)
    for i in range(n):
        q.request(now=i * window / (2 * n), trigger="node_change")
    batch = q.claim(now=10.0)
    assert batch is not None
    assert batch.requests == n
    q.done()
    assert q.claim(now=20.0) is None


def test_request_during_sync_makes_exactly_one_more() -> None:
    """Requests while a sync runs make exactly one more sync after it."""
    q = QueueState(batch_window=0.0)
    q.request(now=0, trigger="node_change")
    assert q.claim(now=0) is not None
    for t in range(5):
        q.request(now=t, trigger="node_change")
    assert q.claim(now=5) is None, "no overlap while running"
    q.done()
    assert q.claim(now=5) is not None
    q.done()
    assert q.claim(now=100) is None


def test_retry_after_is_not_cut_short_by_requests() -> None:
    """A backoff holds even if new requests arrive during it."""
    q = QueueState(batch_window=0.0)
    q.retry_after(now=0, delay=30, trigger="retry")
    q.request(now=1, trigger="node_change")
    assert q.claim(now=29) is None
    batch = q.claim(now=30)
    assert batch is not None
    assert batch.triggers == {"retry", "node_change"}
