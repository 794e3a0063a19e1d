"""``routectl run`` and ``routectl plan``: connect to the cloud and the API server, then serve
or preview. A bad provider or option fails before any I/O; the exit code says how it ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import os
import signal
import socket
import ssl
import sys
import uuid
from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TextIO

from routectl.cidr import canonical
from routectl.cli.dropin import cloud_config_warnings, say_ignored
from routectl.config import Settings
from routectl.errors import (
    ImpossibleObjectError,
    InvalidObjectError,
    KubeError,
    ProviderError,
)
from routectl.kube import KubeClient, Pacing, parse_node
from routectl.model import NodeView, Route
from routectl.observe.logs import configure_logging
from routectl.observe.metrics import Metrics
from routectl.observe.probes import ProbeServer, ReadyCheck
from routectl.observe.serving import AuthSettings, DelegatedAuth, tls_context
from routectl.plan.guard import guard
from routectl.plan.reconcile import plan
from routectl.process.election import election_pacing
from routectl.process.service import EXIT_OK
from routectl.process.wiring import Sources, build_service, gate, load_provider

if TYPE_CHECKING:  # ``routectl plan`` only: ``routectl run`` starts without them
    from routectl.ipam.core import Claim, Decision, Finding

logger = logging.getLogger("routectl")
EXIT_FAILED = 1
EXIT_CHANGES = 2
"""``routectl plan --detailed-exitcode``: changes are pending (terraform's 2)."""
EXIT_BROKEN_PIPE = 141
"""128 + SIGPIPE: what a shell reports for a tool a closed pipe ended."""


def default_identity() -> str:
    """``<pod or host name>_<uuid>``, like client-go's recommended identity."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4()}"


def pacing(settings: Settings) -> Pacing:
    """The API server's request budget: ``--kube-api-qps`` and ``--kube-api-burst``."""
    return Pacing(qps=settings.kube_api_qps, burst=settings.kube_api_burst)


async def election_client(
    settings: Settings, stack: contextlib.AsyncExitStack, *, metrics: Metrics
) -> KubeClient | None:
    """The leader election's own client (None without election), as client-go gives its
    leader-election client its own rate limiter: however low ``--kube-api-qps`` is, and
    however long the main client's queue, renewals are never starved."""
    if not settings.leader_elect:
        return None
    kube = await KubeClient.connect(
        kubeconfig=settings.kubeconfig,
        pacing=election_pacing(settings.leader_elect_retry_period),
        observer=metrics.rest_client,
    )
    stack.push_async_callback(kube.aclose)
    return kube


async def run(settings: Settings) -> int:
    """``routectl run``: serve until stopped; the exit code says how it ended."""
    configure_logging(fmt=settings.log_format, verbosity=settings.verbosity)
    say_ignored(settings)
    metrics = Metrics.create(call_timeout=settings.cloud_call_timeout)
    sources = Sources.system()
    async with contextlib.AsyncExitStack() as stack:
        plugin = load_provider(settings, metrics=metrics, sources=sources)  # fails before I/O
        stack.push_async_callback(plugin.provider.aclose)
        kube = await KubeClient.connect(
            kubeconfig=settings.kubeconfig, pacing=pacing(settings), observer=metrics.rest_client
        )
        stack.push_async_callback(kube.aclose)
        service = build_service(
            settings,
            kube=kube,
            election_kube=await election_client(settings, stack, metrics=metrics),
            provider=plugin,
            metrics=metrics,
            identity=default_identity(),
            sources=sources,
        )
        # The certificate and the review clients first: a missing certificate or a bad
        # --authentication-kubeconfig is one line, before anything says "Serving".
        tls = secure_tls(settings)
        reviews = await review_clients(settings, stack) if tls else None
        await serve_plain(settings, stack, metrics=metrics, ready=service.ready)
        if tls and reviews:
            await serve_secure(
                settings, stack, metrics=metrics, ready=service.ready, tls=tls, reviews=reviews
            )
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, service.stopping.set)
            stack.callback(loop.remove_signal_handler, signum)
        return await service.run()
    raise AssertionError("unreachable")  # pragma: no cover -- the stack does not swallow


