"""Rosters and workspace keys on the account page (`/account/rosters/...`): a member keeps named
rosters of the catalog profiles they represent (search the catalog by name, add, take off), and
issues workspace keys that read those profiles on `/v1` (created, rotated and revoked here; each
value shown once). Plain forms and server-side confirmation pages: no script is needed.

Each route is one unit of work: the services it calls (app/services/rosters.py,
app/services/apikeys.py) only flush; the route commits once. The account page shows the rosters
through its own include (templates/account/_rosters.html, fed by `member_rosters`)."""

from __future__ import annotations

from datetime import timedelta

from flask import Response, abort, flash, redirect, render_template, request, url_for
from flask_wtf import FlaskForm
from wtforms import HiddenField, RadioField, StringField
from wtforms.validators import DataRequired, Length

from app.core.extensions import db
from app.models import ApiKey, User
from app.services import rosters
from app.services.apikeys import (
    MAX_WORKSPACE_KEYS,
    PLAN_LIMITS,
    ApiKeyError,
    KeyNotFound,
    create_workspace_key,
    find_workspace_key,
    revoke_key,
    rotate_key,
    workspace_keys,
)
from app.services.metering import last_used, usage_for, utc_day
from app.services.rosters import StoredRoster
from app.services.sessions import current_user
from app.web.account.views import ActionForm, bp
from app.web.api import catalog
from app.web.api.widget_script import script_url
from app.web.console import once

WORKSPACE_LIMITS = PLAN_LIMITS["workspace"]
ROTATION_GRACE = {"0": timedelta(0), "86400": timedelta(days=1)}


class RosterForm(FlaskForm):
    name = StringField("Name", validators=[DataRequired(), Length(max=rosters.MAX_NAME)])


class AddProfileForm(FlaskForm):
    profile_id = HiddenField(validators=[DataRequired(), Length(max=36)])
    q = HiddenField(validators=[Length(max=catalog.MAX_KEYWORD)])  # the search to come back to


class WorkspaceKeyForm(FlaskForm):
    """A new key: its value is shown once, so a reload of the page that shows it must not make a
    second key (the submission id, app/web/console/once.py)."""

    name = StringField("Key name", validators=[DataRequired(), Length(max=120)])
    submission = HiddenField(default=once.new_submission_id)


class RotateForm(FlaskForm):
    grace = RadioField(
        "The current value",
        choices=[("0", "stops working at once (after a leak)"), ("86400", "keeps working for 24 hours")],
        default="86400",
    )
    submission = HiddenField(default=once.new_submission_id)


@bp.app_template_global()
def member_rosters(user: User) -> list[StoredRoster]:
    """The member's rosters, for the account page's section (one query)."""
    return rosters.rosters_of(user)


def _signed_in() -> User:
    """The signed-in member, or off to the login page (back to this page, or the account page
    after a form: a form's address answers no GET)."""
    user = current_user()
    if user is None:
        back = request.path if request.method == "GET" else url_for("account.show")
        abort(redirect(url_for("auth.login", next=back), 303))
    return user


def _roster(user: User, roster_id: str) -> StoredRoster:
    try:
        return rosters.member_roster(user, roster_id)
    except rosters.RosterNotFound:
        abort(404)


def _key(roster: StoredRoster, key_id: str) -> ApiKey:
    try:
        return find_workspace_key(key_id, roster.id)
    except KeyNotFound:
        abort(404)


def _back(roster: StoredRoster, q: str | None = None, anchor: str | None = None) -> Response:
    return redirect(url_for("account.roster", roster_id=roster.id, q=q or None, _anchor=anchor), 303)


def _search(q: str) -> dict | None:
    """The catalog's profile search (the catalog API's `search`, profiles only): up to 10 by name."""
    if not q:
        return None
    return catalog.search(q, ["profile"])["profiles"]


