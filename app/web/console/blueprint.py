"""The console blueprint and who may enter: developers (their own apps) and admins (everything).

Not signed in: to the login page, and back here afterwards. Signed in as a plain member: a 403
page that says a developer account is needed. A developer on an admin page or on another
developer's app: 403."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from flask import Blueprint, g, has_request_context, redirect, request, url_for

from app.models import Role, User
from app.services.apps import AppNotFound, NotAllowed
from app.services.roles import can_use_console
from app.services.sessions import current_user
from app.web.errors import error_page

bp = Blueprint("console", __name__, url_prefix="/console")


class AdminOnly(NotAllowed):
    """A page for admins only."""


def login_redirect():
    target = request.full_path.rstrip("?") if request.query_string else request.path
    return redirect(url_for("auth.login", next=target))


def console_page(admin: bool = False) -> Callable:
    """Guard a console view; the signed-in developer or admin is `g.console_user`."""

    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def guarded(*args, **kwargs):
            user = current_user()
            if user is None:
                return login_redirect()
            if not can_use_console(user):
                return error_page(
                    "Developer account needed",
                    "The console is where developers register and manage their apps. Your account is a member account.",
                    403,
                    hint="Your own connected apps are on your account page.",
                    next_step="To register apps, ask an administrator of Credits ID to make your account a "
                    "developer account. To see or disconnect the apps you use, go to your account page.",
                    links=[("Your account page", url_for("account.show"))],
                )
            if admin and user.role != Role.ADMIN:
                raise AdminOnly("This page is for administrators only.")
            g.console_user = user
            return view(*args, **kwargs)

        return guarded

    return decorate


def console_user() -> User:
    return g.console_user


def page_number() -> int:
    """The `page` query argument (1-based); anything else is page 1."""
    raw = request.args.get("page", "1")
    return int(raw) if raw.isascii() and raw.isdigit() and 0 < int(raw) < 100_000 else 1


@bp.errorhandler(NotAllowed)
def not_allowed(error: NotAllowed):
    return error_page(
        "Not allowed",
        str(error),
        403,
        next_step="Ask an administrator, or the app's owner, if you need to change it.",
        links=[("Back to the console", url_for("console.apps"))],
    )


@bp.errorhandler(AppNotFound)
def app_not_found(error: AppNotFound):
    return error_page(
        "Application not found",
        "There is no registered application with that client id.",
        404,
        next_step="Check the client id, or find the app in your list of apps.",
        links=[("Your apps", url_for("console.apps"))],
    )


# The console's navigation: each section and the path it starts with ("" is the apps section).
SECTIONS = (
    ("api_keys", "/console/api-keys"),
    ("billing", "/console/billing"),
    ("fees", "/console/fees"),
    ("audit", "/console/audit"),
    ("keys", "/console/keys"),
    ("users", "/console/users"),
    ("activity", "/console/activity"),
)


def console_section(path: str) -> str:
    """Which navigation link names the page at `path`: marked aria-current in the layout."""
    return next((name for name, prefix in SECTIONS if path == prefix or path.startswith(prefix + "/")), "apps")


@bp.app_context_processor
def console_globals() -> dict:
    """Every template's view of the console (mails rendered by a CLI command have no request)."""
    path = request.path if has_request_context() else ""
    return {"console_user": g.get("console_user"), "console_section": console_section(path)}
