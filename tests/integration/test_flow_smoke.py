from tests.factories import make_client, make_member
from tests.flows import RelyingParty, sign_in


def test_code_flow_over_http(live_server):
    member = make_member()
    client, secret = make_client()
    rp = RelyingParty(live_server.url, client.client_id, secret)
    params, _ = sign_in(live_server.url, rp, member.email, scope="openid profile offline_access")
    response = rp.exchange(params["code"])
    assert response.status_code == 200, response.text
    body = response.json()
    assert {"access_token", "id_token", "refresh_token"} <= body.keys()
