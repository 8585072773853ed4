"""The step before disconnecting an app: a page that says what revoking does, with the button
that does it (a POST to account.revoke). A server-side step, so it needs no script and the
account page's "Revoke access" button cannot disconnect an app by a slip of the finger."""

from __future__ import annotations

from flask import flash, redirect, render_template, url_for

from app.core.extensions import db
from app.models import Profile
from app.services.connections import connections
from app.services.sessions import current_user
from app.store import store
from app.web.account.views import ActionForm, bp


@bp.get("/apps/<client_id>/revoke")
def confirm_revoke(client_id: str):
    user = current_user()
    if user is None:
        return redirect(url_for("auth.login", next=url_for("account.show")))
    client = store().apps.registered(client_id[:255])
    found = [c for c in connections(user) if client is not None and c.client.id == client.id]
    if not found:
        flash("That app is not connected to your account.", "error")
        return redirect(url_for("account.show"), 303)
    return render_template("account/revoke_confirm.html", connection=found[0], form=ActionForm())


@bp.app_template_global()
def credits_profile(profile_id: str | None) -> Profile | None:
    """The catalog profile a member is linked to, so the account page can name it."""
    return db.session.get(Profile, profile_id) if profile_id else None
