"""The token endpoint: code exchange with PKCE, refresh rotation, reuse detection, RFC 6749 errors."""

import base64
from datetime import timedelta

import jwt as pyjwt
import pytest
import requests

from app.core.extensions import db
from app.models import AuthorizationCode, Client, LoginSession, Token, User
from app.models.base import sha256_hex, utcnow
from tests.factories import db_state, make_client, make_member
from tests.flows import TOKEN, USERINFO, RelyingParty, pkce_pair, sign_in


def userinfo_status(base: str, access_token: str) -> int:
    return requests.get(base + USERINFO, headers={"Authorization": f"Bearer {access_token}"}, timeout=30).status_code


def assert_oauth_error(response, error: str, status: int = 400):
    assert response.status_code == status, response.text
    assert response.json()["error"] == error
    assert response.headers["Cache-Control"] == "no-store"


# -- successful exchanges ----------------------------------------------------------------------


def test_code_exchange_with_client_secret_basic(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid profile email offline_access")
    response = rp.exchange(params["code"])
    assert response.status_code == 200, response.text
    assert response.headers["Cache-Control"] == "no-store"
    body = response.json()
    assert body["token_type"] == "Bearer" and body["expires_in"] == 3600
    assert set(body["scope"].split()) == {"openid", "profile", "email", "offline_access"}
    assert {"access_token", "refresh_token", "id_token"} <= body.keys()


def test_code_exchange_with_client_secret_post(live_server, member):
    client, secret = make_client(auth_method="client_secret_post")
    rp = RelyingParty(live_server.url, client.client_id, secret)
    params, _ = sign_in(live_server.url, rp, member.email)
    response = rp.token_request(
        {
            "grant_type": "authorization_code",
            "code": params["code"],
            "redirect_uri": rp.redirect_uri,
            "code_verifier": rp.verifier,
        },
        auth="post",
    )
    assert response.status_code == 200, response.text
    # a client registered for client_secret_post does not authenticate with Basic
    params, _ = sign_in(live_server.url, rp, member.email)
    basic = rp.exchange(params["code"])
    assert_oauth_error(basic, "invalid_client", 401)


def test_public_client_exchanges_with_pkce_and_no_secret(live_server, public_rp, member):
    params, _ = sign_in(live_server.url, public_rp, member.email, scope="openid offline_access")
    response = public_rp.exchange(params["code"])
    assert response.status_code == 200, response.text
    assert "refresh_token" in response.json()


def test_no_refresh_token_without_offline_access(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid profile")
    body = rp.exchange(params["code"]).json()
    assert "refresh_token" not in body
    row = stored_pair(body)  # and the stored pair holds none either
    assert row.scope == "openid profile" and row.refresh_token_hash is None and row.refresh_expires_at is None


# -- client authentication -----------------------------------------------------------------------


def test_wrong_or_missing_client_credentials_are_invalid_client(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email)
    data = {
        "grant_type": "authorization_code",
        "code": params["code"],
        "redirect_uri": rp.redirect_uri,
        "code_verifier": rp.verifier,
    }
    before = db_state()
    wrong = requests.post(live_server(TOKEN), data=data, auth=(rp.client_id, "not-the-secret"), timeout=30)
    assert_oauth_error(wrong, "invalid_client", 401)
    assert wrong.headers["WWW-Authenticate"].startswith("Basic")
    missing = requests.post(live_server(TOKEN), data={**data, "client_id": rp.client_id}, timeout=30)
    assert_oauth_error(missing, "invalid_client", 401)
    garbage = requests.post(live_server(TOKEN), data=data, headers={"Authorization": "Basic %%%not-base64"}, timeout=30)
    assert_oauth_error(garbage, "invalid_client", 401)
    bad_utf8 = base64.b64encode(b"\xff\xfe:\xff").decode()
    assert (
        requests.post(
            live_server(TOKEN), data=data, headers={"Authorization": f"Basic {bad_utf8}"}, timeout=30
        ).status_code
        == 401
    )
    assert db_state() == before
    assert rp.exchange(params["code"]).status_code == 200  # the code was not burnt by those attempts


def test_a_disabled_client_cannot_use_the_token_endpoint(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email)
    Client.query.filter_by(client_id=rp.client_id).one().status = "disabled"
    db.session.commit()
    response = rp.exchange(params["code"])
    # Unknown to the token endpoint (401 invalid_client) once the server's process has read the
    # app's change notice (on PostgreSQL it may arrive a moment after this commit): until then the
    # statement that would spend the code refuses a disabled app itself (400 invalid_grant).
    assert (response.status_code, response.json()["error"]) in ((401, "invalid_client"), (400, "invalid_grant"))
    assert Token.query.count() == 0


# -- the code: single use, short-lived, bound to client, redirect_uri and PKCE -------------------


def test_a_code_used_twice_is_invalid_grant_and_revokes_what_it_issued(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid offline_access")
    first = rp.exchange(params["code"]).json()
    assert userinfo_status(live_server.url, first["access_token"]) == 200
    second = rp.exchange(params["code"])
    assert_oauth_error(second, "invalid_grant")
    assert userinfo_status(live_server.url, first["access_token"]) == 401
    assert_oauth_error(rp.refresh(first["refresh_token"]), "invalid_grant")
    assert all(t.revoked_at is not None for t in Token.query.all())


def test_an_expired_code_is_invalid_grant(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email)
    code = db.session.scalar(db.select(AuthorizationCode))
    assert code.expires_at - code.issued_at == timedelta(seconds=60)
    code.expires_at = utcnow() - timedelta(seconds=1)
    db.session.commit()
    before = db_state()
    assert_oauth_error(rp.exchange(params["code"]), "invalid_grant")
    assert db_state() == before


def test_code_lifetime_counts_from_issue_not_from_login(live_server, rp, member):
    _, browser = sign_in(live_server.url, rp, member.email)
    login = db.session.scalar(db.select(LoginSession))
    login.auth_time = utcnow() - timedelta(hours=2)  # signed in long ago; SSO gives a fresh code
    db.session.commit()
    params, _ = sign_in(live_server.url, rp, member.email, browser=browser)
    body = rp.exchange(params["code"]).json()
    claims = pyjwt.decode(body["id_token"], options={"verify_signature": False})
    assert claims["auth_time"] == int(login.auth_time.timestamp())


@pytest.mark.parametrize(
    "change,error",
    [
        ({"code": "not-a-code"}, "invalid_grant"),
        ({"code": None}, "invalid_request"),
        ({"grant_type": "password"}, "unsupported_grant_type"),
        ({"grant_type": None}, "invalid_request"),
    ],
    ids=["bad-code", "no-code", "password-grant", "no-grant-type"],
)
def test_token_request_errors_change_nothing(live_server, rp, member, change, error):
    params, _ = sign_in(live_server.url, rp, member.email)
    data = {
        "grant_type": "authorization_code",
        "code": params["code"],
        "redirect_uri": rp.redirect_uri,
        "code_verifier": rp.verifier,
        **change,
    }
    before = db_state()
    response = rp.token_request({k: v for k, v in data.items() if v is not None})
    assert_oauth_error(response, error)
    assert db_state() == before
    assert rp.exchange(params["code"]).status_code == 200  # the code was never reached: still good


@pytest.mark.parametrize(
    "change,error",
    [
        ({"redirect_uri": "http://127.0.0.1:7199/elsewhere"}, "invalid_grant"),
        ({"redirect_uri": None}, "invalid_grant"),
        ({"code_verifier": pkce_pair()[0]}, "invalid_grant"),
        ({"code_verifier": None}, "invalid_request"),
        ({"code_verifier": "too-short"}, "invalid_request"),
    ],
    ids=["other-redirect", "no-redirect", "wrong-verifier", "no-verifier", "bad-verifier"],
)
def test_a_failed_check_on_a_code_burns_it(live_server, rp, member, change, error):
    """Issue 49, item 11 (until then a failed check left the code redeemable, and this test said
    so): the client authenticated and presented the code, so a failed check is the code's one use.
    A stolen code gets one try; the right request after it is refused, and no token was issued."""
    params, _ = sign_in(live_server.url, rp, member.email)
    data = {
        "grant_type": "authorization_code",
        "code": params["code"],
        "redirect_uri": rp.redirect_uri,
        "code_verifier": rp.verifier,
        **change,
    }
    before = db_state()
    assert_oauth_error(rp.token_request({k: v for k, v in data.items() if v is not None}), error)

    after = db_state()
    assert {table: rows for table, rows in after.items() if rows != before[table]}.keys() == {"authorization_codes"}
    code = db.session.scalar(
        db.select(AuthorizationCode).where(AuthorizationCode.code_hash == sha256_hex(params["code"]))
    )
    assert code.used_at is not None and Token.query.count() == 0
    assert_oauth_error(rp.exchange(params["code"]), "invalid_grant")  # the right verifier, too late
    assert db_state() == after


def test_a_code_is_bound_to_its_client(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email)
    other, secret = make_client(name="Other App")
    thief = RelyingParty(live_server.url, other.client_id, secret, verifier=rp.verifier)
    assert_oauth_error(thief.exchange(params["code"]), "invalid_grant")
    assert rp.exchange(params["code"]).status_code == 200


# -- refresh: rotation and reuse detection ------------------------------------------------------


def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_family(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid profile offline_access")
    first = rp.exchange(params["code"]).json()
    second_response = rp.refresh(first["refresh_token"])
    assert second_response.status_code == 200 and second_response.headers["Cache-Control"] == "no-store"
    second = second_response.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert second["access_token"] != first["access_token"]
    assert userinfo_status(live_server.url, second["access_token"]) == 200

    assert_oauth_error(rp.refresh(first["refresh_token"]), "invalid_grant")  # replay of the rotated one
    assert userinfo_status(live_server.url, second["access_token"]) == 401  # the whole family is revoked
    assert_oauth_error(rp.refresh(second["refresh_token"]), "invalid_grant")
    grant_ids = {t.grant_id for t in Token.query.all()}
    assert len(grant_ids) == 1 and all(t.revoked_at for t in Token.query.all())


def test_refreshed_id_token_keeps_sub_and_auth_time(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid offline_access")
    first = rp.exchange(params["code"]).json()
    second = rp.refresh(first["refresh_token"]).json()
    a = pyjwt.decode(first["id_token"], options={"verify_signature": False})
    b = pyjwt.decode(second["id_token"], options={"verify_signature": False})
    assert a["sub"] == b["sub"] and a["auth_time"] == b["auth_time"] and b["aud"] == rp.client_id
    assert "nonce" not in b


def test_refresh_may_narrow_scope_but_not_widen_it(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid profile offline_access")
    tokens = rp.exchange(params["code"]).json()
    before = db_state()
    assert_oauth_error(rp.refresh(tokens["refresh_token"], scope="openid email offline_access"), "invalid_scope")
    assert db_state() == before
    narrowed = rp.refresh(tokens["refresh_token"], scope="openid offline_access").json()
    assert narrowed["scope"] == "openid offline_access"


def stored_pair(answer: dict) -> Token:
    """The row of the pair an answer carries (by its access token)."""
    db.session.remove()
    return db.session.scalar(db.select(Token).where(Token.access_token_hash == sha256_hex(answer["access_token"])))


def test_a_narrowed_refresh_stores_the_narrowed_scope(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid profile offline_access")
    tokens = rp.exchange(params["code"]).json()
    narrowed = rp.refresh(tokens["refresh_token"], scope="openid offline_access").json()
    row = stored_pair(narrowed)
    assert row.scope == narrowed["scope"] == "openid offline_access"
    assert row.refresh_token_hash == sha256_hex(narrowed["refresh_token"]) and row.refresh_expires_at is not None
    assert userinfo_status(live_server.url, narrowed["access_token"]) == 200


def test_a_refresh_narrowed_without_offline_access_ends_the_refresh_chain(live_server, rp, member):
    """RFC 6749 6: the new pair may carry no refresh token; its row then holds none either."""
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid profile offline_access")
    tokens = rp.exchange(params["code"]).json()
    response = rp.refresh(tokens["refresh_token"], scope="openid profile")
    assert response.status_code == 200, response.text
    body = response.json()
    assert "refresh_token" not in body and body["scope"] == "openid profile"
    row = stored_pair(body)
    assert row.scope == "openid profile" and row.refresh_token_hash is None and row.refresh_expires_at is None
    assert_oauth_error(rp.refresh(tokens["refresh_token"]), "invalid_grant")  # the old one was spent


PRO_SCOPE = "openid credits:read analytics:read offline_access"


def pro_member_signed_in(live_server, rp) -> tuple[User, dict]:
    member = make_member(tier="pro")
    params, _ = sign_in(live_server.url, rp, member.email, scope=PRO_SCOPE)
    return member, params


def downgrade_behind_the_consoles_back(member: User) -> None:
    """A plain UPDATE of the tier: the member's live tokens keep their scope (the console's
    downgrade would narrow them), so only the cut at issue time stands between them and analytics."""
    db.session.execute(db.update(User).where(User.id == member.id).values(tier="basic"))
    db.session.commit()


def test_a_refresh_stores_only_what_the_membership_includes_now(live_server, rp):
    member, params = pro_member_signed_in(live_server, rp)
    tokens = rp.exchange(params["code"]).json()
    assert "analytics:read" in tokens["scope"].split()
    downgrade_behind_the_consoles_back(member)
    refreshed = rp.refresh(tokens["refresh_token"]).json()
    assert refreshed["scope"] == "openid credits:read offline_access"
    row = stored_pair(refreshed)
    assert row.scope == refreshed["scope"] and row.refresh_token_hash == sha256_hex(refreshed["refresh_token"])


def test_an_exchange_stores_only_what_the_membership_includes_now(live_server, rp):
    member, params = pro_member_signed_in(live_server, rp)
    downgrade_behind_the_consoles_back(member)
    body = rp.exchange(params["code"]).json()
    assert body["scope"] == "openid credits:read offline_access"
    row = stored_pair(body)
    assert row.scope == body["scope"] and row.refresh_token_hash == sha256_hex(body["refresh_token"])


def test_a_refresh_token_of_another_client_is_invalid_grant(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid offline_access")
    tokens = rp.exchange(params["code"]).json()
    other, secret = make_client(name="Other")
    thief = RelyingParty(live_server.url, other.client_id, secret)
    before = db_state()
    assert_oauth_error(thief.refresh(tokens["refresh_token"]), "invalid_grant")
    assert db_state() == before
    assert rp.refresh(tokens["refresh_token"]).status_code == 200


def test_an_expired_refresh_token_is_invalid_grant(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid offline_access")
    tokens = rp.exchange(params["code"]).json()
    row = db.session.scalar(db.select(Token))
    row.refresh_expires_at = utcnow() - timedelta(seconds=1)
    db.session.commit()
    assert_oauth_error(rp.refresh(tokens["refresh_token"]), "invalid_grant")


def test_json_body_instead_of_a_form_is_a_clean_error(live_server, rp):
    response = requests.post(
        live_server(TOKEN), json={"grant_type": "authorization_code"}, auth=(rp.client_id, rp.client_secret), timeout=30
    )
    assert_oauth_error(response, "invalid_request")
