"""Where this provider bends Flask, Flask-WTF, Flask-Limiter, limits and psycopg: every override of
their behaviour, and every use of their internals, in one file, each with the reason (Authlib's are
in app/protocol/adapters.py).

An upgrade of either library is checked here first, and `tests/unit/test_adapters.py` pins the
library behaviour each piece relies on or corrects: when a new version changes it, that test
fails and names the piece to look at (the versions are locked in requirements.lock).
"""

from __future__ import annotations

import hashlib
import json
import secrets
import threading
import time
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, overload

import psycopg
from flask import Flask, current_app, g, session
from flask import request as flask_request
from flask.json.tag import TaggedJSONSerializer
from flask.sessions import SecureCookieSessionInterface
from flask_limiter import Limiter
from flask_wtf import FlaskForm
from flask_wtf.form import _Auto
from itsdangerous import URLSafeTimedSerializer
from limits.storage import MemoryStorage
from psycopg.pq import ExecStatus

# -- Flask ------------------------------------------------------------------------------------------


class SessionJSON(TaggedJSONSerializer):
    """Flask's tagged JSON for the session cookie, read with the standard library's parser rather
    than `app.json`, which reads request bodies as I-JSON (app/core/input_rules.py): the cookie is our
    own, its signature checked before it is read, and the I-JSON checks would be paid each time a
    page opens the session."""

    def loads(self, value: str) -> Any:
        return self._untag_scan(json.loads(value))


class SessionCookies(SecureCookieSessionInterface):
    """Flask's signed-cookie sessions, making and reading the very same cookies for less CPU.

    Flask gives itsdangerous its SHA-1 wrapped in a Python function (`_lazy_sha1`, so that a build
    without SHA-1 fails only once a session is used), and `hmac` computes an HMAC in OpenSSL only
    for a digest named or given as OpenSSL's own constructor: with the wrapper it runs its
    pure-Python HMAC, twice per signature (the key derivation, then the MAC). And Flask builds a
    new serializer for every opening and every saving of a session. Here the digest is
    `hashlib.sha1` itself (the same MAC, computed by OpenSSL) and the serializer, which holds
    nothing but the keys and these settings, is built again only when the keys change (a new
    SECRET_KEY, its fallbacks). A sign-in opens the session five times and saves it twice (four
    times before its CSRF secrets came with the other saves, `new_csrf_secret`)."""

    digest_method = staticmethod(hashlib.sha1)
    serializer = SessionJSON()

    def __init__(self) -> None:
        self._serializer: tuple[tuple[Any, ...], URLSafeTimedSerializer | None] | None = None

    def get_signing_serializer(self, app: Flask) -> URLSafeTimedSerializer | None:
        keys = (app.secret_key, tuple(app.config["SECRET_KEY_FALLBACKS"] or ()))
        built = self._serializer
        if built is None or built[0] != keys:
            built = self._serializer = (keys, super().get_signing_serializer(app))
        return built[1]


# -- Flask-WTF --------------------------------------------------------------------------------------


def new_csrf_secret(keep_present: bool = False) -> None:
    """A fresh CSRF secret in the session now, under the key where Flask-WTF's `generate_csrf`
    keeps the one it makes when a page first asks for a token (and then signs every token of the
    session with). Made while a response changes the session anyway (a browser's first request:
    its id; a login or a logout: a new session), it saves the next page, which would make the
    secret, a session cookie of its own: a signature and a Set-Cookie.
    A token this request signed with the old secret is forgotten with it. `keep_present`: leave a secret
    the session has. Flask-WTF offers no public call for this; any string serves as the secret
    (it is signed and compared, never parsed)."""
    field = current_app.config.get("WTF_CSRF_FIELD_NAME", "csrf_token")
    if keep_present and session.get(field):
        return
    session[field] = secrets.token_hex(20)
    g.pop(field, None)


_flask_wtf_form_data = FlaskForm.Meta.wrap_formdata


def _form_bodies_only(meta: Any, form: FlaskForm, formdata: Any) -> Any:
    if formdata is _Auto and flask_request.is_json:
        return None
    return _flask_wtf_form_data(meta, form, formdata)


def pages_read_form_bodies_only() -> None:
    """Flask-WTF also reads a JSON body as a page's form data (`ImmutableMultiDict(get_json())`):
    any JSON but an object breaks it (a 500), and an object hands validators numbers, lists and
    nulls where they expect text. Our pages take what browsers send them, forms: a JSON body is
    read as no form data at all, which each page refuses as it refuses an empty form. Flask-WTF
    offers no setting for this; its Meta is shared by every form, so one assignment covers all."""
    FlaskForm.Meta.wrap_formdata = _form_bodies_only


class CheckedForm(FlaskForm):
    """A form for a POST that CSRFProtect has checked before the view runs (app-wide: every view
    but those it exempts, the protocol endpoints, RP-initiated logout and the API), on a page that
    writes the request's token out itself. FlaskForm's own CSRF field would pass such a POST
    (CSRFProtect marks the request checked), but building the field signs a fresh token every
    time, at both answers of a sign-in; this form has no such field.
    Never for a view CSRFProtect exempts: nothing would check its POST."""

    class Meta:
        csrf = False


