"""The sign-in throttle under concurrent attempts, against a live server (serve.py) with the real
argon2id cost: counters in memory (one process) and in Redis (two processes sharing them), on
whichever database the suite runs on.

Each attempt is reserved before its password is checked, so a burst of wrong passwords gets no
more checks than the same attempts made one after another would: an account's free failures and
then one per elapsed wait, an IP's budget, a known browser's own budget. An admitted wrong password
is answered 401, a refused one 429 before any password is checked, so the 401s count the argon2
checks (and each 401 of a member writes one `signin.failed` audit line, counted as well). A known
browser's right password is never refused, whatever the flood."""

from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from itertools import count

import pytest
import redis
import requests
from argon2 import PasswordHasher
from sqlalchemy import func, select

from app.core.config import DEFAULTS
from app.core.extensions import db
from app.models import AuditEvent, User
from tests.conftest import redis_test_url, unavailable
from tests.factories import PASSWORD, make_member
from tests.flows import csrf_token
from tests.production.servers import running

REDIS_URL = redis_test_url(5)  # the throttle tests' Redis database
FREE = int(DEFAULTS["LOGIN_ACCOUNT_FREE_FAILURES"].default)
IP_LIMIT = 8  # failed sign-ins per IP in this server's window
DEVICE_LIMIT = 3  # a known browser's own wrong passwords
N = 40  # concurrent attempts per burst
# The production argon2id cost (config DEFAULTS), so a check takes as long as it does in production
# and the attempts of a burst overlap as they would there.
COST = {
    "ARGON2_TIME_COST": str(DEFAULTS["ARGON2_TIME_COST"].default),
    "ARGON2_MEMORY_COST": str(DEFAULTS["ARGON2_MEMORY_COST"].default),
}
_addresses = count(1)


@pytest.fixture(scope="module")
def slow_hash() -> str:
    """PASSWORD hashed at the production cost: what the members of these tests have stored."""
    hasher = PasswordHasher(time_cost=int(COST["ARGON2_TIME_COST"]), memory_cost=int(COST["ARGON2_MEMORY_COST"]))
    return hasher.hash(PASSWORD)


@pytest.fixture(scope="module", params=["memory", "redis"])
def server(request, app, settings, tmp_path_factory):
    """A server with its counters in memory (one process), or in Redis (two processes)."""
    env = {
        **COST,
        "TRUSTED_PROXY_HOPS": "1",  # each attempt names its address in X-Forwarded-For
        "LOGIN_IP_LIMIT": f"{IP_LIMIT} per 15 minutes",
        "LOGIN_DEVICE_LIMIT": f"{DEVICE_LIMIT} per 15 minutes",
    }
    workers = 1
    if request.param == "redis":
        store = redis.Redis.from_url(REDIS_URL, socket_timeout=5)
        try:
            store.ping()
        except redis.ConnectionError:
            unavailable("no Redis at " + REDIS_URL, "the Redis tests")
        store.flushdb()
        env["REDIS_URL"], workers = REDIS_URL, 2
    with running(settings, tmp_path_factory.mktemp("throttle-race-logs"), workers=workers, threads=8, **env) as live:
        yield live
    if request.param == "redis":
        store.flushdb()


def new_address() -> str:
    n = next(_addresses)
    return f"198.18.{n // 250}.{n % 250 + 1}"


class Attempt:
    """One browser's sign-in: its login page loaded (session and CSRF token), the POST held back."""

    def __init__(self, base: str, email: str, password: str, ip: str, cookies: dict | None = None):
        self.base, self.email, self.password, self.ip = base, email, password, ip
        self.session = requests.Session()
        self.session.cookies.update(cookies or {})
        page = self.session.get(base + "/login", headers={"X-Forwarded-For": ip}, timeout=60)
        self.token = csrf_token(page.text)

    def send(self) -> int:
        return self.session.post(
            self.base + "/login",
            data={"csrf_token": self.token, "email": self.email, "password": self.password},
            headers={"X-Forwarded-For": self.ip},
            allow_redirects=False,
            timeout=120,
        ).status_code


