"""No secret ever leaves: a full flow against a real server process that logs everything it can
(granian's access log on, every logger at DEBUG, SQL statements with their parameters), then a scan of the
captured log for every password, secret, code and token of the flow."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
import requests

from tests.conftest import ROOT, free_port, server_env
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import Browser, RelyingParty, query, sign_in

WRONG_PASSWORD = "wrong-password-Zq9xLk2"
WRONG_SECRET = "wrong-client-secret-Hf83nQ"
BOGUS_CODE = "bogus-code-Pp41Xx9Lm"
BOGUS_TOKEN = "bogus-token-Yt62Bv0Wd"
LOGOUT_URI = "http://127.0.0.1:7199/logged-out"

LOG_CONFIG = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"out": {"class": "logging.StreamHandler", "formatter": "plain", "stream": "ext://sys.stdout"}},
    "root": {"level": "DEBUG", "handlers": ["out"]},
    "loggers": {
        "_granian": {"level": "DEBUG", "handlers": ["out"], "propagate": False},
        "granian.access": {"level": "INFO", "handlers": ["out"], "propagate": False},
        "sqlalchemy.engine": {"level": "INFO"},  # every statement, with its parameters
    },
}


@pytest.fixture
def chatty_server(app, settings, tmp_path):
    port = free_port()
    config = tmp_path / "logging.json"
    config.write_text(json.dumps(LOG_CONFIG))
    # Not serve.py (its JSON logging is quieter): granian itself, logging everything. Its access
    # line is the default format, as an operator would turn it on: the path, never the query
    # string (authorize and end-session URLs carry id_token_hint and codes there).
    log_path = tmp_path / "server.log"
    issuer = f"http://127.0.0.1:{port}"
    env = server_env({**settings, "ISSUER_URL": issuer, "LOG_LEVEL": "DEBUG"})
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "granian",
                "--interface",
                "wsgi",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                "1",
                "--blocking-threads",
                "4",
                "--log-level",
                "debug",
                "--log-config",
                str(config),
                "--access-log",
                "wsgi:app",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        for _ in range(600):
            try:
                requests.get(issuer + "/.well-known/openid-configuration", timeout=5)
                break
            except requests.RequestException:
                if proc.poll() is not None:
                    raise RuntimeError(log_path.read_text()) from None
                time.sleep(0.2)
        yield issuer, proc, log_path
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_a_full_flow_leaves_no_secret_in_the_logs(chatty_server):
    base, proc, log_path = chatty_server
    member = make_member()
    client, client_secret = make_client(post_logout_redirect_uris=[LOGOUT_URI])
    client_id = client.client_id
    rp = RelyingParty(base, client_id, client_secret)
    secrets = {
        "password": PASSWORD,
        "client_secret": client_secret,
        "wrong password": WRONG_PASSWORD,
        "wrong client secret": WRONG_SECRET,
        "bogus code": BOGUS_CODE,
        "bogus token": BOGUS_TOKEN,
    }

    # A failed sign-in first, then the whole flow.
    browser = Browser(base)
    browser.authorize(rp.auth_params(scope="openid profile email offline_access"))
    failed = browser.login(member.email, password=WRONG_PASSWORD)
    assert failed.status_code == 401
    params, browser = sign_in(base, rp, member.email, scope="openid profile email offline_access", browser=browser)
    secrets.update(
        code=params["code"], code_verifier=rp.verifier, session_cookie=browser.session.cookies.get("credits_id_session")
    )
    tokens = rp.exchange(params["code"]).json()
    replay = rp.exchange(params["code"])  # a replayed code: rejected, and it revokes the grant
    assert replay.status_code == 400

    # Second grant, used for refresh, introspection, revocation and logout.
    params, browser = sign_in(base, rp, member.email, scope="openid profile email offline_access", browser=browser)
    secrets["second code"] = params["code"]
    tokens = rp.exchange(params["code"]).json()
    secrets.update(access=tokens["access_token"], refresh=tokens["refresh_token"], id_token=tokens["id_token"])
    userinfo = requests.get(
        base + "/api/auth/oauth2/userinfo", timeout=30, headers={"Authorization": f"Bearer {tokens['access_token']}"}
    )
    assert userinfo.status_code == 200
    rotated = rp.refresh(tokens["refresh_token"]).json()
    secrets.update(access2=rotated["access_token"], refresh2=rotated["refresh_token"], id_token2=rotated["id_token"])

    # Failures that carry secrets in the request.
    bad_code = rp.exchange(BOGUS_CODE)
    bad_secret = requests.post(
        base + "/api/auth/oauth2/token",
        auth=(client_id, WRONG_SECRET),
        timeout=30,
        data={"grant_type": "refresh_token", "refresh_token": rotated["refresh_token"]},
    )
    bad_bearer = requests.get(
        base + "/api/auth/oauth2/userinfo", headers={"Authorization": f"Bearer {BOGUS_TOKEN}"}, timeout=30
    )
    for response in (bad_code, bad_secret, bad_bearer):
        assert response.status_code in (400, 401)
        for value in (BOGUS_CODE, WRONG_SECRET, BOGUS_TOKEN, rotated["refresh_token"]):
            assert value not in response.text  # error messages never echo what was sent
            assert value not in str(response.headers)

    auth = (client_id, client_secret)
    introspected = requests.post(
        base + "/api/auth/oauth2/introspect", auth=auth, timeout=30, data={"token": rotated["access_token"]}
    )
    assert introspected.json()["active"] is True
    assert (
        requests.post(
            base + "/api/auth/oauth2/revoke", auth=auth, timeout=30, data={"token": rotated["refresh_token"]}
        ).status_code
        == 200
    )
    logout = browser.get(
        "/api/auth/oauth2/endsession",
        params={"id_token_hint": rotated["id_token"], "post_logout_redirect_uri": LOGOUT_URI, "state": "bye"},
    )
    assert logout.status_code == 302 and query(logout.headers["Location"]) == {"state": "bye"}

    proc.terminate()
    proc.wait(timeout=30)
    log = log_path.read_text(errors="replace")

    # The log really captured the flow: access lines, our SQL, library debug output.
    assert '"POST /api/auth/oauth2/token HTTP/1.1" 200' in log
    assert '"GET /api/auth/oauth2/endsession' in log
    assert '"path": "/api/auth/oauth2/token", "endpoint": "oauth.token", "status": 200' in log  # the app's own line
    assert "INSERT INTO tokens" in log and "UPDATE tokens" in log
    assert " DEBUG " in log
    for name, value in secrets.items():
        assert value and len(value) >= 8, name
        assert value not in log, f"{name} appears in the server log"


def test_member_account_flows_leave_no_secret_in_the_logs_or_the_database(chatty_server, mailbox):
    """Forgot password (the mailed link's token), the new password, an authenticator app (its key,
    a code, the recovery codes) and a sign-in with a recovery code: none of them in the server's
    log, nor in clear in the database."""
    import re
    from html import unescape

    import pyotp

    from tests.factories import db_state
    from tests.flows import csrf_token

    base, proc, log_path = chatty_server
    member = make_member()
    new_password = "a brand-new passphrase Qw71"
    browser = Browser(base)
    page = browser.get("/password/forgot")
    browser.post("/password/forgot", data={"csrf_token": csrf_token(page.text), "email": member.email})
    link = mailbox.wait_for(member.email)
    reset = browser.get(link.link())
    browser.post(
        "/password/reset",
        data={
            "csrf_token": csrf_token(reset.text),
            "token": link.token(),
            "new": new_password,
            "confirm": new_password,
        },
    )
    login = browser.get("/login?next=/account")
    assert (
        browser.post(
            "/login",
            data={
                "csrf_token": csrf_token(login.text),
                "email": member.email,
                "password": new_password,
                "next": "/account",
            },
        ).status_code
        == 302
    )
    setup = browser.get("/account/two-step/setup")
    totp_secret = unescape(re.search(r'id="totp-secret">([^<]+)<', setup.text).group(1)).replace(" ", "")
    code = pyotp.TOTP(totp_secret).now()
    shown = browser.post(
        "/account/two-step/setup", data={"csrf_token": csrf_token(setup.text), "current": new_password, "code": code}
    )
    recovery = re.findall(r"<li><code>([a-z0-9-]{19})</code></li>", shown.text)
    assert len(recovery) == 10
    stranger = Browser(base)
    login = stranger.get("/login")
    step = stranger.follow(
        stranger.post(
            "/login", data={"csrf_token": csrf_token(login.text), "email": member.email, "password": new_password}
        )
    )
    assert (
        stranger.post(
            "/login/second-factor", data={"csrf_token": csrf_token(step.text), "code": recovery[0]}
        ).status_code
        == 302
    )

    secrets = {
        "reset token": link.token(),
        "new password": new_password,
        "totp secret": totp_secret,
        **{f"recovery code {i}": c for i, c in enumerate(recovery)},
        **{f"recovery code {i} (typed form)": c.replace("-", "") for i, c in enumerate(recovery)},
    }
    proc.terminate()
    proc.wait(timeout=30)
    log = log_path.read_text(errors="replace")
    assert '"GET /password/reset HTTP/1.1" 200' in log and "INSERT INTO one_time_links" in log
    dump = "\n".join(" ".join(row) for rows in db_state().values() for row in rows)
    for name, value in secrets.items():
        assert value not in log, f"{name} appears in the server log"
        assert value not in dump, f"{name} is stored in clear"
    assert code not in dump
