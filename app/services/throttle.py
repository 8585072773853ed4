"""Throttling password guessing and token-endpoint floods.

- Sign-in (a lockout an attacker cannot trigger):
  - a correct password from a browser that signed in to that account before (a device cookie,
    app/services/devices.py) is never refused: neither the account's delay nor the IP limit applies;
    that browser's own failures have a small budget (LOGIN_DEVICE_LIMIT), after which it counts
    as unknown;
  - from unknown browsers, failures are counted per account (the email typed, known or not, so the
    answer does not reveal which emails exist): the first LOGIN_ACCOUNT_FREE_FAILURES are free,
    then each failure makes the next attempt wait 1, 2, 4 ... seconds, at most
    LOGIN_ACCOUNT_MAX_DELAY (a progressive delay, never a hard lock). Attempts during the wait are
    refused before the password is checked (429, "try again in N seconds", the same for every
    email);
  - per client IP, only failures count (LOGIN_IP_LIMIT), high enough for a shared proxy address;
  - each attempt takes its place in these counts before its password is checked, and gives it back
    when the password is right: concurrent attempts get no more checks than the same attempts one
    after another would (a count read before argon2 runs and written after would let a burst through).
- Token endpoint: every request is counted per client id and client IP (the id alone is public:
  anyone could spend an app's budget).

Counters live in Redis when REDIS_URL is set (shared by every process), in memory otherwise; if
Redis is down, sign-in counts in this process's memory rather than failing. The client IP is
`request.remote_addr`, which ProxyFix sets from X-Forwarded-For only for the configured number of
trusted proxies (app/core/security.py): a client cannot pick its own IP.
"""

from __future__ import annotations

import functools
import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeGuard

from flask import Flask, current_app, request
from limits import RateLimitItem, parse
from limits.storage import RedisClusterStorage, RedisStorage
from werkzeug.wrappers import Request

from app.core.adapters import SweptMemoryStorage, skip_global_limit_check
from app.core.extensions import limiter
from app.models import User
from app.models.base import sha256_hex

FAILED_LOGIN_STATUS = 401
log = logging.getLogger(__name__)


def client_ip(req: Request | None = None) -> str:
    """The address a request (this one by default) came from, as ProxyFix settled it."""
    return (req or request).remote_addr or "unknown"


@dataclass(frozen=True)
class Spent:
    """One request counted against a budget, and where the budget's window stands."""

    allowed: bool
    remaining: int
    reset: int  # whole seconds until the window refills (at least 1)


def spend(item: RateLimitItem, scope: str, key: str, cost: int = 1) -> Spent | None:
    """Count one request (`cost` of them) against `key`'s budget in Flask-Limiter's storage (Redis when set).
    None when the counter store is down: the request is served uncounted (fail open, logged)
    rather than every caller being refused. Used where a decorator does not fit or costs too
    much: the token endpoint and the /v1 budget. On Redis one round trip (`spend_in_turn`'s
    script), where limits' own calls take three (INCRBY, GET, TTL)."""
    if _redis_scriptable(limiter.storage):
        spent = _spend_by_script(limiter.storage, [Budget(item, scope, key, cost)])
        return spent[0] if spent is not None else None
    try:
        allowed = limiter.limiter.hit(item, scope, key, cost=cost)
        reset_at, remaining = limiter.limiter.get_window_stats(item, scope, key)
    except Exception as exc:
        log.warning("rate-limit storage unavailable, %s request not counted: %s", scope, type(exc).__name__)
        return None
    return Spent(allowed, max(0, remaining), max(1, min(item.get_expiry(), math.ceil(reset_at - time.time()))))


class Budget(NamedTuple):
    """A limit, its scope, whose budget it is, and how many requests this one counts (as `spend`'s)."""

    item: RateLimitItem
    scope: str
    key: str
    cost: int = 1


# Each budget in turn: take its cost (limits' fixed window: INCRBY, EXPIRE on the first), read its
# TTL; stop after the first one spent. ARGV holds (expiry, amount, cost) per budget. Returns count,
# TTL for each budget counted.
_SPEND_IN_TURN = b"""
local out = {}
for i, key in ipairs(KEYS) do
  local cost = tonumber(ARGV[3 * i])
  local current = redis.call("incrby", key, cost)
  if current == cost then
    redis.call("expire", key, ARGV[3 * i - 2])
  end
  out[#out + 1] = current
  out[#out + 1] = redis.call("ttl", key)
  if current > tonumber(ARGV[3 * i - 1]) then
    break
  end
end
return out
"""
_SCRIPT = "_credits_id_spend_in_turn"  # where a Redis storage keeps the script, registered once


