"""The fake's metadata server (``GCE_METADATA_HOST`` points here) and token-url endpoint.

A VM's service account, its token and the project, as google.auth's application default
credentials find them on GCE; ``POST /alt-token`` answers as the CCM's AltTokenSource
expects (``{"accessToken", "expireTime"}``), as the VM's account.
"""

from __future__ import annotations

from aiohttp import web


class MetadataServer:
    """The metadata server's and the token-url endpoint's handlers."""

    project: str
    metadata_requests: list[str]
    alt_token_calls: list[tuple[str, str]]

    async def _alt_token(self, request: web.Request) -> web.Response:
        """The CCM's token-url: POSTed token-body, as the VM's account; answers a token."""
        self.alt_token_calls.append(
            (request.headers.get("Authorization", ""), (await request.read()).decode())
        )
        number = len(self.alt_token_calls)
        return web.json_response(
            {"accessToken": f"alt-token-{number}", "expireTime": "2099-01-01T00:00:00Z"}
        )

    async def _metadata_ping(self, request: web.Request) -> web.Response:
        return web.Response(text="ok", headers={"Metadata-Flavor": "Google"})

    async def _metadata(self, request: web.Request) -> web.Response:
        """The instance's service account and token, and the project, as a VM sees them."""
        if request.headers.get("Metadata-Flavor") != "Google":
            return web.Response(status=403, text="Missing Metadata-Flavor:Google header.")
        path = request.match_info["path"]
        flavor = {"Metadata-Flavor": "Google"}
        account = "instance/service-accounts/default/"
        if path == "project/project-id":
            return web.Response(text=self.project, headers=flavor)
        if path == account:
            scopes = ["https://www.googleapis.com/auth/compute"]
            info = {"aliases": ["default"], "email": "node@fake.iam", "scopes": scopes}
            return web.json_response(info, headers=flavor)
        if path == f"{account}token":
            number = sum(1 for r in self.metadata_requests if "/token" in r)
            token = {"access_token": f"token-{number}", "expires_in": 3599, "token_type": "Bearer"}
            return web.json_response(token, headers=flavor)
        if path == "universe/universe-domain":
            return web.Response(text="googleapis.com", headers=flavor)
        return web.Response(status=404, text="not found", headers=flavor)
