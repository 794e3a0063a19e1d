"""The coalescing queue against a tiny model of its promises (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from routectl.sync.queue import QueueState

TICK = 1e-6  # the queue treats a wait shorter than a clock tick as done (virtual clocks)

steps = st.lists(
    st.tuples(
        st.sampled_from(["request", "settle", "claim", "done", "retry", "tick"]), st.floats(0, 5)
    ),
    max_size=60,
)


class Model:
    """What the queue promises, in the simplest terms: a reference to check it against."""

    def __init__(
        self, window: float, interval: float, cap: float | None = None, quiet: float = 0.0
    ) -> None:
        self.window, self.interval, self.cap, self.quiet = window, interval, cap, quiet
        self.pending_since: float | None = None  # a request not yet covered by a claim
        self.hold_until = 0.0  # the batch window (or backoff) that request must wait out
        self.running = False
        self.last_end: float | None = None
        self.starts: list[float] = []

    def requested(self, now: float, *, delay: float = 0.0, settle: bool = False) -> None:
        if self.pending_since is None:
            self.pending_since = now
            idle = not self.running and (
                self.last_end is None or now >= self.last_end + self.window
            )
            if idle:
                self.hold_until = now
            elif self.running:
                self.hold_until = now + self.window
            else:
                self.hold_until = (self.last_end or now) + self.window
        self.hold_until = max(self.hold_until, now + delay)
        if settle and self.cap is not None:  # until requests pause, within the cap
            self.hold_until = max(
                self.hold_until, min(now + self.quiet, self.pending_since + self.cap)
            )

    def claimed(self, now: float) -> None:
        assert not self.running, "two syncs at once"
        assert self.pending_since is not None, "a sync nobody asked for"
        assert now >= self.hold_until - TICK, "batch window or backoff not honoured"
        if self.starts:
            assert now >= self.starts[-1] + self.interval - TICK, "syncs closer than min_interval"
        self.running, self.pending_since = True, None
        self.starts.append(now)

    def not_claimed(self, now: float) -> None:
        if self.pending_since is not None and not self.running:
            due = max(self.hold_until, self.starts[-1] + self.interval if self.starts else 0.0)
            assert now < due + TICK, "a due sync was not handed out"


@settings(max_examples=500, deadline=None)
@given(
    steps=steps,
    window=st.floats(0, 3),
    interval=st.floats(0, 10),
    cap=st.none() | st.floats(0, 10),
    quiet=st.floats(0, 3),
)
def test_queue_never_loses_a_request_and_never_overlaps(
    steps, window, interval, cap, quiet
) -> None:
    """Every request is followed by a sync claimed after it; syncs never overlap or crowd;
    a request on an idle queue is not held back, others wait out the batch window; on a
    settling queue, settling requests wait for a pause (quiet), within the cap."""
    q = QueueState(batch_window=window, min_interval=interval, settle_cap=cap, settle_quiet=quiet)
    model = Model(window, interval, cap, quiet)
    now = 0.0
    for op, amount in steps:
        if op == "tick":
            now += amount
        elif op == "request":
            q.request(now=now, trigger="node_change")
            model.requested(now)
        elif op == "settle":
            q.request(now=now, trigger="node_change", settle=True)
            model.requested(now, settle=True)
        elif op == "retry":
            q.retry_after(now=now, delay=amount, trigger="retry")
            model.requested(now, delay=amount)
        elif op == "claim":
            if q.claim(now=now) is not None:
                model.claimed(now)
            else:
                model.not_claimed(now)
        elif op == "done" and model.running:
            q.done(now=now)
            model.running, model.last_end = False, now
    if model.running:
        q.done(now=now)
    if model.pending_since is not None:
        wait = q.due_in(now=now)
        assert wait is not None, "a pending request was lost"
        assert q.claim(now=now + wait) is not None


def test_a_lone_request_on_an_idle_queue_is_due_at_once() -> None:
    """The leading edge: no batch window in front of a lone Node event."""
    q = QueueState(batch_window=0.25)
    q.request(now=100.0, trigger="node_change")
    assert q.due_in(now=100.0) == 0.0
    assert q.claim(now=100.0) is not None
    q.done(now=101.0)
    q.request(now=101.1, trigger="node_change")  # within the window after a sync: coalesces
    assert q.claim(now=101.1) is None
    assert q.claim(now=101.25) is not None


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
    q.done(now=10.0)
    assert q.claim(now=20.0) is None


def test_request_during_sync_makes_exactly_one_more() -> None:
    """Requests while a sync runs make exactly one more sync after it."""
    q = QueueState(batch_window=0.0)
    q.request(now=0, trigger="node_change")
    assert q.claim(now=0) is not None
    for t in range(5):
        q.request(now=t, trigger="node_change")
    assert q.claim(now=5) is None, "no overlap while running"
    q.done(now=5)
    assert q.claim(now=5) is not None
    q.done(now=5)
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
