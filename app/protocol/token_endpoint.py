"""The token endpoint (RFC 6749 3.2): the code exchange and refresh, by Authlib's grants
(app/protocol/grants.py), once the request is within its client's budget (app/services/throttle.py).

`respond` answers a token request, whether Flask's request or a plain Werkzeug one. Flask's route
calls it, and so does the WSGI front (app/protocol/front.py), before Flask. The front takes only the
shape a relying party's server sends: a POST of a form with a declared length. Three kinds of
request go to Flask instead:
- a browser's call (an `Origin`), whose CORS headers Flask's hook writes;
- a query string;
- a NUL byte, which Flask's hook refuses with its own 400.
The front does not check them on its own terms: it answers with the same `respond` and the same
headers as the route, so the answer is the same whichever one gives it.

A request the front does not answer reaches Flask as it came: the body is replayed, and the
client's budget is not counted again (the throttle keeps its answer in the request's environ). The
front serves the request in an app context of its own, so on a unit of work of its own
(app/store/unit_of_work.py); its statements are the store's, so no ORM session is ever made. If
the front meets an exception (most likely the database), the request's transaction is rolled back
as that unit of work closes, and Flask's route runs the request again. This is what RetryingFlask does for
a dead connection (and the front logs it in the same words), and nothing of the first attempt
stands. Two writes commit mid-request: the
revocation of a grant whose code or refresh token was replayed, and a code burnt by a failed check
(its pair deleted, the code kept spent). Each ends in an OAuth error the front answers, not an
exception, so it never runs twice.
"""

from __future__ import annotations

import io
import logging
from typing import Any

from authlib.integrations.flask_oauth2.requests import FlaskOAuth2Request
from authlib.oauth2.rfc6749 import InvalidRequestError
from flask import Flask, Response, current_app
from werkzeug.wrappers import Request

from app.core import logs
from app.core.capabilities import TOKEN_PATH
from app.core.security import holds_nul_bytes, no_store_under
from app.models.base import sha256_hex
from app.protocol.client_auth import named_client_id
from app.protocol.errors import machine_error
from app.protocol.front import Answer, Answerer, serving
from app.protocol.server import server
from app.services import throttle
from app.store.unit_of_work import runs_again_after

ENDPOINT = "oauth.token"
FORM = "application/x-www-form-urlencoded"

log = logging.getLogger(__name__)


def token_client_key(req: Request) -> str:
    """The client a token request names and the IP it comes from. The name is counted before it is
    verified, but it is the only client the request can authenticate as: authentication reads the
    same `named_client_id`, and a request naming two clients is refused (app/protocol/client_auth.py),
    so a decoy `client_id` is never what gets counted. Client ids are public (every authorization
    URL shows one): keyed on the id alone, anyone could spend an app's budget and lock its users
    out of signing in. With the IP in the key a flood only spends its own."""
    try:
        client_id = named_client_id(req.headers, req.form, req.args)
    except InvalidRequestError:
        client_id = None  # refused before any client is looked up; counted on the IP alone
    claimed = "client:" + sha256_hex(client_id[:256]) + ":" if client_id else ""
    return claimed + "ip:" + throttle.client_ip(req)


_TOKEN_BUDGET = "credits_id.token_budget"


def token_request_retry_after(req: Request) -> int | None:
    """Count this token request against its client's budget from its IP (TOKEN_CLIENT_LIMIT): None when it
    may proceed, else the seconds until it may retry.

    Counted once per request whoever asks - the front (app/protocol/front.py), then Flask's route if the
    front handed the request on: the answer is kept in the request's WSGI environ.

    A direct `spend` rather than Flask-Limiter's view decorator: every token request passes
    here, and the decorator's bookkeeping costs several times this function's."""
    if _TOKEN_BUDGET not in req.environ:
        spent = throttle.spend(
            throttle.parsed_limit(current_app.config["TOKEN_CLIENT_LIMIT"]), "token-client", token_client_key(req)
        )
        req.environ[_TOKEN_BUDGET] = None if spent is None or spent.allowed else spent.reset
    retry_after: int | None = req.environ[_TOKEN_BUDGET]
    return retry_after


def respond(req: Request) -> Response:
    """The answer to one token request: 429 past the client's budget, else Authlib's."""
    retry_after = token_request_retry_after(req)
    if retry_after is not None:
        response = machine_error(429, "Too many token requests for this client. Retry later.")
        response.headers["Retry-After"] = str(retry_after)
        return response
    if not req.form.get("grant_type"):
        return server.handle_error_response(None, InvalidRequestError("Missing 'grant_type' parameter."))
    answer: Response = server.create_token_response(FlaskOAuth2Request(req))
    return answer


def declared_length(environ: dict[str, Any], limit: int) -> int | None:
    """The body length of a plain form POST with no query string and no Origin, within `limit`;
    None for any other request (Flask's to answer)."""
    if environ.get("REQUEST_METHOD") != "POST" or environ.get("QUERY_STRING") or "HTTP_ORIGIN" in environ:
        return None
    if environ.get("CONTENT_TYPE", "").partition(";")[0].strip().lower() != FORM:
        return None
    length = environ.get("CONTENT_LENGTH", "")
    return int(length) if length.isdigit() and int(length) <= limit else None


def answerers(app: Flask) -> dict[str, Answerer]:
    def answer(environ: dict[str, Any]) -> Answer | None:
        length = declared_length(environ, int(app.config["MAX_CONTENT_LENGTH"]))
        if length is None:
            return None
        # Read once, replayable: a request handed on reaches Flask with the body that came.
        body = environ["wsgi.input"] = io.BytesIO(environ["wsgi.input"].read(length))
        with serving(app, environ):
            req = app.request_class(environ)
            if holds_nul_bytes(req):
                body.seek(0)
                return None
            try:
                response = respond(req)
            except Exception as error:  # rolled back as the app context ends; Flask runs it again
                if not runs_again_after(error):
                    log.warning("token request handed to Flask after %s", type(error).__name__)
                body.seek(0)
                return None
            no_store_under(TOKEN_PATH, response.headers)
            client_id, member = logs.client_id_of(req), logs.member_of_request()
        return Answer(
            ENDPOINT, response.status_code, response.headers.to_wsgi_list(), response.get_data(), client_id, member
        )

    return {TOKEN_PATH: answer}
