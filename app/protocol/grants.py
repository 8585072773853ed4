"""The two grants: authorization code (with PKCE and OIDC) and refresh token (with rotation).

Authlib drives the protocol; these subclasses supply storage, single use and reuse detection."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from authlib.oauth2.rfc6749 import InvalidGrantError, OAuth2Error, OAuth2Request, grants
from flask import current_app

from app.core import metrics
from app.core.capabilities import TOKEN_AUTH_METHODS
from app.models import AuthorizationCode
from app.models.base import new_secret, new_uuid, sha256_hex, utcnow
from app.protocol import refresh_grace
from app.protocol import tokens as issuing
from app.protocol.resources import authorized_resource, check_token_resource
from app.store import codes, store, tokens
from app.store.apps import App
from app.store.members import Member
from app.store.unit_of_work import commit

TokenResponse = tuple[int, dict[str, Any], list[tuple[str, str]]]  # status, body, headers (Authlib's)


class PairStoredAsSpent:
    """Both grants store the new pair in the step that spends what the client presented (the code,
    the refresh token: app/store/tokens.py, SpendAndStore), so the pair is drawn before it.
    Authlib's generator and save hook then answer with that pair and amend the stored row only
    where the answer differs from what spending copied: the scope cut to the member's membership,
    or no refresh token (no `offline_access`)."""

    request: OAuth2Request

    def draw_pair(self, with_refresh: bool) -> issuing.NewPair:
        self.request.new_pair = pair = issuing.NewPair.draw(with_refresh)
        return pair

    def generate_token(
        self,
        user: Member | None = None,
        scope: str | None = None,
        grant_type: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        pair: issuing.NewPair = self.request.new_pair
        return pair.answer(scope, user, include_refresh_token)

    def save_token(self, token: dict[str, Any]) -> None:
        pair: issuing.NewPair = self.request.new_pair
        spent: codes.RedeemedCode | tokens.RotatedRefresh = (
            self.request.authorization_code or self.request.refresh_token
        )
        if token["scope"] != self.stored_scope(spent) or ("refresh_token" in token) != pair.with_refresh:
            store().tokens.amend_successor(spent.successor_id, token["scope"], "refresh_token" in token)

    def stored_scope(self, spent: Any) -> str:
        """The scope spending gave the new pair: the code's, the old token's."""
        return str(spent.scope)


@dataclass(frozen=True, slots=True)
class DrawnCode:
    """A code drawn before the step that stores it, and its row (the hash, not the code)."""

    value: str
    columns: dict[str, Any]


def code_columns(request: OAuth2Request, user_id: str) -> dict[str, Any]:
    """What a code's token request must match: the app, the member, the redirect_uri, PKCE, and the
    scope, login time and methods the consent step set on `request` (`granted_scope`, `auth_time`,
    `amr`)."""
    now = utcnow()
    return {
        "client_id": request.client.id,
        "user_id": user_id,
        "grant_id": new_uuid(),
        "redirect_uri": request.payload.redirect_uri,
        "scope": request.granted_scope,
        "nonce": request.payload.data.get("nonce") or None,
        "code_challenge": request.payload.data.get("code_challenge"),
        "code_challenge_method": request.payload.data.get("code_challenge_method"),
        "auth_time": request.auth_time,
        "amr": getattr(request, "amr", None) or "pwd",
        "resource": authorized_resource(request),  # checked at the authorization endpoint already
        "issued_at": now,
        "expires_at": now + timedelta(seconds=int(current_app.config["AUTHORIZATION_CODE_LIFETIME"])),
    }


def draw_code(request: OAuth2Request, user_id: str) -> DrawnCode:
    """A code for `request`, drawn before the step that stores it: the consent answer stores it
    with the consent (app/services/consent.py, `answer_request`), and the grant then answers with
    it and stores nothing more, as the two grants do with the pair they draw (`PairStoredAsSpent`)."""
    value = new_secret(32)
    request.new_code = drawn = DrawnCode(value, {"code_hash": sha256_hex(value), **code_columns(request, user_id)})
    return drawn


class AuthorizationCodeGrant(PairStoredAsSpent, grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(TOKEN_AUTH_METHODS)

    @staticmethod
    def client_requires_pkce(client: App) -> bool:
        """PKCE is required of every client; only a confidential legacy app may be relaxed."""
        return client.require_pkce or client.is_public

    def generate_authorization_code(self) -> str:
        """The code the consent answer drew and stored (`draw_code`), else 256 random bits, like
        every other secret we issue. Authlib's generator draws each of its 48 characters with its
        own call to the system's random source; one call for all of them here."""
        drawn: DrawnCode | None = getattr(self.request, "new_code", None)
        return drawn.value if drawn is not None else new_secret(32)

    def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
        """Store the hash of the code with what the token request must match, unless the consent
        answer's step stored it already (`draw_code`). The granted scope and the login time were
        decided by the consent step (see authorize.py), which commits the code with everything the
        answer changed."""
        if getattr(request, "new_code", None) is None:
            store().codes.issue(code, code_columns(request, request.user.id))

    redeemed: codes.RedeemedCode | None = None  # the code this request spent, once it has

    def query_authorization_code(self, code: str, client: App) -> codes.RedeemedCode | None:
        """The code, spent as it is found, the pair it buys stored by the same step (a later refusal
        in this request, PKCE or redirect_uri, burns the code: validate_token_request). When
        nothing comes back, a used code presented again is reuse."""
        pair = self.draw_pair(with_refresh=client.check_grant_type("refresh_token"))
        redeemed = store().codes.redeem(code, client.id, pair.columns())
        if redeemed is not None:
            self.redeemed = redeemed
            return redeemed
        spent = store().codes.spent(code, client.id)
        if spent is not None:
            # RFC 6749 4.1.2: a code used twice revokes the tokens issued from it (and so does
            # losing a race with a concurrent redemption of the same code). Committed at once: the
            # revocation stands although this request is refused.
            metrics.reuse_detected("code", spent.grant_id, spent.user_id)
            store().tokens.revoke_grant(spent.grant_id)
            commit()
        return None

    def validate_token_request(self) -> None:
        """Authlib's checks. A code that the authenticated client presented and then failed a
        check on (its redirect_uri, or PKCE: a wrong, missing or malformed verifier) is burnt: a
        failed redemption counts as the code's one use, so a stolen code gets one try. So is a
        `resource` other than the one the code was asked for (RFC 8707: `invalid_target`). The pair
        its redemption stored is deleted (never handed out) and the code stays spent, committed at
        once although the request is refused. A request that fails client authentication never
        reaches the code."""
        try:
            super().validate_token_request()
            check_token_resource(self.request, self.request.authorization_code.resource)
        except OAuth2Error:
            if self.redeemed is not None:
                store().codes.burn(self.redeemed)
                commit()
            raise

    def create_token_response(self) -> TokenResponse:
        code: codes.RedeemedCode = self.request.authorization_code
        self.request.auth_time = code.auth_time
        self.request.amr = code.amr
        response = super().create_token_response()
        issued_to = self.request.client.client_id, self.request.user.id
        commit()
        metrics.tokens_issued("authorization_code", *issued_to)
        return response

    def delete_authorization_code(self, authorization_code: AuthorizationCode) -> None:
        """Kept (marked used) rather than deleted, so a replay can be recognized; purged later."""

    def authenticate_user(self, authorization_code: codes.RedeemedCode) -> Member:
        return authorization_code.user