async def serve_plain(
    settings: Settings, stack: contextlib.AsyncExitStack, *, metrics: Metrics, ready: ReadyCheck
) -> None:
    """Plain HTTP on ``--metrics-bind-address`` (off when empty, and by default with
    ``--secure-port``: :attr:`~routectl.config.Settings.plain_address`)."""
    address = settings.plain_address
    if not address:
        return
    probes = ProbeServer(registry=metrics.registry, ready=ready)
    stack.push_async_callback(probes.aclose)
    await probes.start(address)
    host = address.rpartition(":")[0]
    logger.info("Serving /metrics, /healthz and /readyz on %s:%d", host, probes.port)


def secure_tls(settings: Settings) -> ssl.SSLContext | None:
    """The TLS context of the secure port (None when it is off); a bad certificate raises
    ConfigError naming the flags."""
    if not settings.secure_port:
        return None
    return tls_context(
        cert_file=settings.tls_cert_file,
        key_file=settings.tls_private_key_file,
        cert_dir=settings.cert_dir,
        min_version=settings.tls_min_version,
        bind_address=settings.bind_address,
        cipher_suites=settings.tls_cipher_suites,
        curves=settings.tls_curve_preferences,
    )


async def serve_secure(
    settings: Settings,
    stack: contextlib.AsyncExitStack,
    *,
    metrics: Metrics,
    ready: ReadyCheck,
    tls: ssl.SSLContext,
    reviews: Reviews,
) -> None:
    """HTTPS with delegated authn/authz on ``--bind-address:--secure-port``, through
    ``reviews``' clients."""
    auth = DelegatedAuth(
        reviews,
        AuthSettings(
            token_ttl=settings.authentication_token_webhook_cache_ttl,
            allowed_ttl=settings.authorization_webhook_cache_authorized_ttl,
            denied_ttl=settings.authorization_webhook_cache_unauthorized_ttl,
            always_allow=settings.authorization_always_allow_paths,
        ),
    )
    server = ProbeServer(
        registry=metrics.registry,
        ready=ready,
        middlewares=[auth.middleware()],
        tls=tls,
        flag="--bind-address/--secure-port",
    )
    stack.push_async_callback(server.aclose)
    host = settings.bind_address
    shown = f"[{host}]" if ":" in host else host
    await server.start(f"{shown}:{settings.secure_port}")
    logger.info(
        "Serving /metrics, /healthz, /readyz and /livez securely on https://%s:%d",
        shown,
        server.port,
    )


async def review_clients(settings: Settings, stack: contextlib.AsyncExitStack) -> Reviews:
    """The clients of TokenReviews and SubjectAccessReviews (their own, as the CCM's); a bad
    file is a ConfigError naming the flag that gave it."""
    authn_config = settings.authentication_kubeconfig or settings.kubeconfig
    authz_config = settings.authorization_kubeconfig or settings.kubeconfig
    authn = await KubeClient.connect(
        kubeconfig=authn_config,
        flag=_kubeconfig_flag(settings.authentication_kubeconfig, "authentication"),
    )
    stack.push_async_callback(authn.aclose)
    if authz_config == authn_config:
        return Reviews(authn, authn)
    authz = await KubeClient.connect(
        kubeconfig=authz_config,
        flag=_kubeconfig_flag(settings.authorization_kubeconfig, "authorization"),
    )
    stack.push_async_callback(authz.aclose)
    return Reviews(authn, authz)


def _kubeconfig_flag(given: str | None, kind: str) -> str:
    """The flag a review client's kubeconfig came from: its own, or --kubeconfig."""
    return f"--{kind}-kubeconfig" if given else "--kubeconfig"


