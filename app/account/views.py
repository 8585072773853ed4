"""The member's account page: profile, membership, connected apps (revoke), sign out."""

from __future__ import annotations

from flask import Blueprint, flash, redirect, render_template, url_for
from flask_wtf import FlaskForm
from sqlalchemy import select

from app.account.connections import connections, is_connected
from app.audit import record
from app.auth.sessions import current_user, end_all_logins, end_login
from app.consent.service import revoke_consent
from app.extensions import db
from app.models import Client, Tier
from app.scopes import SCOPES, tier_allows

bp = Blueprint("account", __name__, url_prefix="/account")

# What each membership lets apps read, in the consent page's words (the sign-in scopes aside).
DATA_SCOPES = ("profile", "email", "credits:read", "analytics:read")


class ActionForm(FlaskForm):
    """A button that changes something: only the CSRF token."""


def tiers() -> list[dict]:
    return [
        {"name": t.value, "includes": [SCOPES[s].description for s in DATA_SCOPES if tier_allows(s, t.value)]}
        for t in Tier
    ]


@bp.get("", strict_slashes=False)
def show():
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login", next=url_for("account.show")))
    return render_template("account/account.html", user=user, tiers=tiers(),
                           connections=connections(db.session, user), form=ActionForm())


@bp.post("/apps/<client_id>/revoke")
def revoke(client_id: str):
    """Remove the consent and revoke every access and refresh token of that app for this member."""
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login", next=url_for("account.show")))
    client = db.session.scalar(select(Client).where(Client.client_id == client_id[:64]))
    if client is None or not is_connected(db.session, user, client):
        flash("That app is not connected to your account.", "error")
        return redirect(url_for("account.show"), 303)
    revoked = revoke_consent(db.session, user, client)
    record("consent.revoked", actor=user, client=client, tokens_revoked=revoked)
    db.session.commit()
    flash(f"{client.name} is disconnected: it can no longer read your data, and its sign-in has ended.")
    return redirect(url_for("account.show"), 303)


@bp.post("/sign-out")
def sign_out():
    end_login()
    db.session.commit()
    flash("You are signed out.")
    return redirect(url_for("auth.login"), 303)


@bp.post("/sign-out-everywhere")
def sign_out_everywhere():
    """End every session of the member, on every device (apps keep their own tokens: revoke an
    app above to cut it off)."""
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login"), 303)
    ended = end_all_logins(user)
    record("signout.everywhere", actor=user, sessions_ended=ended)
    end_login()
    db.session.commit()
    flash(f"You are signed out everywhere ({ended} {'session' if ended == 1 else 'sessions'} ended).")
    return redirect(url_for("auth.login"), 303)
