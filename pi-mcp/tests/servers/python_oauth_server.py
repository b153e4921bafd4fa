"""An OAuth-protected MCP server on the official Python SDK (PyPI `mcp` 2.3.0): `MCPServer` with
the SDK's own authorization server routes (`auth_server_provider=`: RFC 8414 metadata, dynamic
registration, /authorize, /token with PKCE and refresh), its RFC 9728 protected resource
metadata and its bearer-token middleware on /mcp, as in the SDK's `examples/stories/oauth`.

The provider below is the story's in-memory one, plus refresh tokens and a short access-token
lifetime so that pi-mcp's client has to refresh. It consents at once (no login page): the
client's "browser" follows the authorization page's redirect. Usage:
python python_oauth_server.py PORT [ACCESS_TOKEN_SECONDS]
"""

import secrets
import sys
import time

from pydantic import AnyHttpUrl

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

PORT = int(sys.argv[1])
ACCESS_SECONDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3600
BASE = f"http://127.0.0.1:{PORT}"

# What the authorization server did, for the tests to read through the `grants` tool.
GRANTS: dict[str, int] = {"authorization_code": 0, "refresh_token": 0, "registrations": 0}


class Provider(OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]):
    def __init__(self) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}

    def issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = f"access_{secrets.token_hex(16)}"
        refresh = f"refresh_{secrets.token_hex(16)}"
        self.access[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + ACCESS_SECONDS,
            resource=resource,
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=ACCESS_SECONDS,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        GRANTS["registrations"] += 1
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        assert client.client_id is not None
        code = AuthorizationCode(
            code=f"code_{secrets.token_hex(16)}",
            client_id=client.client_id,
            scopes=params.scopes or ["mcp"],
            expires_at=time.time() + 300,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        self.codes[code.code] = code
        return construct_redirect_uri(str(params.redirect_uri), code=code.code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        GRANTS["authorization_code"] += 1
        return self.issue(
            authorization_code.client_id, authorization_code.scopes, authorization_code.resource
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is not None and found.expires_at is not None and found.expires_at < time.time():
            return None
        return found

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        found = self.refresh.get(refresh_token)
        return found if found is not None and found.client_id == client.client_id else None

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh.pop(refresh_token.token, None) is None:
            raise TokenError(error="invalid_grant", error_description="refresh token already used")
        GRANTS["refresh_token"] += 1
        return self.issue(refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


provider = Provider()
mcp = MCPServer(
    "python-oauth",
    auth=AuthSettings(
        issuer_url=AnyHttpUrl(BASE),
        resource_server_url=AnyHttpUrl(f"{BASE}/mcp"),
        required_scopes=["mcp"],
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]
        ),
        validate_token_resource=True,
    ),
    auth_server_provider=provider,
)


@mcp.tool()
def whoami() -> str:
    """The client id and scopes of the token the request came with."""
    token = get_access_token()
    assert token is not None
    return f"{token.client_id} {' '.join(token.scopes)}"


@mcp.tool()
def grants() -> str:
    """How many codes and refresh tokens the authorization server redeemed, and registrations."""
    return " ".join(f"{name}={count}" for name, count in GRANTS.items())


@mcp.tool()
def revoke_access_tokens() -> str:
    """Forgets every access token (refresh tokens stay), as a server that revoked them would."""
    provider.access.clear()
    return "revoked"


if __name__ == "__main__":
    mcp.run(transport="streamable-http", host="127.0.0.1", port=PORT)