def spend_in_turn(budgets: Sequence[Budget | tuple[RateLimitItem, str, str]]) -> list[Spent] | None:
    """Count a request (each budget's `cost` of them) against each of `budgets` in turn, stopping at the first that refuses it
    (its Spent, last of the list, is not allowed): a per-second burst, then the minute, then the
    day. The counts are limits' own (the same counters, fixed windows, as `spend` reads and the
    limiter's decorators), taken in one round trip on Redis (one script, so a budget's count and
    its window are read together) and budget by budget on the in-memory store. None when the
    counter store is down (served uncounted, logged, as `spend`)."""
    storage = limiter.storage
    each = [Budget(*budget) for budget in budgets]
    if _redis_scriptable(storage):
        return _spend_by_script(storage, each)
    spent: list[Spent] = []
    for item, scope, key, cost in each:
        one = spend(item, scope, key, cost)
        if one is None:
            return None
        spent.append(one)
        if not one.allowed:
            break
    return spent


def _spend_by_script(storage: RedisStorage, budgets: Sequence[Budget]) -> list[Spent] | None:
    """`spend_in_turn` on Redis: one script, one round trip."""
    try:
        script = getattr(storage, _SCRIPT, None)
        if script is None:
            script = storage.get_connection().register_script(_SPEND_IN_TURN)
            setattr(storage, _SCRIPT, script)
        keys = [storage.prefixed_key(b.item.key_for(b.scope, b.key)) for b in budgets]
        limits = [str(n) for b in budgets for n in (b.item.get_expiry(), b.item.amount, b.cost)]
        answer = [int(n) for n in script(keys, limits)]
    except Exception as exc:
        log.warning("rate-limit storage unavailable, %s request not counted: %s", budgets[0].scope, type(exc).__name__)
        return None
    return [
        Spent(current <= b.item.amount, max(0, b.item.amount - current), max(1, min(b.item.get_expiry(), ttl)))
        for b, current, ttl in zip(budgets, answer[0::2], answer[1::2], strict=False)
    ]


def _redis_scriptable(storage: Any) -> TypeGuard[RedisStorage]:
    """A single Redis (or one behind Sentinel): one script may touch all of a request's counters
    (a cluster would spread them over nodes)."""
    return isinstance(storage, RedisStorage) and not isinstance(storage, RedisClusterStorage)


@functools.lru_cache(maxsize=8)
def parsed_limit(limit: str) -> RateLimitItem:
    """A limit setting ("5 per minute") parsed once per value: every counted request reads one."""
    return parse(limit)


# -- sign-in: progressive delay per account, failures per IP, known browsers exempt ---------------

FAILURE_MEMORY = 24 * 3600  # seconds an account's failures from unknown browsers are remembered
RETRY_STORE_AFTER = 30  # seconds sign-in counts in memory after the counter store failed
_fallback = SweptMemoryStorage()  # where sign-in counts while Redis is unreachable
_store_failed_at = 0.0


def _store(op: str, *args: Any) -> Any:
    """One operation on the counter store (Flask-Limiter's: Redis when configured), falling back
    to this process's memory when it fails: sign-in keeps working and keeps counting. After a
    failure the store is left alone for RETRY_STORE_AFTER seconds, so an unreachable Redis costs
    one timeout, not one per counter of every sign-in."""
    global _store_failed_at  # noqa: PLW0603 - one timestamp for the process, read on every count
    if time.monotonic() - _store_failed_at >= RETRY_STORE_AFTER:
        try:
            return getattr(limiter.storage, op)(*args)
        except Exception as exc:
            _store_failed_at = time.monotonic()
            log.warning(
                "rate-limit storage unavailable, sign-in counted in memory for %d s: %s",
                RETRY_STORE_AFTER,
                type(exc).__name__,
            )
    return getattr(_fallback, op)(*args)


def reset_fallback() -> None:
    """Forget the in-memory counts and try the store again at once (tests; a store back up)."""
    global _store_failed_at  # noqa: PLW0603
    _store_failed_at = 0.0
    _fallback.reset()


def _key(kind: str, value: str) -> str:
    return f"{current_app.config['RATELIMIT_KEY_PREFIX']}/signin/{kind}:{value}"


def account_key(email: str) -> str:
    """The account being guessed at, as typed (hashed: no email addresses in counter keys)."""
    return sha256_hex(User.normalize_email((email or "")[:254]))