def _key_rows(keys: list[ApiKey]) -> list[dict]:
    today = utc_day()
    used = last_used(keys)
    rows = []
    for usage in usage_for(keys):
        rows.append(
            {
                "key": usage.key,
                "today": sum(count for day, count in usage.days if day == today),
                "month": usage.month_calls,
                "last_used": used.get(usage.key.id),
            }
        )
    return rows


def _roster_page(
    user: User,
    roster: StoredRoster,
    *,
    key_form: WorkspaceKeyForm | None = None,
    error: str | None = None,
    status: int = 200,
) -> tuple[str, int]:
    q = (request.args.get("q") or "").strip()[: catalog.MAX_KEYWORD]
    entries = rosters.entries(roster)
    return render_template(
        "account/roster.html",
        user=user,
        roster=roster,
        entries=entries,
        on_roster={entry.profile_id for entry in entries},
        q=q,
        found=_search(q),
        keys=_key_rows(workspace_keys(roster.id)),
        key_form=key_form or WorkspaceKeyForm(),
        form=ActionForm(),
        add_form=AddProfileForm(),
        max_profiles=rosters.MAX_PROFILES,
        max_keys=MAX_WORKSPACE_KEYS,
        limits=WORKSPACE_LIMITS,
        script_url=script_url(),
        error=error,
    ), status


@bp.post("/rosters")
def new_roster():
    user = _signed_in()
    form = RosterForm()
    if not form.validate_on_submit():
        flash("A roster needs a name of 1 to 120 characters.", "error")
        return redirect(url_for("account.show", _anchor="rosters"), 303)
    try:
        roster = rosters.create_roster(user, form.name.data, actor=user)
    except rosters.RosterError as exc:  # checked before anything was written
        flash(f"{str(exc)[:1].upper()}{str(exc)[1:]}.", "error")
        return redirect(url_for("account.show", _anchor="rosters"), 303)
    db.session.commit()
    flash(f"The roster {roster.name} is made: find the profiles you represent and add them.")
    return _back(roster)


@bp.get("/rosters/<roster_id>")
def roster(roster_id: str):
    user = _signed_in()
    return _roster_page(user, _roster(user, roster_id))


@bp.post("/rosters/<roster_id>/profiles")
def add_to_roster(roster_id: str):
    user = _signed_in()
    roster = _roster(user, roster_id)
    form = AddProfileForm()
    if not form.validate_on_submit():
        abort(400)
    try:
        profile = rosters.add_profile(roster, form.profile_id.data, actor=user)
    except rosters.RosterError as exc:
        flash(f"{str(exc)[:1].upper()}{str(exc)[1:]}.", "error")
        return _back(roster, form.q.data, "add")
    db.session.commit()
    flash(f"{profile.name} is on {roster.name}.")
    return _back(roster, form.q.data, "add")


@bp.post("/rosters/<roster_id>/profiles/<profile_id>/remove")
def remove_from_roster(roster_id: str, profile_id: str):
    user = _signed_in()
    roster = _roster(user, roster_id)
    if not ActionForm().validate_on_submit():
        abort(400)
    profile = rosters.remove_profile(roster, profile_id, actor=user)
    db.session.commit()
    if profile is None:
        flash("That profile was not on this roster.", "error")
    else:
        flash(f"{profile.name} is off {roster.name}: this roster's workspace keys no longer reach it.")
    return _back(roster, anchor="profiles")


@bp.route("/rosters/<roster_id>/delete", methods=["GET", "POST"])
def delete_roster(roster_id: str):
    """A confirmation page, whose button deletes the roster (and revokes its keys)."""
    user = _signed_in()
    roster = _roster(user, roster_id)
    form = ActionForm()
    if request.method == "GET":
        return render_template("account/roster_delete.html", roster=roster, form=form)
    if not form.validate_on_submit():
        abort(400)
    revoked = rosters.delete_roster(roster, actor=user)
    db.session.commit()
    flash(
        f"The roster {roster.name} is deleted"
        + (f", and its {revoked} workspace key{'' if revoked == 1 else 's'} revoked." if revoked else ".")
    )
    return redirect(url_for("account.show", _anchor="rosters"), 303)


