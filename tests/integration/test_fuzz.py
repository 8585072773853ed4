"""Bad input, measured: a property-based fuzz test (Hypothesis) sending well over 10,000 malformed
requests across every endpoint a browser or an app can reach - wrong methods, missing and
duplicated parameters, huge values, invalid percent-encoding and UTF-8, JSON where a form is
expected, tampered cookies, CSRF tokens and Authorization headers - through Flask's test client.

Every response must satisfy three properties:
1. no 5xx;
2. no redirect anywhere but our own pages or a URI registered for the client named;
3. a rejected request (4xx, or an error redirect) changed no row: no committed INSERT, or
   UPDATE/DELETE that touched a row.

The figure (requests sent, statuses seen per endpoint) is printed at the end. To cover a new
endpoint, add a Target to TARGETS. By default a quick run of DEFAULT_EXAMPLES requests (every
endpoint still reached); FUZZ_EXAMPLES=10200 is the full size, which CI runs (.ci/run) and which
must send at least 10,000. FUZZ_SEED picks another deterministic run (default: derandomized, so
CI is reproducible).
"""

from __future__ import annotations

import base64
import os
import secrets
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from urllib.parse import quote, urlencode, urlsplit

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from itsdangerous import URLSafeTimedSerializer
from sqlalchemy import event
from sqlalchemy.engine import Engine
from werkzeug.exceptions import HTTPException

from app.core.extensions import db, limiter
from app.models import Interaction, LoginSession
from app.models.base import sha256_hex, utcnow
from tests.api_support import make_catalog
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import pkce_pair
from tests.issued import mint_id_token, separate_app
from tests.key_support import make_developer, make_key

DEFAULT_EXAMPLES = 1500
FULL_EXAMPLES = 10_200
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", DEFAULT_EXAMPLES))
MINIMUM_REQUESTS = 10_000 if EXAMPLES >= FULL_EXAMPLES else min(EXAMPLES, DEFAULT_EXAMPLES)
ISSUER_LIKE = "http://localhost"  # the test client's host
WEB_URI = "http://127.0.0.1:7199/cb"
NATIVE_URI = "com.example.fuzz:/callback"
LOGOUT_URI = "http://127.0.0.1:7199/logged-out"
METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS")
OWN_INTERACTION = "@own-interaction"  # replaced by the interaction of the session the request carries


@dataclass(frozen=True)
class Target:
    name: str
    path: str
    methods: tuple[str, ...]
    params: tuple[str, ...]
    form_csrf: bool = False  # a same-site form: CSRF token and session cookie matter
    api_key: bool = False  # the data API's key door: an `x-api-key` header, and the meter


OAUTH_AUTHORIZE = (
    "response_type",
    "client_id",
    "redirect_uri",
    "scope",
    "state",
    "nonce",
    "code_challenge",
    "code_challenge_method",
    "prompt",
    "max_age",
    "id_token_hint",
    "login_hint",
    "display",
    "ui_locales",
    "claims_locales",
    "acr_values",
    "response_mode",
    "request",
    "request_uri",
)
TOKEN_PARAMS = (
    "grant_type",
    "code",
    "redirect_uri",
    "code_verifier",
    "refresh_token",
    "client_id",
    "client_secret",
    "scope",
)
TOKEN_QUERY = ("token", "token_type_hint", "client_id", "client_secret")
LOGOUT_PARAMS = ("id_token_hint", "client_id", "post_logout_redirect_uri", "state", "ui_locales", "logout_hint")