class Reviews:
    """TokenReviews through one client, SubjectAccessReviews through another."""

    def __init__(self, authn: KubeClient, authz: KubeClient) -> None:
        self._authn, self._authz = authn, authz

    async def review_token(self, token: str) -> dict[str, Any]:
        """Authenticate ``token``."""
        return await self._authn.review_token(token)

    async def review_access(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Authorize ``spec``."""
        return await self._authz.review_access(spec)


async def plan_once(
    settings: Settings,
    *,
    output: str,
    out: TextIO | None = None,
    err: TextIO | None = None,
    detailed_exitcode: bool = False,
) -> int:
    """``routectl plan``: read Nodes and routes, print the plan, change nothing.

    Besides the creates and deletes it shows the Node conditions a sync would write, the
    mass-delete guard's verdict and how many
    routes routectl owns in each table it reads, with a warning for a non-empty table of
    which it owns none. A side that cannot be read ends it with one line on ``err`` that
    names the side (the Kubernetes API server or the cloud) and exit code 1; a reader that
    closes the pipe early (``| head``) ends it quietly with 141, as a tool killed by SIGPIPE;
    output that cannot be written (``> /dev/full``) is one line and exit code 1. Log lines
    are not printed: the one line says what failed. With ``detailed_exitcode`` (as
    ``terraform plan -detailed-exitcode``) a plan with changes pending (routes, conditions,
    allocations) exits 2, one without
    0, an error 1.
    """
    # The preview's modules (and node IPAM's) are imported here: `routectl run` needs none.
    from routectl.cli.preview import (  # noqa: PLC0415
        allocations_as_json,
        allocations_as_table,
        condition_changes,
        ownership,
        ownership_lines,
        plan_as_json,
        plan_as_table,
        verdict_lines,
    )

    out, err = out or sys.stdout, err or sys.stderr
    for line in cloud_config_warnings(settings):  # run logs them at start-up: so does plan
        err.write(f"routectl plan: warning: {line}\n")
    logging.disable(logging.CRITICAL)  # the one line below says what failed
    try:
        nodes, routes, claims, tables, unknown = await _read_nodes_and_routes(settings)
    except KubeError as exc:
        return _failed(err, f"the Kubernetes API server: {exc}")
    except ProviderError as exc:
        return _failed(err, f"the cloud (provider {settings.provider}): {exc}")
    finally:
        logging.disable(logging.NOTSET)
    ipam: tuple[Decision, list[Finding]] | None = None
    if settings.routectl_allocate_node_cidrs:
        ipam, nodes = _allocations(settings, nodes, routes, claims)
    result = plan(nodes=nodes, routes=routes, cluster_cidrs=settings.route_cidrs, unknown=unknown)
    verdict = guard(
        result,
        owned=result.owned_routes,
        nodes=len(nodes),
        threshold=settings.mass_delete_threshold,
        allow=settings.allow_mass_delete,
    )
    owners = ownership(routes, settings.route_cidrs, tables)
    conditions = condition_changes(nodes, result, verdict.plan)
    if output == "json":
        shown = dict(plan_as_json(result, verdict.plan))
        shown["conditions"] = [
            {"node": c.node, "status": c.then.status, "reason": c.then.reason} for c in conditions
        ]
        shown["guard"] = {"withholds_deletes": verdict.tripped, "message": verdict.message}
        shown["tables"] = [
            {"table": t.table, "routes": t.routes, "owned": t.owned, "warning": t.warning}
            for t in owners
        ]
        if ipam is not None:
            shown["node_ipam"] = allocations_as_json(*ipam)
        text = json.dumps(shown, indent=2) + "\n"
    else:
        text = plan_as_table(result, verdict.plan) + (allocations_as_table(*ipam) if ipam else "")
        text += "".join(f"{c.line}\n" for c in conditions)
        text += "".join(f"{line}\n" for line in verdict_lines(verdict, result))
        text += "".join(f"{line}\n" for line in ownership_lines(owners))
    try:
        for line in text.splitlines(keepends=True):  # line by line: a pipe closed early
            out.write(line)  # fails the next write, however much the kernel took at once
        out.flush()
    except BrokenPipeError:
        _quiet_stdout(out)
        return EXIT_BROKEN_PIPE
    except OSError as exc:  # a full disk, a closed descriptor: one line, not a traceback
        _quiet_stdout(out)
        err.write(f"routectl plan: error: cannot write the plan: {exc.strerror or exc}\n")
        return EXIT_FAILED
    pending = not result.empty or bool(conditions) or bool(ipam and ipam[0].allocations)
    return EXIT_CHANGES if detailed_exitcode and pending else EXIT_OK


async def _read_nodes_and_routes(
    settings: Settings,
) -> tuple[
    list[NodeView],
    list[Route],
    list[Claim],
    Mapping[str, Collection[str]] | None,
    dict[str, str],
]:
    metrics, sources = Metrics.create(), Sources.system()
    plugin = load_provider(settings, metrics=metrics, sources=sources)
    provider = gate(plugin, settings, metrics=metrics, sources=sources)
    try:
        kube = await KubeClient.connect(kubeconfig=settings.kubeconfig, pacing=pacing(settings))
    except BaseException:
        await provider.aclose()
        raise
    try:
        listing = await kube.list_nodes()
        nodes, unknown = _readable(listing.items)
        routes = list(await provider.list_routes())
        describe = getattr(plugin.provider, "route_tables", None)
        tables = await describe() if callable(describe) else None
        claims: list[Claim] = []
        if settings.routectl_allocate_node_cidrs and settings.pod_cidr_claims == "lease":
            from routectl.ipam.core import parse_claim  # noqa: PLC0415 -- node IPAM only
            from routectl.ipam.core.objects import CLAIM_SELECTOR  # noqa: PLC0415

            namespace = settings.leader_elect_resource_namespace
            raw = await kube.list_leases(namespace, label_selector=CLAIM_SELECTOR)
            claims = [c for c in map(parse_claim, raw) if c is not None]
    finally:
        await provider.aclose()
        await kube.aclose()
    return nodes, routes, claims, tables, unknown


def _readable(items: Iterable[Any]) -> tuple[list[NodeView], dict[str, str]]:
    """The Nodes that can be read, and those the API server never serves (unknown: their
    routes are planned as the service plans them, left alone); others are left out."""
    nodes: list[NodeView] = []
    unknown: dict[str, str] = {}
    for item in items:
        try:
            nodes.append(parse_node(item))
        except ImpossibleObjectError as exc:
            unknown[exc.name] = str(exc)
        except InvalidObjectError:
            continue
    return nodes, unknown


def _failed(err: TextIO, what: str) -> int:
    err.write(f"routectl plan: error: cannot read {' '.join(what.split())}\n")
    return EXIT_FAILED


def _quiet_stdout(out: TextIO) -> None:
    """Point stdout at /dev/null, so the interpreter's last flush raises nothing."""
    if out is sys.stdout:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _allocations(
    settings: Settings, nodes: list[NodeView], routes: Collection[Route], claims: list[Claim]
) -> tuple[tuple[Decision, list[Finding]], list[NodeView]]:
    """What node IPAM would allocate now, and the Nodes as they would then be."""
    from routectl.ipam.core import rebuild  # noqa: PLC0415 -- node IPAM only
    from routectl.ipam.edge.step import pools_of  # noqa: PLC0415

    rebuilt = rebuild(
        pools=pools_of(settings),
        nodes=nodes,
        claims=claims,
        routes=frozenset(canonical(r.destination_cidr) for r in routes),
        now=0.0,
        reuse_delay=settings.pod_cidr_reuse_delay,
    )
    decision = rebuilt.allocator.plan()
    findings = sorted(f for fs in rebuilt.allocator.findings.values() for f in fs)
    given = {a.node: tuple(str(c) for c in a.cidrs) for a in decision.allocations}
    after = [
        dataclasses.replace(n, pod_cidrs=given[n.name]) if n.name in given else n for n in nodes
    ]
    return (decision, findings), after