# -- workspace keys ----------------------------------------------------------------------------------


def _value_page(roster: StoredRoster, key: ApiKey, value: str, created: bool) -> str:
    example = rosters.entries(roster)[:1]
    return render_template(
        "account/workspace_key_value.html",
        roster=roster,
        key=key,
        value=value,
        created=created,
        example_profile=example[0].profile_id if example else "PROFILE_ID",
        api_base=request.host_url.rstrip("/") + "/v1",
        limits=WORKSPACE_LIMITS,
    )


@bp.post("/rosters/<roster_id>/keys")
def new_workspace_key(roster_id: str):
    user = _signed_in()
    roster = _roster(user, roster_id)
    form = WorkspaceKeyForm()
    if not form.validate_on_submit():
        return _roster_page(user, roster, key_form=form, error="Give the key a name (1 to 120 characters).", status=400)
    if done := once.already_done(form.submission.data):
        flash(
            "This key was already created: the form was sent twice. Its value was shown once; if you did not copy it, rotate the key."
        )
        return _back(roster, anchor=f"key-{done}")
    try:
        key, value = create_workspace_key(user, roster, form.name.data, actor=user)
    except ApiKeyError as exc:  # checked before anything was written
        return _roster_page(user, roster, key_form=form, error=f"{str(exc)[:1].upper()}{str(exc)[1:]}.", status=400)
    db.session.commit()
    once.remember(form.submission.data, key.id)
    return _value_page(roster, key, value, created=True)


@bp.route("/rosters/<roster_id>/keys/<key_id>/rotate", methods=["GET", "POST"])
def rotate_workspace_key(roster_id: str, key_id: str):
    """A confirmation page (when the current value stops), whose button rotates: the new value is
    shown once."""
    user = _signed_in()
    roster = _roster(user, roster_id)
    key = _key(roster, key_id)
    form = RotateForm()
    if request.method == "GET" or key.is_revoked:
        if key.is_revoked:
            flash(f"{key.name} is revoked: it cannot be rotated.", "error")
            return _back(roster, anchor="keys")
        return render_template("account/workspace_key_confirm.html", roster=roster, key=key, form=form, action="rotate")
    if not form.validate_on_submit() or form.grace.data not in ROTATION_GRACE:
        abort(400)
    if once.already_done(form.submission.data) == key.id:
        flash(
            "The key was already rotated: the form was sent twice. Its new value was shown once; if you did not copy it, rotate it again."
        )
        return _back(roster, anchor=f"key-{key.id}")
    value = rotate_key(key, ROTATION_GRACE[form.grace.data] or None, actor=user)
    db.session.commit()
    once.remember(form.submission.data, key.id)
    return _value_page(roster, key, value, created=False)


@bp.route("/rosters/<roster_id>/keys/<key_id>/revoke", methods=["GET", "POST"])
def revoke_workspace_key(roster_id: str, key_id: str):
    """A confirmation page, whose button revokes the key (at once, for good)."""
    user = _signed_in()
    roster = _roster(user, roster_id)
    key = _key(roster, key_id)
    form = ActionForm()
    if request.method == "GET":
        if key.is_revoked:
            flash(f"{key.name} is already revoked.")
            return _back(roster, anchor="keys")
        return render_template("account/workspace_key_confirm.html", roster=roster, key=key, form=form, action="revoke")
    if not form.validate_on_submit():
        abort(400)
    changed = revoke_key(key, actor=user)
    db.session.commit()
    flash(
        f"{key.name} is revoked: requests with it are refused from now on."
        if changed
        else f"{key.name} was already revoked."
    )
    return _back(roster, anchor="keys")