TARGETS: tuple[Target, ...] = (
    # Methods: the first listed is drawn most often (Hypothesis favours the first choice).
    Target("authorize", "/api/auth/oauth2/authorize", ("GET", "POST"), OAUTH_AUTHORIZE),
    Target("token", "/api/auth/oauth2/token", ("POST",), TOKEN_PARAMS),
    Target("userinfo", "/api/auth/oauth2/userinfo", ("GET", "POST"), ("access_token",)),
    Target("revoke", "/api/auth/oauth2/revoke", ("POST",), TOKEN_QUERY),
    Target("introspect", "/api/auth/oauth2/introspect", ("POST",), TOKEN_QUERY),
    Target("endsession", "/api/auth/oauth2/endsession", ("GET", "POST"), LOGOUT_PARAMS),
    Target("endsession-confirm", "/api/auth/oauth2/endsession/confirm", ("POST",), LOGOUT_PARAMS, form_csrf=True),
    Target("login", "/login", ("POST", "GET"), ("email", "password", "interaction", "next"), form_csrf=True),
    Target("consent", "/consent", ("POST", "GET"), ("interaction", "decision", "scope"), form_csrf=True),
    Target("logout", "/logout", ("POST",), (), form_csrf=True),
    Target("account-password", "/account/password", ("POST", "GET"), ("current", "new", "confirm"), form_csrf=True),
    Target("discovery", "/.well-known/openid-configuration", ("GET",), ()),
    Target("jwks", "/api/auth/jwks", ("GET",), ()),
    Target("v1-search", "/v1/search", ("POST",), ("keyword", "type"), api_key=True),
    Target("v1-autocomplete", "/v1/search/autocomplete", ("GET",), ("q",), api_key=True),
    Target("v1-credits", "/v1/profile/{segment}/credits", ("GET",), ("limit", "offset", "cursor"), api_key=True),
    Target("v1-track", "/v1/track/{segment}/{segment}/albums", ("GET",), ("limit", "offset"), api_key=True),
    Target(
        "v1-profiles-search", "/v1/profiles/search", ("GET",), ("names", "track_ids", "spotify_track_ids"), api_key=True
    ),
    Target("embed-credits", "/embed/v1/profile/{segment}/credits", ("GET",), ("limit", "offset"), api_key=True),
    Target("account-session", "/account/sessions/{number}/sign-out", ("POST",), (), form_csrf=True),
)
API_PREFIXES = ("/v1/", "/embed/v1/")

NASTY = [
    "",
    " ",
    "%",
    "%zz",
    "%ff%fe",
    "\x00",
    "\u0000\u202e",
    "null",
    "[]",
    "{}",
    "../../etc/passwd",
    "'\"<>",
    "javascript:alert(1)",
    "https://evil.example/cb",
    "//evil.example",
    "/\\evil.example",
    "\ud7ff\ue000",
    "é" * 3,
    "\u2028",
    "a" * 4097,
    "1e309",
    "-1",
    "0",
    "99999999999999999999",
    "9223372036854775808",
    "\ud800",
    "a\udfffb",
    "openid " * 50,
]
# Path numbers: some a route can hold, some past 64 bits or in other scripts' digits.
NUMBERS = st.sampled_from(["1", "0", "9223372036854775807", "9223372036854775808", "9" * 30, "-1", "١٢", "1e3"])


# -- the world the fuzzer plays in ----------------------------------------------------------


@dataclass
class World:
    app: object
    values: dict[str, list[str]]
    registered: dict[str, set[str]]  # client_id -> URIs it may be sent back to
    sessions: list[tuple[str, str]]  # (session cookie, valid CSRF token)
    stats: Counter = field(default_factory=Counter)
    per_target: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    writes: list = field(default_factory=list)
    pending: list = field(default_factory=list)
    recording: bool = False
    bases: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    interactions: list[str] = field(default_factory=list)  # interactions[i] belongs to sessions[i]
    valid_basic: str = ""
    api_keys: list[str] = field(default_factory=list)
    session_indexes: st.SearchStrategy[int] = field(default_factory=lambda: st.just(0))