def _seconds_left(key: str) -> int:
    return max(1, math.ceil(_store("get_expiry", key) - time.time()))


def account_delay(failures: int) -> int:
    """Seconds an account's next attempt from an unknown browser waits after its `failures`-th
    failure: none for the free ones, then 1, 2, 4 ... up to LOGIN_ACCOUNT_MAX_DELAY."""
    config = current_app.config
    excess = failures - int(config["LOGIN_ACCOUNT_FREE_FAILURES"])
    return min(2 ** min(excess - 1, 30), int(config["LOGIN_ACCOUNT_MAX_DELAY"])) if excess > 0 else 0


class Attempt:
    """One password attempt at an account: who it is for, from which known browser (if any).

    `wait()` admits the attempt or says how long it must wait, and an admitted attempt has already
    taken its place in every budget it needs: a count is one atomic increment in the store (Redis's
    INCRBY, or the in-memory count under its lock), and a place is the number that increment
    returned. So concurrent attempts are admitted exactly as if they came one after another, never
    all on the strength of one read made before any of them failed. The place counts as a failure
    until `succeeded()` gives it back; `failed()` leaves it taken. Every caller ends an admitted
    attempt with one or the other.
    """

    def __init__(self, account: str, device: str | None = None) -> None:
        self.account = account  # account_key() of the email typed
        self.device = device  # the device id of a known browser for that account
        self.trusted = False  # admitted as that known browser, within its own failure budget
        self._taken: list[tuple[str, int]] = []  # (counter, its expiry) this attempt holds a place in

    def wait(self) -> int:
        """Seconds this attempt must wait before a password is even checked (0: go ahead, and its
        places are taken). The same work for known and unknown emails: no password is checked
        either way. A known browser within its own budget is admitted whatever the account's delay
        or the IP's budget; past its budget it is an unknown browser."""
        config = current_app.config
        if self.device is not None and self._take(_key("device", self.device), config["LOGIN_DEVICE_LIMIT"]):
            self.trusted = True
            return 0
        ip = _key("ip", client_ip())
        if not self._take(ip, config["LOGIN_IP_LIMIT"]):
            return max(_seconds_left(ip), self._account_wait())
        # The account's failures, this attempt counted among them. Past the free ones the attempt
        # must find the account's wait over, and starts the next wait itself (as if it failed:
        # `succeeded` ends it). The wait is a counter that expires when the wait does: of the
        # attempts that find it gone, only the one whose increment answers 1 is admitted.
        delay = account_delay(self._count(_key("failures", self.account), FAILURE_MEMORY))
        if delay and _store("incr", _key("wait", self.account), delay) != 1:
            self._give_back()
            return max(1, self._account_wait())  # at least 1: the wait may have just run out
        return 0

    def failed(self) -> None:
        """A wrong password (or code): the places this attempt took stay taken, as its failure."""
        self._taken = []

    def succeeded(self) -> None:
        """A right password (or code): the places this attempt took are given back (only failures
        count). From an unknown browser the failures were the member's own typing, so the account's
        delay starts over. (From a known browser nothing is reset: an attacker's guesses keep
        counting while the member signs in.)"""
        failures = _key("failures", self.account)
        if not self.trusted:  # the count starts over: this attempt's place goes with it
            self._taken = [taken for taken in self._taken if taken[0] != failures]
        self._give_back()
        if not self.trusted:
            _store("clear", failures)
            _store("clear", _key("wait", self.account))

    def _take(self, key: str, limit: str) -> bool:
        """A place in a fixed-window budget ("10 per 15 minutes"), or False (nothing taken) when
        it is spent."""
        item = parsed_limit(limit)
        if self._count(key, item.get_expiry()) <= item.amount:
            return True
        self._give_back(key)
        return False

    def _count(self, key: str, expiry: int) -> int:
        """Take the next place in `key`'s count: its number."""
        self._taken.append((key, expiry))
        place: int = _store("incr", key, expiry)
        return place

    def _give_back(self, key: str | None = None) -> None:
        """Give back the place taken in `key`'s count (every place taken, without `key`)."""
        for taken in [t for t in self._taken if key is None or t[0] == key]:
            _store("incr", taken[0], taken[1], -1)
            self._taken.remove(taken)

    def _account_wait(self) -> int:
        key = _key("wait", self.account)
        return _seconds_left(key) if _store("get", key) else 0


def init_throttle(app: Flask) -> None:
    limiter.init_app(app)
    skip_global_limit_check(app, limiter)