class RefreshTokenGrant(PairStoredAsSpent, grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(TOKEN_AUTH_METHODS)
    INCLUDE_NEW_REFRESH_TOKEN = True  # rotate on every use

    def authenticate_refresh_token(self, refresh_token: str) -> tokens.RotatedRefresh | tokens.StoredToken | None:
        """The refresh token, marked rotated as it is found, its successor stored by the same step
        (on PostgreSQL one statement; a refusal later in this request rolls both back). When
        nothing comes back: a retry within the grace window gets the first answer again; a
        rotated-out token presented again means someone holds a copy, and the family is revoked."""
        client = self.request.client
        pair = self.draw_pair(with_refresh=True)
        narrowed = self.request.payload.scope or None  # checked against the grant's by Authlib next
        rotated = store().tokens.rotate_refresh(refresh_token, client.id, pair.columns(), narrowed)
        if rotated is not None:
            return rotated
        row = store().tokens.find_refresh(refresh_token)
        if row is None or row.client_id != client.id or row.refresh_used_at is None:
            return None
        if refresh_grace.replay(row, refresh_token) is not None:
            return row  # answered again in create_token_response
        metrics.reuse_detected("refresh_token", row.grant_id, row.user_id)
        store().tokens.revoke_grant(row.grant_id)
        commit()  # the revocation stands although this request is refused
        return None

    def validate_token_request(self) -> None:
        """Authlib's checks, then the resource (RFC 8707 2.2): a refresh may name the resource its
        grant is bound to, never another (the rotation this request made is rolled back with the
        refusal)."""
        super().validate_token_request()
        check_token_resource(self.request, self.request.refresh_token.resource)

    def create_token_response(self) -> TokenResponse:
        old = self.request.refresh_token
        presented = self.request.form.get("refresh_token") or ""
        if not isinstance(old, tokens.RotatedRefresh):
            # A retry within the grace window: the same answer again (checked once more here, so a
            # window that closed in between means no answer).
            answer = refresh_grace.replay(old, presented)
            if answer is None:
                raise InvalidGrantError("The refresh token has already been used.")
            return 200, answer, self.TOKEN_RESPONSE_HEADER
        self.request.auth_time = old.auth_time
        self.request.amr = old.amr
        status, body, headers = super().create_token_response()
        refresh_grace.seal(old, old.successor_id, presented, body)
        issued_to = self.request.client.client_id, self.request.user.id
        commit()
        metrics.tokens_issued("refresh_token", *issued_to)
        return status, body, headers

    def stored_scope(self, spent: Any) -> str:
        """A rotation stores the narrower scope the request asked for, if it asked (Authlib has
        checked it against the grant's by now)."""
        return self.request.payload.scope or str(spent.scope)

    def authenticate_user(self, refresh_token: tokens.RotatedRefresh) -> Member:
        return refresh_token.user

    def revoke_old_credential(self, refresh_token: tokens.RotatedRefresh) -> None:
        """Already marked rotated as it was found; its access token stays valid until it expires (the
        new pair replaces it; reuse of the old refresh token revokes everything)."""