def seed_token(member, client) -> tuple[str, str]:
    """A live token pair with known values, for the endpoints that take one."""
    from app.models import Token

    access, refresh, now = secrets.token_urlsafe(32), secrets.token_urlsafe(32), utcnow()
    db.session.add(
        Token(
            client_id=client.id,
            user_id=member.id,
            grant_id="fuzz-grant",
            scope="openid profile",
            access_token_hash=sha256_hex(access),
            refresh_token_hash=sha256_hex(refresh),
            issued_at=now,
            access_expires_at=now + timedelta(hours=1),
            refresh_expires_at=now + timedelta(days=1),
            auth_time=now,
        )
    )
    db.session.commit()
    return access, refresh


def _session_cookie(app, data: dict) -> str:
    return app.session_interface.get_signing_serializer(app).dumps(data)


def build_world(settings) -> World:
    app = separate_app(settings)
    limiter.init_app(app)
    limiter.reset()
    member = make_member(tier="pro")
    web, web_secret = make_client(redirect_uris=[WEB_URI, WEB_URI + "2"], post_logout_redirect_uris=[LOGOUT_URI])
    native, _ = make_client(public=True, redirect_uris=[NATIVE_URI])
    catalog = make_catalog(credits=3)
    # Keys on a fast plan, several: the fuzzer is about input, and a spent budget would answer 429 early.
    developer = make_developer()
    api_keys = [make_key(plan="scale", owner=developer)[1] for _ in range(8)]
    verifier, challenge = pkce_pair()
    hint = mint_id_token(
        {"iss": settings["ISSUER_URL"], "sub": member.sub, "aud": web.client_id, "iat": 1, "exp": 2, "auth_time": 1}
    )
    csrf = URLSafeTimedSerializer(app.secret_key, salt="wtf-csrf-token")
    sessions, interactions = [], []
    now = utcnow()
    params = {
        "response_type": "code",
        "client_id": web.client_id,
        "redirect_uri": WEB_URI,
        "state": "st",
        "scope": "openid profile email offline_access",
        "nonce": "n",
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    for _ in range(40):
        sid, bid, raw = secrets.token_urlsafe(32), secrets.token_urlsafe(16), secrets.token_hex(20)
        login = LoginSession(
            session_hash=sha256_hex(sid), user_id=member.id, auth_time=now, expires_at=now + timedelta(days=1)
        )
        db.session.add(login)
        uid = secrets.token_urlsafe(24)
        db.session.add(
            Interaction(
                id=uid,
                client_id=web.id,
                params=params,
                browser_hash=sha256_hex(bid),
                expires_at=now + timedelta(hours=1),
            )
        )
        interactions.append(uid)
        cookie = _session_cookie(app, {"sid": sid, "bid": bid, "csrf_token": raw, "_permanent": True})
        sessions.append((cookie, csrf.dumps(raw)))
    db.session.commit()
    values = {
        "client_id": [web.client_id, native.client_id, "unknown-client", web.client_id.upper()],
        "client_secret": [web_secret, web_secret[:-1], "secret"],
        "redirect_uri": [
            WEB_URI,
            WEB_URI + "2",
            NATIVE_URI,
            WEB_URI + "/",
            WEB_URI + "?x=1",
            WEB_URI + "#f",
            "https://evil.example/cb",
            WEB_URI.upper(),
            LOGOUT_URI,
        ],
        "post_logout_redirect_uri": [LOGOUT_URI, LOGOUT_URI + "/", WEB_URI, "https://evil.example/"],
        "response_type": ["code", "token", "id_token", "code id_token", "none", "CODE"],
        "scope": ["openid", "openid profile email offline_access credits:read analytics:read", "profile", "openid x"],
        "prompt": ["none", "login", "consent", "select_account", "none login", "bogus"],
        "code_challenge": [challenge, challenge[:-1], "short"],
        "code_challenge_method": ["S256", "plain", "s256"],
        "code_verifier": [verifier, verifier + "x", "v" * 129],
        "max_age": ["0", "60", "-1", "1.5", "9" * 20],
        "grant_type": ["authorization_code", "refresh_token", "client_credentials", "password", "implicit"],
        "id_token_hint": [hint, hint[:-3] + "abc", "a.b.c", "e30.e30.", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."],
        "email": [member.email, member.email.upper(), "nobody@example.test", "not-an-email"],
        "password": [PASSWORD, "wrong-password-123"],
        "interaction": [OWN_INTERACTION, OWN_INTERACTION, *interactions[:5], "unknown-interaction"],
        "decision": ["allow", "deny", "maybe"],
        "token_type_hint": ["access_token", "refresh_token", "id_token"],
        "response_mode": ["query", "fragment", "form_post"],
        "next": [
            "/signed-in",
            "//evil.example",
            "https://evil.example",
            "/\\evil.example",
            "/%2f%2fevil.example",
            "/\t/evil.example",
        ],
        # Never the member's real password: a change would end the sessions the fuzzer plays with.
        "current": ["wrong-password-123", ""],
        "new": ["a brand new passphrase", "short", ""],
        "confirm": ["a brand new passphrase", "another passphrase"],
        "segment": [catalog.mine, catalog.other, "id", "isrc", "spotify", catalog.mine.upper()],
        "keyword": ["a", "Ada", "love"],
        "type": ["track", "profile"],
        "q": ["a", "Ad"],
        "limit": ["1", "50", "51", "0"],
        "offset": ["0", "2", "1000"],
        "names": ["Ada", "a,b"],
        "track_ids": [catalog.newest_first[0][0]],
    }
    registered = {web.client_id: {WEB_URI, WEB_URI + "2", LOGOUT_URI}, native.client_id: {NATIVE_URI}}
    access, refresh = seed_token(member, web)
    values["token"] = [access, refresh, "unknown-token"]
    values["access_token"] = [access, "unknown-token"]
    values["refresh_token"] = ["unknown-refresh-token"]  # never a live one: reuse would revoke by design
    bases = {
        "authorize": list(params.items()),
        "token": [
            ("grant_type", "authorization_code"),
            ("code", "unknown-code"),
            ("redirect_uri", WEB_URI),
            ("code_verifier", verifier),
        ],
        "userinfo": [("access_token", access)],
        "revoke": [("token", "unknown-token"), ("token_type_hint", "access_token")],
        "introspect": [("token", access), ("token_type_hint", "refresh_token")],
        "endsession": [("id_token_hint", hint), ("post_logout_redirect_uri", LOGOUT_URI), ("state", "s")],
        "endsession-confirm": [("client_id", web.client_id), ("post_logout_redirect_uri", LOGOUT_URI)],
        "login": [("email", member.email), ("password", "wrong-password-123"), ("interaction", OWN_INTERACTION)],
        "consent": [("interaction", OWN_INTERACTION), ("decision", "allow"), ("scope", "profile")],
        "v1-search": [("keyword", "love"), ("type", "track")],
        "v1-credits": [("limit", "2"), ("offset", "1")],
        "account-password": [
            ("current", "wrong-password-123"),
            ("new", "a brand new passphrase"),
            ("confirm", "a brand new passphrase"),
        ],
    }
    return World(
        app=app,
        values=values,
        registered=registered,
        sessions=sessions,
        bases=bases,
        interactions=interactions,
        valid_basic="Basic " + base64.b64encode(f"{web.client_id}:{web_secret}".encode()).decode(),
        api_keys=api_keys,
        session_indexes=st.integers(min_value=0, max_value=len(sessions) - 1),
    )


# -- strategies (built once: building strategies per example would dominate the run time) ---------

text = st.text(max_size=40)
huge = st.integers(min_value=5_000, max_value=60_000).map(lambda n: "A" * n)
nasty = st.sampled_from(NASTY)
AUTH_KINDS = st.sampled_from(["valid", "none", "basic", "none", "basic-bad", "basic-utf8", "bearer", "garbage"])
BAD_BASIC = st.sampled_from(["%%%", "Og==", "YTpi:c", "", "=" * 9])
BEARERS = st.sampled_from(["", "x", "a b", "A" * 600])
GARBAGE_AUTH = st.sampled_from(["Digest x", "Bearer", "Basic", "\t", "Negotiate ="])
COOKIES = st.sampled_from(["session", "none", "session", "tampered", "none", "garbage"])
FORWARDED = st.one_of(st.none(), st.sampled_from(["6.6.6.6", "1.1.1.1, 2.2.2.2", "garbage", ""]))
ENCODINGS = st.sampled_from(["form", "query", "form", "json", "form", "raw", "percent"])
RAW = st.binary(max_size=200)
ONE_IN_TWO = st.sampled_from([True, False])
CLIENT_IPS = st.integers(min_value=1, max_value=250).map(lambda n: f"198.51.100.{n}")
MUTATE = st.sampled_from([True, True, False])
MUTATIONS = st.integers(min_value=0, max_value=3)
MUTATION_KINDS = st.sampled_from(["replace", "replace", "drop", "repeat", "add"])


def value_strategies(world: World) -> dict[str, st.SearchStrategy[str]]:
    names = {name for target in TARGETS for name in target.params} | {"unexpected", "interaction", "token", "segment"}
    strategies = {}
    for name in sorted(names):
        known = world.values.get(name, [])
        choices = [nasty, text, huge]
        if known:
            choices = [st.sampled_from(known)] * 3 + choices
        strategies[name] = st.one_of(*choices)
    csrf_values = ["", "garbage", world.sessions[0][1][:-2] + "xx"]
    strategies["csrf_token"] = st.sampled_from(csrf_values)
    return strategies


def target_strategies() -> dict[str, tuple]:
    plans = {}
    for target in TARGETS:
        names = list(target.params) + ["csrf_token"] * target.form_csrf + ["unexpected"]
        # Mostly a method the endpoint takes (alternating), sometimes any method.
        methods = st.integers(min_value=0, max_value=11).flatmap(
            lambda i, own=target.methods: st.just(own[i % len(own)]) if i < 10 else st.sampled_from(METHODS)
        )
        plans[target.name] = (
            methods,
            st.lists(st.sampled_from(names), max_size=len(names) + 3),
            st.sampled_from(names),
        )
    return plans


@st.composite
def fuzz_request(draw, world: World, values: dict, plans: dict) -> dict:
    target = draw(st.sampled_from(TARGETS))
    methods, names, one_name = plans[target.name]
    method = draw(methods)
    base = world.bases.get(target.name)
    if base and draw(MUTATE):
        # Depth: a valid request with a few mutations (a value replaced, a parameter dropped or repeated).
        pairs = list(base)
        for _ in range(draw(MUTATIONS)):
            kind, i = draw(MUTATION_KINDS), draw(st.integers(min_value=0, max_value=max(len(pairs) - 1, 0)))
            name = pairs[i][0] if pairs else draw(one_name)
            if kind == "replace" and pairs:
                pairs[i] = (name, draw(values.get(name, text)))
            elif kind == "drop" and pairs:
                pairs.pop(i)
            elif kind == "repeat":
                pairs.append((name, draw(values.get(name, text))))
            else:
                extra = draw(one_name)
                pairs.append((extra, draw(values[extra])))
    else:
        pairs = [(name, draw(values[name])) for name in draw(names)]  # names may repeat: duplicated parameters
    path = target.path.format(
        interaction=quote(draw(values["interaction"]), safe="", errors="surrogatepass")[:300],
        segment=quote(draw(values["segment"]), safe="", errors="surrogatepass")[:300],
        number=quote(draw(NUMBERS), safe=""),
    )
    headers: dict[str, str] = {}
    if target.api_key:
        headers["x-api-key"] = draw(st.sampled_from([*world.api_keys, "msk_unknown", ""]))
    auth = draw(AUTH_KINDS)
    if auth == "valid" and target.name in ("token", "revoke", "introspect"):
        headers["Authorization"] = world.valid_basic
    elif auth == "valid" and target.name == "userinfo":
        headers["Authorization"] = "Bearer " + world.values["access_token"][0]
    elif auth == "basic":
        user, password = draw(values["client_id"]), draw(values["client_secret"])
        headers["Authorization"] = "Basic " + base64.b64encode(f"{user}:{password}".encode(errors=SURROGATES)).decode()
    elif auth == "basic-bad":
        headers["Authorization"] = "Basic " + draw(BAD_BASIC)
    elif auth == "basic-utf8":
        headers["Authorization"] = "Basic " + base64.b64encode(b"\xff\xfe:\xc3\x28").decode()
    elif auth == "bearer":
        headers["Authorization"] = "Bearer " + draw(BEARERS)
    elif auth == "garbage":
        headers["Authorization"] = draw(GARBAGE_AUTH)
    forwarded = draw(FORWARDED)
    if forwarded is not None:
        headers["X-Forwarded-For"] = forwarded
    cookie = draw(COOKIES)
    return {
        "target": target,
        "method": method,
        "path": path,
        "pairs": pairs,
        "encoding": draw(ENCODINGS),
        "headers": headers,
        "cookie": cookie,
        "session": draw(world.session_indexes),
        "valid_csrf": target.form_csrf and cookie == "session" and draw(ONE_IN_TWO),
        "raw": draw(RAW),
        "ip": draw(CLIENT_IPS),
    }


# -- sending and checking -----------------------------------------------------------------------


SURROGATES = "surrogatepass"  # a lone surrogate reaches the wire as its (invalid UTF-8) bytes


def send(world: World, case: dict):
    client = world.app.test_client()
    cookie_value, csrf_value = world.sessions[case["session"]]
    if case["cookie"] == "session":
        client.set_cookie("credits_id_session", cookie_value)
    elif case["cookie"] == "tampered":
        client.set_cookie(
            "credits_id_session", cookie_value[:-3] + ("abc" if not cookie_value.endswith("abc") else "xyz")
        )
    elif case["cookie"] == "garbage":
        client.set_cookie("credits_id_session", "not.a.session")
    own = world.interactions[case["session"]]
    pairs = [(name, own if value == OWN_INTERACTION else value) for name, value in case["pairs"]]
    path = case["path"].replace(quote(OWN_INTERACTION, safe=""), own)
    if case["valid_csrf"]:
        pairs.append(("csrf_token", csrf_value))
    kwargs: dict = {"method": case["method"], "headers": case["headers"], "environ_base": {"REMOTE_ADDR": case["ip"]}}
    encoding = case["encoding"]
    if encoding == "query" or case["method"] in ("GET", "HEAD"):
        kwargs["query_string"] = urlencode(pairs, errors=SURROGATES)
    elif encoding == "form":
        kwargs["data"] = urlencode(pairs, errors=SURROGATES)
        kwargs["content_type"] = "application/x-www-form-urlencoded"
    elif encoding == "json":
        kwargs["json"] = dict(pairs)
    elif encoding == "raw":
        kwargs["data"] = case["raw"] + b"&" + urlencode(pairs, errors=SURROGATES).encode() + b"&\xff\xfe=%ff%zz"
        kwargs["content_type"] = "application/x-www-form-urlencoded"
    else:  # percent: broken escapes and invalid UTF-8 in the query string
        kwargs["query_string"] = (
            urlencode(pairs, errors=SURROGATES) + "&client_id=%ff%fe&redirect_uri=%zz&scope=%c3%28&%"
        )
    return client.open(path, **kwargs)


def redirect_problem(world: World, case: dict, location: str) -> str | None:
    if location.startswith("/"):
        if location.startswith(("//", "/\\")):
            return "protocol-relative redirect"
        return None
    if location.startswith(ISSUER_LIKE + "/"):
        return None
    base = location.split("?", 1)[0]
    named = [v for k, v in case["pairs"] if k == "client_id"]
    allowed = set().union(*world.registered.values())
    if len(named) == 1 and named[0] in world.registered:
        allowed = world.registered[named[0]]
    if base not in allowed:
        return f"redirect to unregistered {base!r}"
    return None


def is_rejected(world: World, response, case: dict) -> bool:
    path = case["path"]
    if path.startswith(API_PREFIXES) and response.status_code == 404:
        # A lookup that matched nothing is an answered call, metered like data (docs/catalog-api.md).
        if case["method"] == "HEAD":
            # HEAD has no body to tell a lookup miss from an unknown path: a route that matched is a miss.
            return not route_matches(world, path)
        return (response.get_json(silent=True) or {}).get("result") != "error"
    if response.status_code >= 400:
        return True
    location = response.headers.get("Location", "")
    query = urlsplit(location).query
    # The member's own "Deny" is an answer, not a rejected request (it consumes the interaction).
    return "error=" in query and "error=access_denied" not in query


def route_matches(world: World, path: str) -> bool:
    try:
        world.app.url_map.bind("localhost").match(path, method="GET")
    except HTTPException:
        return False
    return True


def check(world: World, case: dict) -> None:
    world.writes.clear()
    world.pending.clear()
    world.recording = True
    try:
        response = send(world, case)
    finally:
        world.recording = False
    target = case["target"].name
    world.stats[response.status_code] += 1
    world.per_target[target][response.status_code] += 1
    assert response.status_code < 500, f"{target}: {response.status_code} for {case!r}"
    if 300 <= response.status_code < 400:
        problem = redirect_problem(world, case, response.headers.get("Location", ""))
        assert problem is None, f"{target}: {problem} for {case!r}"
    if is_rejected(world, response, case):
        assert not world.writes, f"{target}: rejected ({response.status_code}) but wrote {world.writes} for {case!r}"


@pytest.fixture
def world(settings):
    world = build_world(settings)

    def after_execute(conn, cursor, statement, parameters, context, executemany):
        if not world.recording:
            return
        verb = statement.lstrip().split(" ", 1)[0].upper()
        if verb == "INSERT" and "INTO audit_events" in statement:
            return  # the audit trail records rejected sign-ins on purpose (issue 4): not a state change
        if verb == "INSERT" or (verb in ("UPDATE", "DELETE") and cursor.rowcount > 0):
            world.pending.append(statement.split("\n")[0][:80])

    def on_commit(conn):
        if world.recording:
            world.writes.extend(world.pending)
            world.pending.clear()

    def on_rollback(conn):
        if world.recording:
            world.pending.clear()

    event.listen(Engine, "after_cursor_execute", after_execute)
    event.listen(Engine, "commit", on_commit)
    event.listen(Engine, "rollback", on_rollback)
    yield world
    event.remove(Engine, "after_cursor_execute", after_execute)
    event.remove(Engine, "commit", on_commit)
    event.remove(Engine, "rollback", on_rollback)
    limiter.reset()


def test_malformed_requests_never_break_the_provider(world, capsys):
    @seed(int(os.environ.get("FUZZ_SEED", "0")))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize="FUZZ_SEED" not in os.environ,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    @given(case=fuzz_request(world, value_strategies(world), target_strategies()))
    def run(case):
        check(world, case)

    run()

    total = sum(world.stats.values())
    lines = [
        f"fuzz: {total} requests across {len(world.per_target)} endpoints; statuses "
        + ", ".join(f"{status}: {count}" for status, count in sorted(world.stats.items()))
    ]
    for name, counts in sorted(world.per_target.items()):
        lines.append(
            f"  {name:<19} {sum(counts.values()):>5}  "
            + " ".join(f"{status}x{count}" for status, count in sorted(counts.items()))
        )
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert total >= MINIMUM_REQUESTS
    if total >= DEFAULT_EXAMPLES:
        assert len(world.per_target) == len(TARGETS)  # every endpoint was exercised
    assert not any(status >= 500 for status in world.stats)
