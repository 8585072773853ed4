"""A single-page app in a real browser: a public client on its own origin signs the member in,
redeems the code with PKCE by fetch(), and calls userinfo with the token. Chromium enforces CORS,
so this shows what app/web/cors.py promises: the app's own origin reads the token answer, another
site's page does not, and bearer endpoints answer any origin."""

from __future__ import annotations

import html
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlencode, urlsplit

import pytest

from tests.conftest import free_port
from tests.factories import PASSWORD, make_client, make_member
from tests.flows import AUTHORIZE, TOKEN, USERINFO, RelyingParty

SCOPE = "openid profile email"

# The page's whole program: redeem the code from the URL if there is one, then read userinfo;
# or, on /probe, try the token endpoint with a made-up code. It writes what happened into #out.
SCRIPT = """
const cfg = JSON.parse(document.getElementById('cfg').textContent);
const out = document.getElementById('out');
const q = new URLSearchParams(location.search);
async function run() {
  const body = new URLSearchParams({grant_type: 'authorization_code', code: q.get('code') || 'made-up',
    redirect_uri: cfg.redirect_uri, client_id: cfg.client_id, code_verifier: cfg.verifier});
  let tokens;
  try {
    tokens = await (await fetch(cfg.token, {method: 'POST', body})).json();
  } catch (e) { out.textContent = 'token blocked: ' + e.name; return; }
  if (!tokens.access_token) { out.textContent = 'token error: ' + tokens.error; return; }
  const info = await (await fetch(cfg.userinfo, {headers: {Authorization: 'Bearer ' + tokens.access_token}})).json();
  out.textContent = 'signed in as ' + info.sub + ' (' + tokens.token_type + ')';
}
run();
"""


class SinglePageApp:
    """A static site on its own origin (a free port): /app is the page the provider sends the
    browser back to. `config` is what the page's script reads (the PKCE verifier included)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.origin = f"http://127.0.0.1:{self.port}"
        self.redirect_uri = self.origin + "/app"
        self.config: dict = {}
        app = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                if urlsplit(self.path).path not in ("/app", "/probe"):
                    self.send_error(404)
                    return
                page = (
                    "<!doctype html><html lang=en><head><meta charset=utf-8><title>SPA</title></head><body>"
                    f"<script type=application/json id=cfg>{html.escape(json.dumps(app.config), quote=False)}"
                    f"</script><p id=out></p><script>{SCRIPT}</script></body></html>"
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(page)))
                self.end_headers()
                self.wfile.write(page)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def spa():
    site = SinglePageApp()
    yield site
    site.close()


@pytest.fixture
def other_site():
    site = SinglePageApp()  # an origin no app registered
    yield site
    site.close()


def configure(site: SinglePageApp, live_server, client_id: str, redirect_uri: str, verifier: str) -> None:
    site.config.update(
        token=live_server(TOKEN),
        userinfo=live_server(USERINFO),
        client_id=client_id,
        redirect_uri=redirect_uri,
        verifier=verifier,
    )


def test_a_browser_app_signs_in_and_reads_userinfo_from_its_own_origin(live_server, spa, page):
    member = make_member(name="Sam Spa")
    client, _ = make_client(public=True, name="Pocket Credits", redirect_uris=[spa.redirect_uri])
    rp = RelyingParty(live_server.url, client.client_id, None, redirect_uri=spa.redirect_uri)
    params = rp.auth_params(scope=SCOPE)
    configure(spa, live_server, client.client_id, spa.redirect_uri, rp.verifier)

    page.goto(live_server(AUTHORIZE) + "?" + urlencode(params))
    page.get_by_label("Email").fill(member.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("button", name="Allow").click()
    page.wait_for_url(spa.redirect_uri + "?**")
    out = page.locator("#out")
    out.filter(has_text="signed in").or_(out.filter(has_text="blocked")).or_(out.filter(has_text="error")).wait_for()
    assert out.inner_text() == f"signed in as {member.sub} (Bearer)"


def test_another_sites_page_cannot_read_the_apps_token_answers(live_server, spa, other_site, page):
    """The same request from an origin the app did not register: the browser hides the answer."""
    client, _ = make_client(public=True, redirect_uris=[spa.redirect_uri])
    configure(other_site, live_server, client.client_id, spa.redirect_uri, "v" * 43)
    page.goto(other_site.origin + "/probe")
    out = page.locator("#out")
    out.filter(has_text="token").wait_for()
    assert out.inner_text() == "token blocked: TypeError"
    # From the app's own origin the same made-up code is an answer the page can read.
    configure(spa, live_server, client.client_id, spa.redirect_uri, "v" * 43)
    page.goto(spa.origin + "/probe")
    out.filter(has_text="token").wait_for()
    assert out.inner_text() == "token error: invalid_grant"
