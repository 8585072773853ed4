"""Work a page hands to a thread of its own, started once its answer has gone out: the answer
neither waits for the work nor tells, by its timing, what the work found. Used where the answer must
be the same whatever the work does ("Forgot password?" for a member's address and for a stranger's).

The thread starts when the server closes the response (after sending it), so the work does not even
share the interpreter with the request it came from. It runs in a copy of the request's context
(Flask's `copy_current_request_context`): the request's IP and user agent for the audit trail and
the mails, and an app context of its own, so a database session of its own. The work is a unit of
work as a page's is: its services only flush, and the thread, which owns it, commits once, then
sends the mail the work returned. A failure is logged (nothing is committed); the page has answered
already.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from flask import Response, after_this_request, copy_current_request_context

from app.core.extensions import db
from app.services.mail import Mail, deliver

log = logging.getLogger(__name__)


def run_after_response(work: Callable[[], Mail | None], name: str) -> None:
    """Run `work` in a daemon thread called `name`, in a copy of this request's context, once the
    response is closed; commit what it flushed, then deliver the mail it returns (if any)."""

    @copy_current_request_context
    def unit_of_work() -> None:
        mail = work()
        db.session.commit()
        if mail is not None:
            deliver(mail)

    def run() -> None:
        try:
            unit_of_work()
        except Exception as exc:
            log.error("%s failed: %s: %s", name, type(exc).__name__, exc)

    @after_this_request
    def start_on_close(response: Response) -> Response:
        response.call_on_close(threading.Thread(target=run, name=name, daemon=True).start)
        return response