# -- Flask-Limiter and limits --------------------------------------------------------------------------


class SweptMemoryStorage(MemoryStorage):
    """limits' in-process counters (the rate limits' store when no Redis is configured), with the
    expired counters swept by the counting request itself, at most once a second. MemoryStorage
    sweeps from a `threading.Timer` of 10 ms that every count starts anew once the last one has
    run: at the token endpoint's rate that is a new thread every few requests, a visible share of a
    code exchange's CPU. Each counter's own expiry is still checked whenever it is
    read; the sweep only frees the memory of counters nobody reads any more. Its URI scheme is
    `swept-memory://` (limits registers every Storage subclass by its STORAGE_SCHEME)."""

    STORAGE_SCHEME = ["swept-memory"]
    SWEEP_EVERY = 1.0  # seconds

    def __init__(self, uri: str | None = None, wrap_exceptions: bool = False, **options: str) -> None:
        super().__init__(uri, wrap_exceptions, **options)
        self.next_sweep = 0.0
        self._counting = threading.Lock()

    def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        """MemoryStorage's count, returning the value this call made. MemoryStorage reads the value
        back after releasing the key's lock, so two concurrent calls can both see the later count;
        the sign-in throttle admits an attempt by the count its own increment returns (a place in
        a budget), and would then refuse both, or see two attempts in one place. Counting under
        one lock makes the increment and its answer one step, as Redis's INCRBY is."""
        with self._counting:
            return super().incr(key, expiry, amount)

    def _MemoryStorage__schedule_expiry(self) -> None:  # MemoryStorage's private hook, see above
        now = time.monotonic()
        if now >= self.next_sweep:
            self.next_sweep = now + self.SWEEP_EVERY
            self._MemoryStorage__expire_events()  # type: ignore[attr-defined]


def skip_global_limit_check(app: Flask, limiter: Limiter) -> None:
    """Flask-Limiter checks application-wide and default limits before every request. This service
    sets none (the login view is decorated and checks itself; the token endpoint and /v1 call
    `spend`), so that check only costs CPU on every request: it is taken out of `before_request`.
    Flask-Limiter has no switch for it; its `_check_request_limit` hook is removed."""
    app.before_request_funcs[None].remove(limiter._check_request_limit)


# -- psycopg ----------------------------------------------------------------------------------------

# The result kinds psycopg describes even with no column ("SELECT ;"), as its own `description` does.
_DESCRIBED = (ExecStatus.TUPLES_OK, ExecStatus.SINGLE_TUPLE, ExecStatus.TUPLES_CHUNK)


class LazyDescriptionCursor(psycopg.Cursor[Any]):
    """psycopg's cursor, whose `description` builds each `Column` only when it is read.

    SQLAlchemy reads `cursor.description` after every statement, but for a statement it has run
    before (every statement here: they are built once) it only checks that there is one: it knows
    the columns from the compiled statement. psycopg answers with a list of new `Column`s, each
    decoded from the result with its type looked up, for every statement of every request. The answer is the same sequence of the same columns, built on demand.
    Set as psycopg's `cursor_factory` (app/core/config.py)."""

    @property
    def description(self) -> Sequence[psycopg.Column] | None:  # type: ignore[override]  # a list in psycopg
        result = self.pgresult
        if result is None or not (result.nfields or result.status in _DESCRIBED):
            return None
        return LazyColumns(self, result)


class LazyColumns(Sequence[psycopg.Column]):
    """The columns of one result, each built as psycopg builds it when first read. They describe the
    result they were asked about, even once the cursor has moved on to another: `Column` reads the
    result, the encoding and the types from the cursor it is given, so it is given those three as
    they were (psycopg's `Column(cursor, index)`, its `_encoding`: pinned in the adapter tests)."""

    def __init__(self, cursor: psycopg.Cursor[Any], result: Any) -> None:
        self._source = SimpleNamespace(pgresult=result, _encoding=cursor._encoding, adapters=cursor.adapters)
        self._columns: list[psycopg.Column | None] = [None] * result.nfields

    def __len__(self) -> int:
        return len(self._columns)

    @overload
    def __getitem__(self, index: int) -> psycopg.Column: ...
    @overload
    def __getitem__(self, index: slice) -> list[psycopg.Column]: ...
    def __getitem__(self, index: int | slice) -> psycopg.Column | list[psycopg.Column]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._columns)))]
        column = self._columns[index]  # IndexError past the end, as a list's
        if column is None:
            column = self._columns[index] = psycopg.Column(self._source, index % len(self._columns))  # type: ignore[arg-type]
        return column

    def __eq__(self, other: object) -> bool:
        return list(self) == other if isinstance(other, list) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a list is not hashable either
