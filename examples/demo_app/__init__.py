"""A demo relying party for Credits ID: its own small Flask app (port 5001) with a "Sign in with
Credits ID" button. It uses Authlib's Flask client exactly as Authlib documents it: discovery
(`server_metadata_url`), PKCE S256 and a nonce (both handled by Authlib), ID token validation
against the key set. After sign-in it shows the ID token's claims, the userinfo, and the member's
own data from the /v1 API: credits, and analytics on the pro membership.

Run it with `make run` (it starts the provider too), or on its own:

    DEMO_CLIENT_SECRET=... python -m examples.demo_app
"""

from __future__ import annotations

import os
import secrets
from typing import Any

from authlib.integrations.base_client import OAuthError
from authlib.integrations.flask_client import OAuth
from flask import Flask, redirect, render_template, request, session, url_for

from examples.demo_app.api import fetch_member_data, names, roles

# The name this app is registered under at the provider (app/services/demo.py, DEMO_APP_NAME): the login,
# consent and account pages show that one, so the demo shows the same.
APP_NAME = "Liner Notes"
SCOPE = "openid profile email credits:read analytics:read offline_access"
CSP = "default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'"


def settings_from_env() -> dict[str, Any]:
    issuer = os.environ.get("CREDITS_ID_ISSUER", "http://127.0.0.1:5000").rstrip("/")
    return {
        "CREDITS_ID_ISSUER": issuer,
        "CREDITS_ID_API": os.environ.get("CREDITS_ID_API", issuer + "/v1").rstrip("/"),
        "DEMO_CLIENT_ID": os.environ.get("DEMO_CLIENT_ID", "demo-web-app"),
        "DEMO_CLIENT_SECRET": os.environ.get("DEMO_CLIENT_SECRET", ""),
        "SECRET_KEY": os.environ.get("DEMO_SECRET_KEY") or secrets.token_urlsafe(32),
    }


def create_app(overrides: dict[str, Any] | None = None) -> Flask:
    app = Flask(__name__)
    app.config.update(settings_from_env())
    app.config.update(overrides or {})
    if not app.config["DEMO_CLIENT_SECRET"]:
        raise RuntimeError(
            "DEMO_CLIENT_SECRET is not set: `make run` passes the demo app's secret; "
            "or run `flask demo seed` and export the secret it prints for demo-web-app"
        )
    # The provider also runs on 127.0.0.1, and cookies do not keep ports apart: use our own name.
    app.jinja_env.filters["names"] = names
    app.jinja_env.filters["roles"] = roles
    app.jinja_env.globals["app_name"] = APP_NAME
    app.config.update(
        SESSION_COOKIE_NAME="demo_app_session", SESSION_COOKIE_HTTPONLY=True, SESSION_COOKIE_SAMESITE="Lax"
    )

    oauth = OAuth(app)
    oauth.register(
        "credits_id",
        client_id=app.config["DEMO_CLIENT_ID"],
        client_secret=app.config["DEMO_CLIENT_SECRET"],
        server_metadata_url=app.config["CREDITS_ID_ISSUER"] + "/.well-known/openid-configuration",
        client_kwargs={"scope": SCOPE, "code_challenge_method": "S256"},
    )
    # Signed-in visitors' tokens stay on the server (in memory: this is a one-process demo).
    visits: dict[str, dict] = {}

    @app.after_request
    def headers(response):
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "no-referrer")
        return response

    @app.get("/")
    def home():
        visit = visits.get(session.get("visit", ""))
        if visit is None:
            return render_template("home.html", issuer=app.config["CREDITS_ID_ISSUER"])
        return render_template("signed_in.html", **visit)

    @app.post("/login")
    def login():
        return oauth.credits_id.authorize_redirect(url_for("callback", _external=True))

    @app.get("/callback")
    def callback():
        if request.args.get("error"):
            # Only the member's own "Deny" is a cancellation; any other error is the sign-in failing.
            cancelled = request.args["error"] == "access_denied"
            return render_template(
                "problem.html",
                title="Sign-in cancelled" if cancelled else "Sign-in failed",
                error=request.args["error"],
                detail=request.args.get("error_description"),
            ), 400
        # RFC 9207: the response must come from the provider we sent the browser to.
        if request.args.get("iss") != oauth.credits_id.load_server_metadata()["issuer"]:
            return render_template(
                "problem.html", title="Unexpected sign-in response", error="issuer mismatch", detail=None
            ), 400
        try:
            token = oauth.credits_id.authorize_access_token()  # state, PKCE, ID token checks
        except OAuthError as exc:
            return render_template("problem.html", title="Sign-in failed", error=exc.error, detail=exc.description), 400
        visit_id = secrets.token_urlsafe(24)
        visits[visit_id] = describe_visit(oauth, app.config["CREDITS_ID_API"], token)
        session.clear()
        session["visit"] = visit_id
        return redirect(url_for("home"))

    @app.post("/refresh")
    def refresh():
        visit = visits.get(session.get("visit", ""))
        if visit is None:
            return redirect(url_for("home"))
        try:
            token = oauth.credits_id.fetch_access_token(
                grant_type="refresh_token", refresh_token=visit["token"]["refresh_token"]
            )
        except OAuthError as exc:
            visits.pop(session.pop("visit"), None)
            return render_template(
                "problem.html", title="The connection was ended", error=exc.error, detail="Sign in again to reconnect."
            ), 400
        token["userinfo"] = oauth.credits_id.parse_id_token(token, nonce=None)
        visits[session["visit"]] = describe_visit(oauth, app.config["CREDITS_ID_API"], token, refreshed=True)
        return redirect(url_for("home"))

    @app.post("/logout")
    def logout():
        visits.pop(session.pop("visit", ""), None)
        return redirect(url_for("home"))

    return app


def describe_visit(oauth: OAuth, api: str, token: dict, refreshed: bool = False) -> dict:
    """Everything the signed-in page shows: ID token claims, userinfo, and the /v1 data."""
    userinfo = oauth.credits_id.userinfo(token=token)
    granted = token.get("scope", "").split()
    return {
        "token": {k: token.get(k) for k in ("access_token", "refresh_token", "expires_at", "scope")},
        "claims": dict(token["userinfo"]),
        "userinfo": dict(userinfo),
        "granted": granted,
        "data": fetch_member_data(oauth.credits_id, api, token, granted),
        "refreshed": refreshed,
    }
