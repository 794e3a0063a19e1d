"""Where the API server is and how to prove who we are: a kubeconfig or the pod's account.

Read without kubernetes-asyncio's generated client (importing it costs some 860 modules,
seconds of CPU and about 40 MB of memory, for classes routectl never uses: it speaks raw
JSON). The shapes read here are the ones a cloud-controller-manager meets: the in-cluster
service account (its token re-read every minute, as client-go re-reads a rotated token),
and kubeconfig clusters with ``server``, ``certificate-authority[-data]``,
``insecure-skip-tls-verify`` and ``tls-server-name``, and users with ``token``,
``tokenFile``, ``client-certificate[-data]``/``client-key[-data]`` or
``username``/``password``. A user with ``exec`` or ``auth-provider`` is handed to
kubernetes-asyncio's loader, imported only then, whose credentials are asked before each
request (it refreshes them when they expire).

Promises: any file that cannot be read or understood raises :class:`ConfigError` with one
line naming where it came from; the token and client key are registered with the log
redaction (:data:`routectl.observe.redact.DEFAULT`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import os
import pathlib
import ssl
import tempfile
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import yaml

from routectl.errors import ConfigError
from routectl.observe.redact import DEFAULT

__all__ = ["Connection", "in_cluster", "load"]

SERVICE_ACCOUNT = pathlib.Path("/var/run/secrets/kubernetes.io/serviceaccount")
TOKEN_REREAD_SECONDS = 60.0
"""How long a token read from a file is used before the file is read again (client-go's)."""

Credentials = Callable[[], Awaitable[str | None]]
"""The ``Authorization`` header's value for the next request; None: no header."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Connection:
    """The API server's address, the TLS to reach it with and the credentials to send."""

    server: str
    ssl: ssl.SSLContext | None
    authorization: Credentials
    server_name: str = ""
    """The name the server's certificate is checked against, if not the URL's host."""


async def load(kubeconfig: str | None, *, flag: str = "--kubeconfig") -> Connection:
    """The connection ``kubeconfig`` describes, or the pod's own when it is None; errors
    name ``flag``, the flag that gave the file."""
    where = f"{flag} {kubeconfig}" if kubeconfig else "in-cluster configuration"
    try:
        return _from_kubeconfig(kubeconfig) if kubeconfig else in_cluster()
    except _NeedsLoop:
        pass
    except ConfigError as exc:
        raise ConfigError(f"{where}: cannot load Kubernetes configuration: {exc}") from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, yaml.YAMLError) as exc:
        raise ConfigError(
            f"{where}: cannot load Kubernetes configuration: {_one_line(exc)}"
        ) from None
    # Imported here: only users with exec or auth-provider pay for the generated client.
    from kubernetes_asyncio import client, config  # noqa: PLC0415

    cfg = client.Configuration()
    try:
        await config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        return from_configuration(cfg)
    except Exception as exc:  # noqa: BLE001 -- any malformed file: one line, exit 2
        raise ConfigError(
            f"{where}: cannot load Kubernetes configuration: {_one_line(exc)}"
        ) from None


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def in_cluster(
    *, environ: Mapping[str, str] = os.environ, account: pathlib.Path = SERVICE_ACCOUNT
) -> Connection:
    """The pod's service account: its token, its CA and ``KUBERNETES_SERVICE_HOST:PORT``."""
    host = environ.get("KUBERNETES_SERVICE_HOST", "")
    port = environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise ConfigError("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    token = account / "token"
    if not token.is_file():
        raise ConfigError(f"no service account token at {token}")
    context = ssl.create_default_context(cafile=str(account / "ca.crt"))
    return Connection(
        server=f"https://{host}:{port}", ssl=context, authorization=_token_file(token)
    )


def _from_kubeconfig(path: str) -> Connection:
    document = yaml.safe_load(pathlib.Path(path).read_text(encoding="utf-8"))
    if not isinstance(document, dict):
        raise ConfigError("not a kubeconfig (not a YAML mapping)")
    base = pathlib.Path(path).resolve().parent
    name = document.get("current-context") or ""
    context = _named(document, "contexts", name, "context") if name else {}
    if not name:
        contexts = document.get("contexts") or []
        if len(contexts) != 1:
            raise ConfigError("no current-context")
        context = _mapping(contexts[0].get("context"), "context")
    cluster = _named(document, "clusters", str(context.get("cluster", "")), "cluster")
    user_name = str(context.get("user", "") or "")
    user = _named(document, "users", user_name, "user") if user_name else {}
    if "exec" in user or "auth-provider" in user:
        raise _NeedsLoop(path)
    server = str(cluster.get("server") or "")
    if not server.startswith(("https://", "http://")):
        raise ConfigError(f"cluster server {server!r} is not an http(s) URL")
    context_ssl = _tls(cluster, user, base) if server.startswith("https://") else None
    return Connection(
        server=server.rstrip("/"),
        ssl=context_ssl,
        authorization=_user(user, base),
        server_name=str(cluster.get("tls-server-name") or ""),
    )


def _named(document: Mapping[str, Any], section: str, name: str, key: str) -> Mapping[str, Any]:
    for entry in document.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return _mapping(entry.get(key), key)
    raise ConfigError(f"no {key} named {name!r} in {section}")


def _mapping(value: object, what: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"the {what} is not a mapping")
    return value


def _tls(cluster: Mapping[str, Any], user: Mapping[str, Any], base: pathlib.Path) -> ssl.SSLContext:
    if cluster.get("insecure-skip-tls-verify"):
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif data := cluster.get("certificate-authority-data"):
        context = ssl.create_default_context(cadata=base64.b64decode(data).decode())
    elif path := cluster.get("certificate-authority"):
        context = ssl.create_default_context(cafile=str(base / path))
    else:
        context = ssl.create_default_context()
    with _pem(user, "client-certificate", base) as cert, _pem(user, "client-key", base) as key:
        if cert:
            context.load_cert_chain(cert, keyfile=key or None)
    return context


@contextlib.contextmanager
def _pem(user: Mapping[str, Any], field: str, base: pathlib.Path) -> Iterator[str]:
    """A path to the PEM ``field`` names: its file, or its data written for a moment."""
    if data := user.get(f"{field}-data"):
        content = base64.b64decode(data)
        if field == "client-key":
            DEFAULT.add(content.decode(errors="replace").strip())
        with tempfile.TemporaryDirectory() as folder:
            file = pathlib.Path(folder) / "pem"
            file.write_bytes(content)
            yield str(file)
        return
    yield str(base / user[field]) if user.get(field) else ""


def _user(user: Mapping[str, Any], base: pathlib.Path) -> Credentials:
    if token := user.get("token"):
        header = f"Bearer {token}"
        DEFAULT.add(str(token))
        return _constant(header)
    if file := user.get("tokenFile"):
        return _token_file(base / file)
    if (name := user.get("username")) is not None and (password := user.get("password")):
        DEFAULT.add(str(password))
        basic = base64.b64encode(f"{name}:{password}".encode()).decode()
        return _constant(f"Basic {basic}")
    return _constant(None)


def _constant(header: str | None) -> Credentials:
    async def authorization() -> str | None:
        return header

    return authorization


def _token_file(path: pathlib.Path) -> Credentials:
    """A token read from ``path`` now and again at most every minute after (it rotates)."""
    token = _read_token(path)
    read_at: float | None = None
    header = f"Bearer {token}"

    async def authorization() -> str | None:
        nonlocal read_at, header
        now = asyncio.get_running_loop().time()
        if read_at is None:
            read_at = now
        elif now - read_at >= TOKEN_REREAD_SECONDS:
            read_at = now
            with contextlib.suppress(OSError, ConfigError):  # keep the last good token
                header = f"Bearer {_read_token(path)}"
        return header

    return authorization


def _read_token(path: pathlib.Path) -> str:
    token = path.read_text(encoding="utf-8").strip()
    if not token:
        raise ConfigError(f"the token file {path} is empty")
    DEFAULT.add(token)
    return token


class _NeedsLoop(Exception):  # noqa: N818 -- a signal, not an error
    """The kubeconfig's user needs kubernetes-asyncio's loader."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def from_configuration(cfg: Any) -> Connection:
    """A connection from a filled kubernetes-asyncio ``Configuration``."""
    server = str(cfg.host).rstrip("/")
    context: ssl.SSLContext | None = None
    if server.startswith("https://"):
        context = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
        if cfg.cert_file:
            context.load_cert_chain(cfg.cert_file, keyfile=cfg.key_file)
        if not cfg.verify_ssl:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE

    async def authorization() -> str | None:
        value = await cfg.get_api_key_with_prefix("BearerToken", alias="authorization")
        if not value:
            return None
        DEFAULT.add(str(value).removeprefix("Bearer ").strip())
        return str(value) if str(value).startswith(("Bearer ", "Basic ")) else f"Bearer {value}"

    name = str(getattr(cfg, "tls_server_name", None) or "")
    return Connection(server=server, ssl=context, authorization=authorization, server_name=name)
