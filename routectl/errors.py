"""The error tree. Every error routectl raises on purpose is one of these.

Retry semantics are carried by type, so the worker loop is the only place that decides what
an error means, and plugins translate their SDK's exceptions at their own boundary
(``raise ProviderThrottledError(...) from exc``)::

    * RoutectlError
      + ConfigError                  -- bad flag, value or option; exit 2 at start-up
        - ProviderNotFoundError      -- no entry point of that name in ``routectl.providers``
      + InvalidObjectError           -- a Kubernetes object routectl cannot read (skipped)
        - ImpossibleObjectError      -- one the API server never serves: its last view stands
      + LeadershipLostError          -- the Lease was not renewed in time: stop writing now
      + WriteFencedError             -- the lease is not valid long enough to start a write
        - CloudWriteFencedError      -- (also a ProviderError) a cloud write not started
        - KubeWriteFencedError       -- (also a KubeError) a Node or Event write not started
      + KubeError                    -- the API server said no (``status`` kept)
        - ResourceVersionGoneError   -- 410 Expired on list or watch; the informer relists
      + ProviderError                -- a cloud call failed; transient: retried with backoff
        - ProviderTimeoutError       -- no answer within the per-call timeout (transient)
        - ProviderThrottledError     -- the cloud asked us to wait (``retry_after``): 429, 503+hint
          - CloudPausedError         -- ... for longer than a call retries: the sync fails now
        - ProviderTerminalError      -- retrying cannot help; wait for the next change
          - RouteHeldError           -- a create's destination is held by another route
        - RouteAlreadyExistsError    -- create of a destination that is taken (``holder``):
                                        success only if the holder is the route asked for
        - RouteNotFoundError         -- delete of a route that is gone: counts as success
        - CreateSkippedError         -- a create not tried: the delete it waits for failed
        - MalformedAnswerError       -- the cloud answered something of the wrong shape
                                        (``field`` names it); transient

A sync that fails raises :class:`SyncFailedError`, an ``ExceptionGroup`` of the leaves
above (every cloud call and Node write that failed), so the worker decides by type with
``except*``.

Messages never contain credentials: plugins must not put tokens or signed URLs into them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from routectl.model import Route


class RoutectlError(Exception):
    """The root of every error routectl raises on purpose."""


class ConfigError(RoutectlError):
    """A flag, value or provider option is invalid; the process cannot start."""


class ProviderNotFoundError(ConfigError):
    """No provider plugin is installed under the requested name."""


class InvalidObjectError(RoutectlError):
    """A Kubernetes object lacks what routectl needs to read it (for example a name)."""


class ImpossibleObjectError(InvalidObjectError):
    """A Kubernetes object the API server never serves (``spec: null``, ``podCIDRs`` not a
    list): what it says is unknown, so what routectl last knew of it stands."""

    def __init__(self, message: str, *, name: str, uid: str = "") -> None:
        super().__init__(message)
        self.name = name
        self.uid = uid


class LeadershipLostError(RoutectlError):
    """The Lease could not be renewed within the renew deadline: stop writing now."""


class WriteFencedError(RoutectlError):
    """This replica's lease is not valid for longer than the write would take: not started.

    Transient: after the next renewal writes go out again; after a lost lease the process
    stops. Nothing was sent.
    """


class KubeError(RoutectlError):
    """The Kubernetes API server refused or failed a request."""

    def __init__(self, message: str, *, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class ResourceVersionGoneError(KubeError):
    """The resourceVersion asked for is too old (410 Expired): list again."""


class KubeWriteFencedError(WriteFencedError, KubeError):
    """A Node status or Event write was not started: the lease is about to run out."""


class ProviderError(RoutectlError):
    """A cloud call failed in a way that may pass: retried with backoff."""


class CloudWriteFencedError(WriteFencedError, ProviderError):
    """A cloud write was not started: the lease is about to run out."""


class ProviderTimeoutError(ProviderError):
    """A cloud call did not answer within the per-call timeout; it may still have succeeded."""


class ProviderThrottledError(ProviderError):
    """The cloud rejected a call and asked us to wait: a rate limit, or a retry hint.

    Raised for throttling (HTTP 429, ``RequestLimitExceeded``, ...) and for any other
    transient refusal that says when to come back (a 503 with ``Retry-After``): the hint is
    what routectl honours, whatever the status. ``retry_after`` is the number of seconds the
    cloud asked us to wait, when it said.
    """

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class CloudPausedError(ProviderThrottledError):
    """The cloud asked for a longer pause than a call retries within: the call fails now.

    ``retry_after`` is the pause routectl grants (the cloud's hint, capped); the sync fails
    visibly and the worker runs it again when the pause is over.
    """


class ProviderTerminalError(ProviderError):
    """A cloud call failed in a way retrying cannot fix (quota, permissions, bad input)."""


class RouteAlreadyExistsError(ProviderError):
    """Create found its destination taken; ``holder`` is the route that holds it.

    ``holder`` is that route as :meth:`~routectl.provider.RouteProvider.list_routes` would
    list it (``target_node`` empty when it leads to no Node of this cluster), or None when
    the plugin did not say. routectl counts the create done only when the holder is the
    route it asked for (same destination, same target Node, this cluster's); without a
    holder it looks at a listing to decide.
    """

    def __init__(self, message: str, *, holder: Route | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class RouteHeldError(ProviderTerminalError):
    """A create found its destination held by a route other than the one asked for.

    Raised by routectl's gate (never by plugins): the Node is not routed, and retrying the
    same create cannot help until the holder is gone (routectl deletes it if it is one of
    this cluster's routes; a foreign one is left alone and reported). ``holder`` is the
    route that holds the destination, when known.
    """

    def __init__(self, message: str, *, holder: Route | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class RouteNotFoundError(ProviderError):
    """Delete found the route already gone; the controller counts it as success."""


class CreateSkippedError(ProviderError):
    """A create was not attempted: the delete of the route it replaces failed first."""


class MalformedAnswerError(ProviderError):
    """The cloud answered a value of the wrong shape; ``field`` is its path in the answer.

    Transient: a garbled answer (a proxy's page, a cut body) may be right next time. Plugins
    raise it (through :class:`routectl.answers.Answer`) instead of letting a ``KeyError`` or
    ``ValueError`` out.
    """

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field


class SyncFailedError(ExceptionGroup[RoutectlError]):
    """Some cloud calls or Node writes of a sync failed: the group holds each error."""

    def derive(self, excs: Sequence[RoutectlError]) -> SyncFailedError:  # type: ignore[override]
        """Keep the type when ``except*`` splits the group."""
        return SyncFailedError(self.message, excs)
