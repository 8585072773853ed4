"""PKCE (RFC 7636), S256 only, required of every client unless an admin relaxed it.

Authlib's CodeChallenge accepts `plain`, defaults a missing method to `plain`, and requires
PKCE of public clients only; this subclass closes all three gaps."""

from __future__ import annotations

from typing import Any

from authlib.oauth2.rfc6749 import InvalidRequestError
from authlib.oauth2.rfc7636 import CodeChallenge

from app.capabilities import CODE_CHALLENGE_METHODS


class S256CodeChallenge(CodeChallenge):
    DEFAULT_CODE_CHALLENGE_METHOD = CODE_CHALLENGE_METHODS[0]
    SUPPORTED_CODE_CHALLENGE_METHOD = list(CODE_CHALLENGE_METHODS)

    def validate_code_challenge(self, grant: Any, redirect_uri: str | None) -> None:
        request = grant.request
        challenge = request.payload.data.get("code_challenge")
        method = request.payload.data.get("code_challenge_method")
        if grant.client_requires_pkce(request.client) or challenge or method:
            if not challenge:
                raise InvalidRequestError("PKCE is required: missing 'code_challenge'.")
            if not method:
                raise InvalidRequestError("PKCE is required: missing 'code_challenge_method' (use S256).")
            if method not in CODE_CHALLENGE_METHODS:
                raise InvalidRequestError("Unsupported 'code_challenge_method': only S256 is accepted.")
        super().validate_code_challenge(grant, redirect_uri)
