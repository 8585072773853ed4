""" "Forgot password?" answers a member's address and a stranger's with the same work: the request
itself reads and writes nothing in the database for either, and the member's lookup, link, audit
line and mail happen after the answer (app/web/background.py), so not even the timing tells which
addresses are members. In-process (Flask's test client), counting the statements each request's
own thread sends; `python -m bench.forgot_timing` measures the times."""

from __future__ import annotations

import re
import threading
import time

import pytest
from sqlalchemy import event

from app.core.extensions import db, limiter
from app.models import AuditEvent, LinkPurpose, OneTimeLink
from tests.factories import make_member
from tests.flows import csrf_token
from tests.issued import separate_app


@pytest.fixture(scope="module")
def web(settings):
    return separate_app(settings, MAIL_IP_LIMIT="1000 per hour")


@pytest.fixture(autouse=True)
def fresh_counters(web):
    limiter.init_app(web)  # another module's app may have taken the shared limiter over
    limiter.reset()
    yield
    limiter.reset()


@pytest.fixture
def statements(web):
    """The SQL each thread sends to the web app's database, by thread id."""
    seen: dict[int, list[str]] = {}

    def note(_conn, _cursor, statement, *_rest) -> None:
        seen.setdefault(threading.get_ident(), []).append(statement)

    with web.app_context():
        engine = db.engine
    event.listen(engine, "before_cursor_execute", note)
    yield seen
    event.remove(engine, "before_cursor_execute", note)


def ask(client, email: str):
    page = client.get("/password/forgot").get_data(as_text=True)
    answer = client.post(
        "/password/forgot",
        data={"csrf_token": csrf_token(page), "email": email},
        environ_base={"REMOTE_ADDR": "192.0.2.7"},
    )
    html = answer.get_data(as_text=True)
    answer.close()  # as a server does once the answer is sent: the background work starts here
    return answer.status_code, re.sub(r'value="[^"]*"', "", html).replace(email, "EMAIL")


def wait_for(condition, timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "the background work did not finish"
        time.sleep(0.05)


def test_a_member_and_a_stranger_cost_the_request_the_same_statements(web, statements, mailbox):
    member = make_member()
    client = web.test_client()
    me = threading.get_ident()

    statements.clear()
    known = ask(client, member.email)
    member_statements = list(statements.get(me, []))
    statements.clear()
    unknown = ask(client, "nobody-at-all@example.test")
    stranger_statements = list(statements.get(me, []))

    assert known == unknown and known[0] == 200
    assert member_statements == stranger_statements == []  # the request itself touches no row for either

    mail = mailbox.wait_for(member.email)  # the member's work happened, after the answer
    assert mail.subject == "Reset your Credits ID password"
    mailbox.assert_none_to("nobody-at-all@example.test", wait=0.3)
    db.session.expire_all()
    [link] = OneTimeLink.query.filter_by(user_id=member.id, purpose=LinkPurpose.RESET).all()
    assert link.email == member.email
    event_row = AuditEvent.query.filter_by(action="password.reset_requested", subject_id=member.id).one()
    assert event_row.ip == "192.0.2.7" and event_row.source == "web"  # the request's, carried to the work


def test_a_failing_background_step_is_logged_and_the_answer_stands(web, mailbox, monkeypatch, caplog):
    member = make_member()

    def broken(_email):
        raise RuntimeError("database went away")

    monkeypatch.setattr("app.web.auth.recovery_views.request_reset", broken)
    with caplog.at_level("ERROR", logger="app.web.background"):
        status, _ = ask(web.test_client(), member.email)
        wait_for(lambda: any("reset-link failed" in r.getMessage() for r in caplog.records))
    assert status == 200
    assert "RuntimeError: database went away" in " ".join(r.getMessage() for r in caplog.records)
    db.session.expire_all()
    assert OneTimeLink.query.filter_by(user_id=member.id).count() == 0
