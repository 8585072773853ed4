"""ID tokens, validated the way a relying party does: against the published key set (PyJWT)."""

import time

import jwt as pyjwt
import requests

from app.jwks import keystore
from tests.flows import JWKS, sign_in


def verify(live_server, id_token: str, audience: str) -> dict:
    jwks = pyjwt.PyJWKClient(live_server(JWKS))
    key = jwks.get_signing_key_from_jwt(id_token)
    return pyjwt.decode(id_token, key.key, algorithms=["RS256"], audience=audience, issuer=live_server.url,
                        options={"require": ["iss", "sub", "aud", "exp", "iat", "auth_time"]})


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


def test_a_tampered_id_token_does_not_verify(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email)
    id_token = rp.exchange(params["code"]).json()["id_token"]
    head, payload, signature = id_token.split(".")
    forged = ".".join([head, payload[:-4] + ("AAAA" if payload[-4:] != "AAAA" else "BBBB"), signature])
    try:
        verify(live_server, forged, rp.client_id)
    except pyjwt.PyJWTError:
        pass
    else:
        raise AssertionError("a tampered token verified")


def test_key_set_has_the_signing_kid(live_server):
    kids = {k["kid"] for k in requests.get(live_server(JWKS), timeout=10).json()["keys"]}
    assert keystore.signing_key()[0] in kids
