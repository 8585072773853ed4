"""Passkey answers sent at once, proven on PostgreSQL against a server with several workers and
threads: a challenge is used up by one DELETE ... RETURNING and a signature count stored by one
conditional UPDATE, never a read followed by a write, so exactly one of the copies gets in."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from app.core.extensions import db
from app.models import LoginSession, Passkey
from tests.factories import make_member
from tests.flows import Browser, csrf_token
from tests.integration.test_passkeys import add_passkey, answer_form, options_on, passkey_page
from tests.production.servers import requires_postgres, running

pytestmark = requires_postgres
N = 10


@pytest.fixture(scope="module")
def server(app, settings, tmp_path_factory):
    # 2 workers x 10 threads: all N requests are in flight at once, in two processes.
    with running(
        settings, tmp_path_factory.mktemp("passkey-race-logs"), workers=2, threads=10, DATABASE_POOL_SIZE="10"
    ) as server:
        yield server


@pytest.fixture
def issuer(settings) -> str:
    """The origin the server expects in an answer: its issuer's (it listens on another port)."""
    return settings["ISSUER_URL"]


def all_at_once(sends) -> list[int]:
    """Run each `send` in its own thread, released together by a barrier: the statuses."""
    barrier = threading.Barrier(len(sends))

    def one(send) -> int:
        barrier.wait(timeout=60)
        return send().status_code

    with ThreadPoolExecutor(max_workers=len(sends)) as pool:
        return list(pool.map(one, sends))


def copies(browser: Browser, path: str, data: dict) -> list:
    """N senders of the same request with the same cookies, as copies of one browser would."""

    def sender():
        session = requests.Session()
        session.cookies.update(browser.session.cookies.copy())
        return lambda: session.post(browser.base + path, data=data, allow_redirects=False, timeout=60)

    return [sender() for _ in range(N)]


def sessions_of(member) -> int:
    db.session.expire_all()
    return db.session.query(LoginSession).filter_by(user_id=member.id).count()


def test_one_passkey_answer_sent_ten_times_at_once_signs_in_once(server, issuer):
    """A passkey that does not count (only the challenge stops a replay): ten copies of one answer,
    with the browser's cookie, at once."""
    member = make_member()
    _, authenticator = add_passkey(server, member, counting=False, origin=issuer)
    browser = Browser(server.url)
    page = passkey_page(browser)
    data = answer_form(page, authenticator.get(options_on(page.text)))
    before = sessions_of(member)

    statuses = all_at_once(copies(browser, "/login/passkey", data))

    assert sorted(statuses) == [302] + [401] * (N - 1), statuses
    assert sessions_of(member) == before + 1


def test_one_second_step_answer_sent_ten_times_at_once_signs_in_once(server, issuer):
    member = make_member()
    _, authenticator = add_passkey(server, member, counting=False, origin=issuer)
    browser = Browser(server.url)
    browser.get("/login")
    step = browser.login(member.email)
    assert step.url.endswith("/login/second-factor")
    data = {"csrf_token": csrf_token(step.text), "credential": authenticator.get(options_on(step.text))}
    before = sessions_of(member)

    statuses = all_at_once(copies(browser, "/login/second-factor/passkey", data))

    assert sorted(statuses) == [302] + [401] * (N - 1), statuses
    assert sessions_of(member) == before + 1


def test_a_cloned_authenticators_answers_with_one_count_sign_in_once(server, issuer):
    """Ten browsers, each with its own fresh challenge, answered at once by clones of one counting
    authenticator, all signing count 1: the count must grow, and only one answer can make it 1."""
    member = make_member()
    _, authenticator = add_passkey(server, member, origin=issuer)
    sends = []
    for _ in range(N):
        browser = Browser(server.url)
        page = passkey_page(browser)
        data = answer_form(page, authenticator.get(options_on(page.text), count=1))
        sends.append(lambda browser=browser, data=data: browser.post("/login/passkey", data=data))
    before = sessions_of(member)

    statuses = all_at_once(sends)

    assert sorted(statuses) == [302] + [401] * (N - 1), statuses
    assert sessions_of(member) == before + 1
    db.session.expire_all()
    assert db.session.query(Passkey).filter_by(user_id=member.id).one().sign_count == 1
