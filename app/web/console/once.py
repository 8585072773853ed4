"""Forms that must take effect once: registering an app and rotating its secret.

Both answer with the page that shows the new client secret. The secret is never stored in plain
text, so that page cannot be shown again after a redirect (post-redirect-get would need the secret
kept somewhere). A reload of it re-posts the form, which would register a second app (and a second
monthly fee) or rotate the secret again (voiding the one just shown). So each form carries a
one-time submission id, and the member's session (a signed cookie) remembers which app each id
produced; a repeated submission leads to that app's page instead of acting twice.
"""

from __future__ import annotations

import re
import secrets

from flask import session

SESSION_KEY = "console_submissions"
REMEMBERED = 20  # the most recent submissions; an older form re-posted acts again (it has expired)
SUBMISSION_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")


def new_submission_id() -> str:
    return secrets.token_urlsafe(16)


def _valid(submission_id: str | None) -> bool:
    return bool(submission_id) and SUBMISSION_ID.fullmatch(submission_id) is not None


def already_done(submission_id: str | None) -> str | None:
    """The client id the form with this submission id already acted on, if it did."""
    if not _valid(submission_id):
        return None
    return session.get(SESSION_KEY, {}).get(submission_id)


def remember(submission_id: str | None, client_id: str) -> None:
    if not _valid(submission_id):
        return
    done = dict(session.get(SESSION_KEY, {}))
    done[submission_id] = client_id
    session[SESSION_KEY] = dict(list(done.items())[-REMEMBERED:])