def burst(attempts: list[Attempt]) -> tuple[list[int], float]:
    """Send every attempt at once (threads released by a barrier): the statuses, in order, and the
    seconds from the release to the last answer."""
    barrier = threading.Barrier(len(attempts) + 1)

    def one(attempt: Attempt) -> int:
        barrier.wait(timeout=120)
        return attempt.send()

    with ThreadPoolExecutor(max_workers=len(attempts)) as pool:
        futures = [pool.submit(one, a) for a in attempts]
        barrier.wait(timeout=120)
        started = time.monotonic()
        statuses = [f.result() for f in futures]
    return statuses, time.monotonic() - started


def account_design(seconds: float) -> int:
    """The most wrong passwords one account's unknown browsers get checked within `seconds`, one
    after another: the free ones, the one that starts the wait, then one per elapsed wait (1, 2,
    4 ... seconds)."""
    return FREE + 1 + int(math.log2(seconds + 1))


def known_browser(base: str, member: User, ip: str) -> dict:
    """Sign `member` in once from a new browser: the cookies of that (now known) browser."""
    attempt = Attempt(base, member.email, PASSWORD, ip)
    assert attempt.send() == 302
    return {"credits_id_device": attempt.session.cookies["credits_id_device"]}


def failed_sign_ins(member: User) -> int:
    db.session.expire_all()
    return db.session.scalar(
        select(func.count())
        .select_from(AuditEvent)
        .where(AuditEvent.action == "signin.failed", AuditEvent.actor_id == member.id)
    )


@pytest.fixture
def member(slow_hash) -> User:
    member = make_member()
    member.password_hash = slow_hash
    db.session.commit()
    return member


def test_a_burst_of_wrong_passwords_gets_the_checks_of_one_after_another(server, member):
    """40 wrong passwords at one account at once, each from its own address (no IP budget in the
    way), while the member signs in from their known browser."""
    own = known_browser(server.url, member, new_address())
    flood = [Attempt(server.url, member.email, f"guess {i}!!!", new_address()) for i in range(N)]
    mine = Attempt(server.url, member.email, PASSWORD, new_address(), cookies=own)

    statuses, seconds = burst([*flood, mine])

    assert statuses[-1] == 302  # the known browser's right password, in the middle of the flood
    checked = statuses[:-1].count(401)
    assert set(statuses[:-1]) <= {401, 429}
    assert FREE + 1 <= checked <= account_design(seconds), (checked, seconds)
    assert failed_sign_ins(member) == checked, statuses  # each check that failed wrote its audit line
    assert Attempt(server.url, member.email, PASSWORD, new_address(), cookies=own).send() == 302


def test_a_burst_from_one_address_gets_its_budget_of_checks(server):
    """40 wrong passwords at 40 different emails (unknown ones: each checked against the dummy
    hash at the same cost) from one address: exactly its budget is checked."""
    ip = new_address()
    statuses, _ = burst([Attempt(server.url, f"nobody-{i}-{ip}@example.test", "guess!!!!", ip) for i in range(N)])
    assert statuses.count(401) == IP_LIMIT and statuses.count(429) == N - IP_LIMIT


def test_a_known_browser_guessing_at_once_gets_its_own_budget_then_the_accounts(server, member):
    """40 wrong passwords at once from one known browser's cookie: its own budget of checks, then
    it counts as unknown, with the account's free failures and the one that starts the wait."""
    own = known_browser(server.url, member, new_address())
    statuses, seconds = burst(
        [Attempt(server.url, member.email, f"guess {i}!!!", new_address(), cookies=own) for i in range(N)]
    )
    checked = statuses.count(401)
    assert set(statuses) <= {401, 429}
    assert DEVICE_LIMIT + FREE + 1 <= checked <= DEVICE_LIMIT + account_design(seconds), (checked, seconds)
    assert failed_sign_ins(member) == checked, statuses
