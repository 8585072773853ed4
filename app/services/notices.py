"""Security notices: a mail to the member when something that protects their account changes
(password, two-step verification, passkeys), as Google and GitHub send them, so a change made by
someone else does not go unnoticed. Sent after the change is committed; no link that acts, only
where to go if it was not them."""

from __future__ import annotations

from flask import current_app, has_request_context, request

from app.models import User
from app.models.base import utcnow
from app.services.mail import Mail
from app.services.session_list import browser_name


def security_notice(user: User, what: str, detail: str | None = None) -> Mail:
    """A mail telling `user` that `what` ("Your password was changed") just happened, when, and from
    which browser and address; `detail`, a paragraph more about it."""
    where = None
    if has_request_context():
        where = f"{browser_name(request.user_agent.string)}, address {request.remote_addr or 'unknown'}"
    issuer = current_app.config["ISSUER_URL"]
    return Mail.from_template(
        user.email,
        f"Credits ID security notice: {what[0].lower() + what[1:]}",
        "security_notice",
        user=user,
        what=what,
        detail=detail,
        when=utcnow().strftime("%Y-%m-%d %H:%M UTC"),
        where=where,
        forgot=f"{issuer}/password/forgot",
        account=f"{issuer}/account",
    )
