"""The token endpoint (RFC 6749 3.2): the code exchange and refresh, by Authlib's grants
(app/oauth/grants.py), once the request is within its client's budget (app/auth/throttle.py).

`respond` answers a token request, whether Flask's request or a plain Werkzeug one. Flask's route
calls it, and so does the WSGI front (app/oauth/front.py), before Flask. The front takes only the
shape a relying party's server sends: a POST of a form with a declared length. Three kinds of
request go to Flask instead:
- a browser's call (an `Origin`), whose CORS headers Flask's hook writes;
- a query string;
- a NUL byte, which Flask's hook refuses with its own 400.
The front does not check them on its own terms: it answers with the same `respond` and the same
headers as the route, so the answer is the same whichever one gives it.

A request the front does not answer reaches Flask as it came: the body is replayed, and the
client's budget is not counted again (the throttle keeps its answer in the request's environ). The
front serves the request on a Core unit of work (app/database.py: its statements are all Core, and
the ORM session's bookkeeping cost about a tenth of a refresh's CPU on SQLite). If the front
meets an exception (most likely the database), the request's transaction is rolled back as that
unit of work closes, and Flask's route runs the request again. This is what RetryingFlask does for
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
from flask import Flask, Response
from werkzeug.wrappers import Request

from app import logs
from app.auth import throttle
from app.capabilities import TOKEN_PATH
from app.database import core_unit_of_work, runs_again_after
from app.errors import machine_error
from app.oauth.front import Answer, Answerer, serving
from app.oauth.server import server
from app.security import holds_nul_bytes, no_store_under

ENDPOINT = "oauth.token"
FORM = "application/x-www-form-urlencoded"

log = logging.getLogger(__name__)


def respond(req: Request) -> Response:
    """The answer to one token request: 429 past the client's budget, else Authlib's."""
    retry_after = throttle.token_request_retry_after(req)
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
        with serving(app, environ), core_unit_of_work():
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
