"""`flask keys generate|ensure|rotate|retire|revoke|list`: the ID-token signing keys. The key store
(app/protocol/jwks.py) changes the table in the command's transaction; the command commits once, and the
store publishes the new key set only after that commit."""

from __future__ import annotations

import click

from app.cli.output import CommandGroup, emit, fail, json_option
from app.core.extensions import db
from app.protocol.jwks import KeyStoreError, keystore

keys = CommandGroup("keys", help="ID-token signing keys.")


@keys.command("generate")
@json_option
def keys_generate(as_json: bool) -> None:
    """Generate a signing key that signs at once (first set-up)."""
    row = keystore.generate()
    db.session.commit()
    emit({"kid": row.kid, "alg": row.alg}, as_json, lambda d: f"generated {d['kid']} ({d['alg']})")


@keys.command("ensure")
@json_option
def keys_ensure(as_json: bool) -> None:
    """Generate a signing key only when none can sign (idempotent; used by `make run`)."""
    row = keystore.ensure_key()
    db.session.commit()
    data = {"generated": row.kid if row else None, "active": keystore.snapshot().signing_kid}
    emit(data, as_json, lambda d: f"generated {d['generated']}" if d["generated"] else f"active key {d['active']}")


@keys.command("rotate")
@click.option("--now", "immediate", is_flag=True, help="Sign with the new key at once (skip the publish delay).")
@json_option
def keys_rotate(immediate: bool, as_json: bool) -> None:
    """Publish a new key; it signs after KEY_PUBLISH_DELAY, and the old key retires then. With
    --now (an emergency) it signs at once, and a key still waiting from an earlier rotation is
    withdrawn."""
    try:
        row = keystore.rotate(immediate=immediate)
    except KeyStoreError as exc:
        fail(str(exc))
    db.session.commit()
    emit(
        {"kid": row.kid, "activates_at": row.activates_at.isoformat()},
        as_json,
        lambda d: f"new key {d['kid']} signs from {d['activates_at']}",
    )


@keys.command("retire")
@click.argument("kid")
@json_option
def keys_retire(kid: str, as_json: bool) -> None:
    """Stop signing with KID; it stays published until the tokens it signed expire."""
    try:
        row = keystore.retire(kid)
    except KeyStoreError as exc:
        fail(str(exc))
    db.session.commit()
    emit(
        {"kid": row.kid, "expires_at": row.expires_at and row.expires_at.isoformat()},
        as_json,
        lambda d: f"retired {d['kid']}; published until {d['expires_at']}",
    )


@keys.command("revoke")
@click.argument("kid")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def keys_revoke(kid: str, yes: bool, as_json: bool) -> None:
    """A leaked or lost key: stop signing with KID and unpublish it at once. ID tokens it signed
    stop verifying immediately (rotate with --now first if it is the active key)."""
    refusal = keystore.revoke_refusal(kid)  # before asking: a typo or the only signer is refused at once
    if refusal:
        fail(refusal)
    if not yes:
        click.confirm(f"Unpublish {kid} now? ID tokens it signed stop verifying at once.", abort=True)
    try:
        row = keystore.revoke(kid)
    except KeyStoreError as exc:
        fail(str(exc))
    db.session.commit()
    emit(
        {"kid": row.kid, "expires_at": row.expires_at and row.expires_at.isoformat()},
        as_json,
        lambda d: f"revoked {d['kid']}: no longer published",
    )


@keys.command("list")
@json_option
def keys_list(as_json: bool) -> None:
    """Every key with its state (next, active, retired)."""
    data = keystore.describe()
    emit(
        data,
        as_json,
        lambda d: (
            "\n".join(f"{k['kid']}  {k['alg']}  {k['state']:<8} created {k['created_at']}" for k in d) or "no keys"
        ),
    )
