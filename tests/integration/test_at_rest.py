"""Nothing usable at rest: a copy of the database holds no secret, code or token in clear."""

from tests.factories import PASSWORD, db_state
from tests.flows import sign_in


def test_database_holds_only_hashes_after_a_full_flow(live_server, rp, member):
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid offline_access")
    code = params["code"]
    first = rp.exchange(code).json()
    second = rp.refresh(first["refresh_token"]).json()
    secrets = [
        code,
        first["access_token"],
        first["refresh_token"],
        second["access_token"],
        second["refresh_token"],
        rp.client_secret,
        PASSWORD,
    ]
    dump = "\n".join(" ".join(row) for rows in db_state().values() for row in rows)
    assert dump, "the dump is empty: the test would prove nothing"
    for value in secrets:
        assert value and value not in dump
