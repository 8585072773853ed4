"""ID tokens, validated the way a relying party does: against the published key set (PyJWT);
and an ID token coming back to the provider as `id_token_hint`."""

import base64
import hashlib
import json
import time

import jwt as pyjwt
import requests

from app.protocol.jwks import keystore
from tests.factories import db_state
from tests.flows import AUTHORIZE, JWKS, query, sign_in
from tests.issued import OFFLINE, jwt_claims


def verify(live_server, id_token: str, audience: str) -> dict:
    jwks = pyjwt.PyJWKClient(live_server(JWKS))
    key = jwks.get_signing_key_from_jwt(id_token)
    return pyjwt.decode(
        id_token,
        key.key,
        algorithms=["RS256"],
        audience=audience,
        issuer=live_server.url,
        options={"require": ["iss", "sub", "aud", "exp", "iat", "auth_time"]},
    )


def test_id_token_claims_and_signature(live_server, rp, member, settings):
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid profile email", nonce="n-0S6_WzA2Mj")
    body = rp.exchange(params["code"]).json()
    header = pyjwt.get_unverified_header(body["id_token"])
    assert header["alg"] == "RS256" and header["kid"] == keystore.signing_key()[0]
    claims = verify(live_server, body["id_token"], rp.client_id)
    assert claims["sub"] == member.sub
    assert claims["nonce"] == "n-0S6_WzA2Mj"
    assert claims["email"] == member.email and claims["email_verified"] is True and claims["name"] == "Bea Basic"
    assert claims[settings["ISSUER_URL"] + "/claims/user_id"] == member.id
    assert claims["exp"] - claims["iat"] == 3600 and abs(claims["iat"] - time.time()) < 300
    assert claims["auth_time"] <= claims["iat"]


def test_claims_follow_the_granted_scopes_and_nonce_is_omitted_when_not_sent(live_server, rp, member, settings):
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid", nonce=None)
    claims = verify(live_server, rp.exchange(params["code"]).json()["id_token"], rp.client_id)
    assert "nonce" not in claims and "email" not in claims and "name" not in claims
    assert claims[settings["ISSUER_URL"] + "/claims/user_id"] == member.id  # always released


def half_hash(access_token: str) -> str:
    """OIDC Core 3.1.3.6 for RS256: base64url of the left half of SHA-256, without padding."""
    digest = hashlib.sha256(access_token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest[:16]).rstrip(b"=").decode()


def test_at_hash_binds_the_id_token_to_the_access_token_of_the_exchange(live_server, rp, member):
    """Apps (Authlib's client among them) check `at_hash` to know the access token came with this
    ID token; a missing or wrong one makes them refuse the sign-in."""
    params, _ = sign_in(live_server.url, rp, member.email, scope=OFFLINE)
    body = rp.exchange(params["code"]).json()
    claims = verify(live_server, body["id_token"], rp.client_id)
    assert claims["at_hash"] == half_hash(body["access_token"])


def test_a_refreshed_id_token_carries_the_at_hash_of_the_new_access_token(live_server, rp, member):
    """The ID token of a refresh goes with the refresh's new access token, not the first one."""
    params, _ = sign_in(live_server.url, rp, member.email, scope=OFFLINE)
    body = rp.exchange(params["code"]).json()
    refreshed = rp.refresh(body["refresh_token"])
    assert refreshed.status_code == 200, refreshed.text
    new = refreshed.json()
    assert new["access_token"] != body["access_token"]
    claims = verify(live_server, new["id_token"], rp.client_id)
    assert claims["at_hash"] == half_hash(new["access_token"])


def with_payload(id_token: str, claims: dict) -> str:
    """`id_token` with its payload replaced and its header and signature kept."""
    head, _, signature = id_token.split(".")
    payload = base64.urlsafe_b64encode(json.dumps(claims, separators=(",", ":")).encode()).rstrip(b"=").decode()
    return ".".join([head, payload, signature])


def test_a_tampered_id_token_hint_is_invalid_request_and_issues_no_code(live_server, rp, member):
    """The hint tells the provider which member the app expects. One whose payload was altered
    after signing is not ours: the app gets `invalid_request` at its redirect_uri (with `state`
    and `iss`), never a code - even though this member is signed in and consented already."""
    params, browser = sign_in(live_server.url, rp, member.email)
    id_token = rp.exchange(params["code"]).json()["id_token"]
    forged = with_payload(id_token, jwt_claims(id_token) | {"email": "mallory@example.test"})
    assert forged != id_token and forged.split(".")[2] == id_token.split(".")[2]
    before = db_state()

    request = rp.auth_params(id_token_hint=forged)
    response = browser.get(AUTHORIZE, params=request)

    assert response.status_code == 302, response.text[:300]
    assert response.headers["Location"].startswith(rp.redirect_uri)
    answer = query(response.headers["Location"])
    assert answer.get("error") == "invalid_request", answer
    assert answer["state"] == request["state"] and answer["iss"] == live_server.url
    assert "code" not in answer
    assert db_state() == before
    # The untampered token, sent the same way, is a good hint: the tampering was the fault.
    genuine = browser.get(AUTHORIZE, params=rp.auth_params(id_token_hint=id_token))
    assert "code" in query(genuine.headers["Location"])


def test_key_set_has_the_signing_kid(live_server):
    kids = {k["kid"] for k in requests.get(live_server(JWKS), timeout=10).json()["keys"]}
    assert keystore.signing_key()[0] in kids
