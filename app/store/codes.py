"""Authorization codes: issued by the consent step, spent by the token request as it stores the pair
the code buys."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select

from app.core.assurance import acr_for
from app.models import AuthorizationCode
from app.models.base import sha256_hex
from app.store.members import Member, member_from
from app.store.statements import first
from app.store.tokens import SpendAndStore, Spent, discard_unissued_pair

_codes = AuthorizationCode.__table__
_INSERT = _codes.insert()

# The lookup and the single-use mark are one UPDATE ... RETURNING, so exactly one concurrent caller
# gets the row (on PostgreSQL the others wait for its commit, then find it spent), and the pair it
# buys is stored by the same step (SpendAndStore, or PostgreSQL's FoldedSpendAndStore: what it
# spends and hands back is REDEMPTION). A failed check later in the request (PKCE, redirect_uri)
# keeps the mark and deletes the pair (`burn`).
REDEMPTION = (
    _codes.update()
    .where(
        _codes.c.code_hash == bindparam("hash"),
        _codes.c.client_id == bindparam("client"),
        _codes.c.used_at.is_(None),
        _codes.c.expires_at > bindparam("now"),
    )
    .values(used_at=bindparam("now")),
    (
        _codes.c.id,
        _codes.c.client_id,
        _codes.c.grant_id,
        _codes.c.user_id,
        _codes.c.redirect_uri,
        _codes.c.scope,
        _codes.c.nonce,
        _codes.c.code_challenge,
        _codes.c.code_challenge_method,
        _codes.c.auth_time,
        _codes.c.amr,
        _codes.c.resource,
    ),
)
_SPENT = select(_codes.c.grant_id, _codes.c.user_id).where(
    _codes.c.code_hash == bindparam("hash"), _codes.c.client_id == bindparam("client"), _codes.c.used_at.is_not(None)
)


@dataclass(frozen=True, slots=True)
class RedeemedCode:
    """An authorization code spent by the statement that found it, with its member: what the token
    response needs, and the rules Authlib asks of a code (AuthorizationCodeMixin)."""

    id: int
    grant_id: str
    user_id: str
    redirect_uri: str | None
    scope: str
    nonce: str | None
    code_challenge: str | None
    code_challenge_method: str | None
    auth_time: datetime
    amr: str  # how the member signed in (RFC 8176 values, space-separated)
    resource: str | None  # the resource (RFC 8707) it was asked for; its tokens are bound to it
    user: Member
    successor_id: int  # the row of the pair it bought, written by the same step

    # -- authlib.oidc.core.AuthorizationCodeMixin ------------------------------------------------

    def get_redirect_uri(self) -> str | None:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope

    def get_nonce(self) -> str | None:
        return self.nonce

    def get_auth_time(self) -> int:
        return int(self.auth_time.timestamp())

    def get_acr(self) -> str:
        return acr_for(self.get_amr())

    def get_amr(self) -> list[str]:
        return (self.amr or "pwd").split()


@dataclass(frozen=True, slots=True)
class SpentCode:
    """A code that was redeemed already: presenting it again is reuse (RFC 6749 4.1.2)."""

    grant_id: str
    user_id: str


class SqlCodes:
    """Authorization codes, in SQL: redeeming is the UPDATE, then the INSERT of the pair it buys.
    PostgreSQL's are app/store/postgresql.py's PostgresCodes."""

    def __init__(self) -> None:
        self._redeem: Callable[..., Spent | None] = SpendAndStore(*REDEMPTION)

    def issue(self, code: str, values: dict[str, Any]) -> None:
        """Store the hash of `code` with what the token request must match (`values`: the columns)."""
        self.store({"code_hash": sha256_hex(code), **values})

    def store(self, columns: dict[str, Any]) -> None:
        """Store a code's row, its hash included (a code drawn before the step that stores it)."""
        first(_INSERT, columns)

    def redeem(self, value: str, client_pk: int, successor: dict[str, Any]) -> RedeemedCode | None:
        """Find and spend the app's live, unused code and store the pair it buys (`successor`: the
        drawn hashes and times, NewPair.columns; the scope is the code's); None, and nothing written,
        when there is no such code (unknown, another app's, expired or already used: `spent_code`
        tells reuse apart). The caller commits."""
        if not value or len(value) > 512:
            return None
        spent = self._redeem({"hash": sha256_hex(value), "client": client_pk, "now": successor["issued_at"]}, successor)
        if spent is None:
            return None
        row = spent.row
        return RedeemedCode(
            row.id,
            row.grant_id,
            row.user_id,
            row.redirect_uri,
            row.scope,
            row.nonce,
            row.code_challenge,
            row.code_challenge_method,
            row.auth_time,
            row.amr,
            row.resource,
            member_from(row),
            spent.successor_id,
        )

    def burn(self, code: RedeemedCode) -> None:
        """A redemption refused after the code was spent (PKCE, redirect_uri): the code stays spent,
        and the pair its redemption stored, never handed out, is deleted. The caller commits."""
        discard_unissued_pair(code.successor_id)

    def spent(self, value: str, client_pk: int) -> SpentCode | None:
        """The app's code `value` if it was redeemed already."""
        if not value or len(value) > 512:
            return None
        row = first(_SPENT, {"hash": sha256_hex(value), "client": client_pk})
        return None if row is None else SpentCode(row.grant_id, row.user_id)
