"""The signing-key store: generate, rotate, retire, load from KEYS_DIR, publish the key set.

All key access goes through this module. Private keys are read from disk once per key and kept
in memory; the store re-reads the (tiny) `signing_keys` table at most every
KEY_REFRESH_INTERVAL seconds so a rotation made by another process or machine is picked up
without a restart. The published key set is serialized once per change, not per request.

Changes (generate, rotate, retire, revoke) join the caller's transaction and only flush: the
console page or `flask keys` command commits. The cached key set is dropped when that commit
succeeds (or the transaction rolls back), never before, and a key set read while a change is
still uncommitted is not cached: a key whose transaction rolls back is never published.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from flask import Flask, current_app
from joserfc.jwk import RSAKey
from sqlalchemy import event, select
from sqlalchemy.orm import Session, SessionTransaction
from werkzeug.local import LocalProxy

from app.core.capabilities import SIGNING_ALG
from app.core.extensions import db
from app.models import User
from app.models.base import utcnow
from app.models.signing_key import KeyRules, SigningKey
from app.services.audit import record
from app.store.statements import run

log = logging.getLogger(__name__)

RSA_KEY_BITS = 2048
UNCOMMITTED = "keystore.uncommitted"  # Session.info: the stores changed in the open transaction


class KeyStoreError(RuntimeError):
    """No usable signing key (none generated, or its private file is missing)."""


@dataclass(frozen=True)
class KeyInfo(KeyRules):
    """A read-only copy of one SigningKey row, with the same rules (`KeyRules`)."""

    kid: str
    alg: str
    public_jwk: dict[str, Any]
    created_at: datetime
    activates_at: datetime
    retired_at: datetime | None
    expires_at: datetime | None


_keys = SigningKey.__table__
_ALL_KEYS = select(*(_keys.c[name] for name in KeyInfo.__dataclass_fields__)).order_by(_keys.c.activates_at)


@dataclass(frozen=True)
class KeySnapshot:
    """What the store knows at one moment; replaced whole, never mutated (thread-safe reads)."""

    signing_kid: str | None
    jwks_body: bytes
    jwks_etag: str
    rows: tuple[KeyInfo, ...]
    valid_until: float  # monotonic deadline: a key changes state then, recompute


class KeyStore:
    """One per app (in `app.core.extensions`); reach it through the `keystore` proxy below."""

    def __init__(self, app: Flask) -> None:
        self._private: dict[str, RSAKey] = {}
        self._snapshot: KeySnapshot | None = None
        self._checked_at = 0.0
        self._lock = threading.Lock()
        self.keys_dir = Path(app.config["KEYS_DIR"])
        self.refresh_interval = int(app.config["KEY_REFRESH_INTERVAL"])
        self.publish_delay = int(app.config["KEY_PUBLISH_DELAY"])
        self.token_lifetime = int(app.config["ID_TOKEN_LIFETIME"])

    # -- reading ------------------------------------------------------------------------

    def snapshot(self) -> KeySnapshot:
        snap = self.fresh_snapshot()
        if snap is None:
            with self._lock:
                snap = self.fresh_snapshot() or self._load()
        return snap

    def fresh_snapshot(self) -> KeySnapshot | None:
        """The cached snapshot while it is still current, else None (reading needs no database,
        so it works outside an app context: see app/protocol/front.py)."""
        snap, now = self._snapshot, time.monotonic()
        if snap is None or now >= snap.valid_until or now - self._checked_at >= self.refresh_interval:
            return None
        return snap

    def signing_key(self) -> tuple[str, RSAKey]:
        """The active key, with its kid. Raises KeyStoreError when there is none."""
        kid = self.snapshot().signing_kid
        if kid is None:
            raise KeyStoreError("no active signing key: run `flask keys generate`")
        return kid, self._private_key(kid)

    def public_key_set(self) -> dict[str, Any]:
        return json.loads(self.snapshot().jwks_body)

    def invalidate(self) -> None:
        """Forget the cached snapshot (after a change made by this process)."""
        self._snapshot = None

    def _load(self) -> KeySnapshot:
        # Plain copies, not ORM rows: the snapshot outlives the request. Read on the request's
        # connection (its unit of work: app/store/unit_of_work.py), where a change made here is
        # flushed before the snapshot is read again.
        rows = tuple(KeyInfo(*row) for row in run(_ALL_KEYS))
        now = utcnow()
        signers = [r for r in rows if r.can_sign(now)]
        signing = max(signers, key=lambda r: r.activates_at) if signers else None
        published = [r.public_jwk for r in rows if r.is_published(now)]
        body = json.dumps({"keys": published}, separators=(",", ":")).encode()
        # Recompute when the next key activates, a key retires, or a retired key expires.
        boundaries = [
            t for r in rows for t in (r.activates_at, r.retired_at, r.expires_at) if t is not None and t > now
        ]
        until = time.monotonic() + (min(boundaries) - now).total_seconds() if boundaries else float("inf")
        snap = KeySnapshot(
            signing_kid=signing.kid if signing else None,
            jwks_body=body,
            jwks_etag='"' + hashlib.sha256(body).hexdigest()[:32] + '"',
            rows=rows,
            valid_until=until,
        )
        if signing is not None:
            try:
                self._private_key(signing.kid)  # load it now, not on the first sign-in
            except KeyStoreError as exc:
                # The key set is still published and the keys can still be listed, rotated and
                # revoked (the way out); only signing fails, and /readyz reports it.
                log.error("%s: ID tokens cannot be signed until `flask keys rotate --now`", exc)
        if self in db.session.info.get(UNCOMMITTED, ()):
            return snap  # read inside a transaction that changed the keys: not for anyone else
        self._snapshot = snap
        self._checked_at = time.monotonic()
        return snap

    def _private_key(self, kid: str) -> RSAKey:
        key = self._private.get(kid)
        if key is None:
            path = self._path(kid)
            try:
                pem = path.read_bytes()
            except FileNotFoundError as exc:
                raise KeyStoreError(f"private key file for kid {kid} is missing from {self.keys_dir}") from exc
            key = RSAKey.import_key(pem, parameters={"kid": kid, "alg": SIGNING_ALG, "use": "sig"})
            self._private[kid] = key
        return key

    def _path(self, kid: str) -> Path:
        return self.keys_dir / f"{kid}.pem"

    # -- changing -----------------------------------------------------------------------

    @staticmethod
    def _row(kid: str) -> SigningKey:
        """The row of `kid`, to change. Keys are never deleted, so a kid the snapshot lists has one."""
        row = db.session.get(SigningKey, kid)
        if row is None:
            raise KeyStoreError(f"no key with kid {kid}")
        return row

    def _changed(self) -> None:
        """Publish the key set afresh once the caller's transaction ends (`_transaction_ended`)."""
        db.session.info.setdefault(UNCOMMITTED, set()).add(self)
        self.invalidate()

    def generate(self, activates_at: datetime | None = None) -> SigningKey:
        """A new RSA key in the caller's transaction (the CLI's `keys generate`, `make run`'s
        first key): the private half written to KEYS_DIR (0600) first, the public half flushed to
        the database. A file whose row never commits is never published, so it signs nothing."""
        key = RSAKey.generate_key(RSA_KEY_BITS, private=True)
        kid = key.thumbprint()
        self.keys_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        path = self._path(kid)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(key.as_pem(private=True))
        public = key.as_dict(private=False)
        public.update({"kid": kid, "alg": SIGNING_ALG, "use": "sig"})
        row = SigningKey(kid=kid, alg=SIGNING_ALG, public_jwk=public, activates_at=activates_at or utcnow())
        db.session.add(row)
        db.session.flush()
        self._changed()
        return row

    def ensure_key(self) -> SigningKey | None:
        """Generate a first key when none can sign (used by `make run`); None if one exists. In the
        caller's transaction, as `generate`."""
        if self.snapshot().signing_kid is not None:
            return None
        return self.generate()

    def rotate(self, immediate: bool = False, actor: User | None = None) -> SigningKey:
        """Publish a new key now; it starts signing after KEY_PUBLISH_DELAY (or at once with
        `immediate`), and the current key retires at that moment, staying published until every
        ID token it signed has expired. Audited here, for every caller (console, CLI). One
        transaction, the caller's: the new key, the old one's retirement and the audit row.

        A rotation already under way (a key waiting to sign) is refused, unless `immediate`: an
        emergency rotation withdraws the waiting key too (it signed nothing; it would otherwise
        take over from the emergency key when its time came)."""
        now = utcnow()
        pending = [r for r in self.snapshot().rows if r.activates_at > now and r.retired_at is None]
        if pending and not immediate:
            raise KeyStoreError(
                f"a rotation is already under way: key {pending[0].kid} signs from "
                f"{pending[0].activates_at.isoformat()}"
            )
        for waiting in pending:
            row = self._row(waiting.kid)
            row.retired_at = row.expires_at = now
        starts = now if immediate else now + timedelta(seconds=self.publish_delay)
        current = self.snapshot().signing_kid
        new = self.generate(activates_at=starts)
        if current is not None:
            old = self._row(current)
            old.retired_at = starts
            old.expires_at = starts + timedelta(seconds=self.token_lifetime)
        record("key.rotated", actor=actor, kid=new.kid)
        db.session.flush()
        return new

    def retire(self, kid: str, actor: User | None = None) -> SigningKey:
        """Stop signing with `kid` now; keep it published until its tokens have expired.
        Audited here, for every caller (console, CLI); in the caller's transaction."""
        return self._end(kid, actor, published_for=timedelta(seconds=self.token_lifetime))

    def revoke(self, kid: str, actor: User | None = None) -> SigningKey:
        """A leaked or lost key: stop signing with it and take it out of the key set now, so the
        ID tokens it signed (and any its holder forges) stop verifying at once. In the caller's
        transaction: the key leaves the key set when it commits."""
        return self._end(kid, actor, published_for=timedelta(0))

    def revoke_refusal(self, kid: str) -> str | None:
        """Why `revoke(kid)` would be refused (no such key, or the only one that can sign), read
        without writing, so a command can say so before asking for confirmation. None: it may."""
        row = db.session.get(SigningKey, kid)
        if row is None:
            return f"no key with kid {kid}"
        return self._only_signer(row, utcnow())

    def _only_signer(self, row: SigningKey, now: datetime) -> str | None:
        others = [r for r in self.snapshot().rows if r.kid != row.kid and r.can_sign(now)]
        if not others and row.can_sign(now):
            return "refusing to end the only signing key: rotate first (`--now` in an emergency)"
        return None

    def _end(self, kid: str, actor: User | None, published_for: timedelta) -> SigningKey:
        row = self._row(kid)
        now = utcnow()
        if refusal := self._only_signer(row, now):
            raise KeyStoreError(refusal)
        expires = now + published_for
        if row.activates_at > now:
            # A key still waiting to sign: the key it was to replace keeps signing after all.
            for replaced in db.session.scalars(db.select(SigningKey).where(SigningKey.retired_at == row.activates_at)):
                replaced.retired_at = replaced.expires_at = None
        if row.retired_at is None or row.retired_at > now:
            row.retired_at = now
        if row.expires_at is None or row.expires_at > expires:
            row.expires_at = expires
            record("key.revoked" if published_for == timedelta(0) else "key.retired", actor=actor, kid=row.kid)
        db.session.flush()
        self._changed()
        return row

    def describe(self) -> list[dict[str, Any]]:
        """Every key with its state, newest first (CLI and console)."""
        snap = self.snapshot()
        now = utcnow()
        return [
            {
                "kid": r.kid,
                "alg": r.alg,
                "created_at": r.created_at.isoformat(),
                "activates_at": r.activates_at.isoformat(),
                "retired_at": r.retired_at.isoformat() if r.retired_at else None,
                "expires_at": r.expires_at.isoformat() if r.expires_at else None,
                "state": r.state(now, snap.signing_kid),
                "published": r.is_published(now),
                "private_key_present": self._path(r.kid).exists(),
            }
            for r in sorted(snap.rows, key=lambda r: r.created_at, reverse=True)
        ]


@event.listens_for(Session, "after_transaction_end")
def _transaction_ended(session: Session, transaction: SessionTransaction) -> None:
    """A transaction that changed the keys has ended (committed, rolled back or closed): the
    stores it changed read the table afresh, so they publish the committed key set only."""
    if transaction.parent is None:
        for store in session.info.pop(UNCOMMITTED, ()):
            store.invalidate()


def init_keystore(app: Flask) -> None:
    app.extensions["keystore"] = KeyStore(app)


keystore: KeyStore = LocalProxy(lambda: current_app.extensions["keystore"])  # type: ignore[assignment]
