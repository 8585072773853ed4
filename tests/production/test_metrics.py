"""Prometheus metrics at /metrics, in multiprocess mode under granian: whichever worker answers
the scrape, it reports the sum over all workers."""

from __future__ import annotations

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import free_port
from tests.factories import make_client, make_member
from tests.flows import Browser, RelyingParty, sign_in
from tests.production.servers import running


def scrape(server) -> dict[tuple, float]:
    response = requests.get(server.metrics_url, timeout=30)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: dict, name: str, **labels) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture(scope="module")
def server(app, settings, tmp_path_factory):
    metrics_dir = tmp_path_factory.mktemp("prometheus")
    metrics_port = free_port()
    with running(
        settings,
        tmp_path_factory.mktemp("metrics-logs"),
        workers=2,
        threads=4,
        PROMETHEUS_MULTIPROC_DIR=str(metrics_dir),
        METRICS_BIND=f"127.0.0.1:{metrics_port}",
    ) as server:
        server.metrics_dir = metrics_dir
        server.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
        yield server


def test_the_public_port_does_not_serve_metrics_without_a_token(server):
    """Traffic volumes and client ids are for the operator's scraper only: METRICS_BIND is a port
    of its own, and the main port answers 404 (nothing advertised) while no METRICS_TOKEN is set."""
    assert requests.get(server("/metrics"), timeout=30).status_code == 404
    assert requests.get(server("/metrics"), headers={"Authorization": "Bearer "}, timeout=30).status_code == 404
    assert "credits_id_http_requests_total" in requests.get(server.metrics_url, timeout=30).text


def test_counts_the_sign_in_story_across_workers(server):
    member = make_member()
    client, secret = make_client()
    rp = RelyingParty(server.url, client.client_id, secret)

    # A failed login, then a good one with consent; code redeemed, refreshed, refresh replayed.
    browser = Browser(server.url)
    browser.authorize(rp.auth_params(scope="openid offline_access"))
    assert browser.login(member.email, password="not the password").status_code == 401
    params, browser = sign_in(server.url, rp, member.email, scope="openid offline_access", browser=browser)
    first = rp.exchange(params["code"]).json()
    assert rp.exchange(params["code"]).status_code == 400  # code replayed: reuse, family revoked
    params, _ = sign_in(server.url, rp, member.email, scope="openid offline_access", browser=browser)
    pair = rp.exchange(params["code"]).json()
    assert rp.refresh(pair["refresh_token"]).status_code == 200
    assert rp.refresh(pair["refresh_token"]).status_code == 400  # refresh replayed: reuse
    # A denied consent.
    page = browser.authorize(rp.auth_params(scope="openid", prompt="consent"))
    assert 'name="decision"' in page.text
    assert "error=access_denied" in browser.consent(allow=False).headers["Location"]
    assert first["access_token"]

    scrapes = [scrape(server) for _ in range(6)]
    # Every scrape, whichever worker served it, tells the same totals.
    for samples in scrapes:
        assert value(samples, "credits_id_logins_total", result="ok") == 1
        assert value(samples, "credits_id_logins_total", result="failed") == 1
        assert value(samples, "credits_id_consents_total", decision="granted") == 1
        assert value(samples, "credits_id_consents_total", decision="denied") == 1
        assert value(samples, "credits_id_tokens_total", event="issued") == 2
        assert value(samples, "credits_id_tokens_total", event="refreshed") == 1
        # code reuse revoked the first pair; refresh reuse revoked the second family's two rows.
        assert value(samples, "credits_id_tokens_total", event="revoked") == 3
        assert value(samples, "credits_id_reuse_detected_total", kind="code") == 1
        assert value(samples, "credits_id_reuse_detected_total", kind="refresh_token") == 1
        assert (
            value(samples, "credits_id_http_requests_total", endpoint="oauth.token", method="POST", status="200") == 3
        )
        assert (
            value(samples, "credits_id_http_requests_total", endpoint="oauth.token", method="POST", status="400") == 2
        )
        assert value(samples, "credits_id_http_requests_total", endpoint="auth.login", method="POST", status="401") == 1
        assert value(samples, "credits_id_http_request_duration_seconds_count", endpoint="oauth.token") == 5
        assert value(samples, "credits_id_http_request_duration_seconds_bucket", endpoint="oauth.token", le="+Inf") == 5
    # Multiprocess mode: the workers' values live in files in PROMETHEUS_MULTIPROC_DIR.
    assert list(server.metrics_dir.glob("counter_*.db"))


def test_unknown_paths_share_one_series(server):
    for path in ("/no/such/page", "/another/one?x=1"):
        assert requests.get(server(path), timeout=30).status_code == 404
    invented = requests.request("FOOBAR", server("/no/such/page"), timeout=30)  # servers accept any token
    samples = scrape(server)
    assert value(samples, "credits_id_http_requests_total", endpoint="unmatched", method="GET", status="404") == 2
    assert (
        value(
            samples,
            "credits_id_http_requests_total",
            endpoint="unmatched",
            method="other",
            status=str(invented.status_code),
        )
        == 1
    )
    assert not any("no/such" in str(labels) or "FOOBAR" in str(labels) for _, labels in samples)


def test_metrics_token_guards_the_endpoint(app):
    client = app.test_client()
    assert client.get("/metrics").status_code == 404  # no token set: not served on this port at all
    app.config["METRICS_TOKEN"] = "scrape-secret"
    try:
        assert client.get("/metrics").status_code == 404
        assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 404
        response = client.get("/metrics", headers={"Authorization": "Bearer scrape-secret"})
        assert response.status_code == 200 and b"credits_id_http_requests_total" in response.data
    finally:
        app.config["METRICS_TOKEN"] = ""
