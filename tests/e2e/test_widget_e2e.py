"""The hosted widget in a real browser: a host page on its own origin loads the provider's script
and shows a profile card (or a roster grid) in a shadow root.

Chromium resolves `*.example.test` to 127.0.0.1 (`--host-resolver-rules`), so the host page has a
real domain name as its Origin: `widgets.example.test:<port>` is the publishable key's registered
domain, `other.example.test:<port>` is not, and `images.example.test:<port>` serves the avatars.
The host pages come from a small HTTP server of their own (a port of its own, so a cross-origin
page as a real site is). Screenshots under artifacts/e2e/<test>/."""

from __future__ import annotations

import html
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

import pytest
import requests

from app.core.extensions import db
from app.models import ApiUsage, Profile
from app.services import rosters
from app.services.apikeys import revoke_key
from tests.api_support import make_catalog, uid
from tests.conftest import ROOT, free_port, start_server
from tests.e2e.conftest import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, TIMEOUT_MS, PageProblems, Shots
from tests.factories import PASSWORD, make_member
from tests.key_support import make_key, make_roster

HOST_RULES = "--host-resolver-rules=MAP *.example.test 127.0.0.1"
WARNING_PREFIX = "Credits ID widget:"
AVATAR_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="112" height="112" viewBox="0 0 112 112">'
    '<rect width="112" height="112" fill="#5b3fd6"/><text x="56" y="70" font-size="44" font-family="sans-serif" '
    'fill="#fff" text-anchor="middle">AM</text></svg>'
)
# Rules a careless or hostile host page may carry; none of them may reach inside the card.
HOSTILE_CSS = """
* { all: unset; color: red !important; }
html { font-size: 40px !important; }
head, script, style, title { display: none !important; }
body { display: block; font: italic 30px/3 serif; letter-spacing: 6px; text-transform: uppercase; word-spacing: 20px; }
div { display: none; }
article, h3, h4, ul, li, p, a, img, span, strong, time { display: inline !important; margin: 40px !important;
  padding: 40px !important; border: 5px dotted red !important; font-size: 50px !important; color: lime !important; }
img { width: 300px !important; height: 10px !important; }
a { color: yellow !important; text-decoration: none !important; }
:root { --bg: red; --fg: red; --line: red; --link: red; }
#before, #after { display: block !important; }
"""
# What the card's look depends on, read from every node of its shadow tree.
STYLE_PROPERTIES = [
    "display",
    "color",
    "background-color",
    "font-family",
    "font-size",
    "font-style",
    "font-weight",
    "line-height",
    "letter-spacing",
    "text-transform",
    "margin-top",
    "padding-top",
    "border-top-width",
    "border-top-style",
    "width",
    "height",
    "visibility",
]


def to_docs(locator, name: str) -> None:
    """UPDATE_DOCS_SCREENSHOTS=1 refreshes the pictures in docs/widgets.md from these tests."""
    if os.environ.get("UPDATE_DOCS_SCREENSHOTS"):
        locator.screenshot(path=str(ROOT / "docs" / "img" / name))


# -- the host site --------------------------------------------------------------------------------


@dataclass
class HostSite:
    """Pages of a site that embeds the widget: `pages[path] = (html, extra headers)`; `/host.css`
    is the site's own style sheet, `/avatars/<name>.svg` an image host."""

    port: int
    pages: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)
    css: str = ""

    def url(self, host: str, path: str) -> str:
        return f"http://{host}.example.test:{self.port}{path}"

    @property
    def domain(self) -> str:
        return f"widgets.example.test:{self.port}"


def _site_handler(site: HostSite):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            path = urlsplit(self.path).path
            if path in site.pages:
                body, headers = site.pages[path][0].encode(), {"Content-Type": "text/html; charset=utf-8"}
                headers.update(site.pages[path][1])
            elif path == "/host.css":
                body, headers = site.css.encode(), {"Content-Type": "text/css"}
            elif path.startswith("/avatars/"):
                body, headers = AVATAR_SVG.encode(), {"Content-Type": "image/svg+xml"}
            elif path == "/favicon.ico":
                body, headers = b"", {"Content-Type": "image/x-icon"}
            else:
                self.send_error(404)
                return
            self.send_response(200)
            for name, value in {**headers, "Content-Length": str(len(body)), "Cache-Control": "no-store"}.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    return Handler


@pytest.fixture(scope="module")
def site() -> Iterator[HostSite]:
    port = free_port()
    host = HostSite(port)
    server = ThreadingHTTPServer(("127.0.0.1", port), _site_handler(host))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield host
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def fresh_site(site):
    site.pages.clear()
    site.css = ""


def host_page(
    provider: str,
    body: str,
    *,
    title: str = "Our artists",
    stylesheet: bool = False,
) -> str:
    """A host page: a heading, text before and after the widget markup, the script at the end."""
    link = '<link rel="stylesheet" href="/host.css">' if stylesheet else ""
    return (
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)}</title>{link}</head>"
        f"<body><h1 id=heading>{html.escape(title)}</h1><p id=before>Text before the card.</p>{body}"
        f"<p id=after>Text after the card.</p>"
        f'<script src="{provider}/embed/v1/widget.js" async></script></body></html>'
    )


def card_markup(profile_id: str, key: str, *, element_id: str = "card", extra: str = "", tag: str = "div") -> str:
    """The snippet's element, with fallback content inside (shown when no card is)."""
    return (
        f'<{tag} id="{element_id}" data-credits-profile="{profile_id}" data-credits-key="{key}" {extra}>'
        f'<a class="fallback" href="https://credits.example.com/">Credits on Credits ID</a></{tag}>'
    )


# -- the browser ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def host_browser(chromium):
    """Chromium with `*.example.test` pointing at this machine (launched by the session's Playwright)."""
    browser = chromium.browser_type.launch(
        executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, HOST_RULES], timeout=TIMEOUT_MS
    )
    yield browser
    browser.close()


class Console:
    """What the page's console and scripts said."""

    def __init__(self, page):
        self.messages: list[tuple[str, str]] = []
        self.errors: list[str] = []
        page.on("console", lambda msg: self.messages.append((msg.type, msg.text)))
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))

    @property
    def widget_warnings(self) -> list[str]:
        return [text for kind, text in self.messages if text.startswith(WARNING_PREFIX)]

    def assert_quiet(self) -> None:
        assert self.errors == [], self.errors
        assert self.widget_warnings == [], self.widget_warnings


@pytest.fixture
def open_page(host_browser, request):
    """A fresh context and page with the given viewport and colour scheme; screenshots of each."""
    made = []

    def make(width: int = 1100, height: int = 900, color_scheme: str = "light", clipboard_origin: str | None = None):
        context = host_browser.new_context(
            viewport={"width": width, "height": height}, locale="en-US", color_scheme=color_scheme
        )
        context.set_default_timeout(TIMEOUT_MS)
        context.set_default_navigation_timeout(TIMEOUT_MS)
        if clipboard_origin:
            context.grant_permissions(["clipboard-read", "clipboard-write"], origin=clipboard_origin)
        page = context.new_page()
        page.problems = PageProblems(page)
        page.console_log = Console(page)
        made.append((context, page))
        return page

    yield make
    report = getattr(request.node, "rep_call", None)
    for n, (context, page) in enumerate(made):
        if report is not None and report.failed:
            try:
                folder = ARTIFACTS / request.node.name
                folder.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(folder / f"failed-{n}.png"), full_page=True)
            except Exception:
                pass
        context.close()


def shots_for(page, request, suffix: str = "") -> Shots:
    return Shots(page, ARTIFACTS / f"{request.node.name}{suffix}")


# -- reading the card -----------------------------------------------------------------------------


def wait_for_card(page, selector: str = "#card") -> None:
    page.wait_for_function(
        "s => { const e = document.querySelector(s); return !!(e && e.shadowRoot && e.shadowRoot.querySelector('article')); }",
        arg=selector,
    )


def card_text(page, selector: str = "#card") -> str:
    return page.evaluate("s => document.querySelector(s).shadowRoot.textContent", selector)


def wait_for_the_warning(page) -> None:
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while not page.console_log.widget_warnings:
        assert time.monotonic() < deadline, "the widget never warned"
        page.wait_for_timeout(50)
    page.wait_for_load_state("networkidle")  # every request the widget made has ended


def assert_nothing_rendered(page, selector: str = "#card") -> None:
    """No shadow root (so the element's own content still shows), and the page around it intact."""
    state = page.evaluate(
        """s => { const e = document.querySelector(s);
        return {shadow: e.shadowRoot !== null, fallback: e.querySelector('a.fallback') ? e.querySelector('a.fallback').offsetHeight : -1,
                before: document.getElementById('before').textContent, after: document.getElementById('after').textContent,
                heading: document.getElementById('heading').offsetHeight}; }""",
        selector,
    )
    assert state["shadow"] is False, "a card (or an empty shadow root) was attached"
    assert state["fallback"] > 0, "the element's own content should still show"
    assert state["before"] == "Text before the card." and state["after"] == "Text after the card."
    assert state["heading"] > 0


def meter(key) -> int:
    db.session.expire_all()
    return db.session.scalar(
        db.select(db.func.coalesce(db.func.sum(ApiUsage.count), 0)).where(ApiUsage.key_id == key.id)
    )


def card_requests(live_server, method: str = "GET") -> int:
    """Requests the provider answered at /embed/v1/cards, from its access log."""
    return len(re.findall(rf'"method": "{method}", "path": "/embed/v1/cards"', live_server.log_text()))


@pytest.fixture
def catalog(site):
    made = make_catalog(credits=12)
    ada = db.session.get(Profile, made.mine)
    ada.avatar_url = site.url("images", "/avatars/ada.svg")
    db.session.commit()
    return made


@pytest.fixture
def publishable(site):
    return make_key("publishable", domains=[site.domain], name="Widget key")


# -- the card -------------------------------------------------------------------------------------


def test_the_card_shows_the_profile_inside_a_shadow_root_and_is_metered(
    live_server, site, catalog, publishable, open_page, request
):
    key, value = publishable
    spacer = '<p id=spacer class="spacer">Scroll down for the card.</p>'
    site.css = ".spacer { height: 2400px; }"
    site.pages["/artist"] = (host_page(live_server.url, spacer + card_markup(catalog.mine, value), stylesheet=True), {})
    page = open_page()
    shots = shots_for(page, request)
    asked = []
    page.on("request", lambda r: asked.append(r.url) if "/embed/v1/cards" in r.url else None)
    page.goto(site.url("widgets", "/artist"))
    page.wait_for_function("() => window[Symbol.for('credits-id-widget')] === true")  # the script ran
    page.wait_for_timeout(300)
    assert asked == [], "the card below the fold was fetched before it came near the viewport"
    assert page.evaluate("document.getElementById('card').shadowRoot") is None
    shots.take("below-the-fold-not-loaded", full_page=False)

    page.locator("#card").scroll_into_view_if_needed()
    wait_for_card(page)
    assert len(asked) == 1 and asked[0].endswith(f"/embed/v1/cards?ids={catalog.mine}")
    card = page.locator("#card article")
    card.locator("img.avatar").wait_for()
    page.wait_for_function("() => document.getElementById('card').shadowRoot.querySelector('img.avatar').complete")
    shots.take("card")
    to_docs(card, "widget-card.png")
    text = card_text(page)
    for expected in (
        "Ada Mine",
        "Stockholm, Sweden",
        "Lyricist",
        "Co-Producer",
        "Composer",
        "12 credits",
        "Track 11",
        "Album 11 · Lyricist · 2020",
        "Track 9",
        "No. 3 Top Producers",
        "No. 12 Top Songwriters",
        "See all credits on Credits ID",
    ):
        assert expected in text, expected
    assert "Track 8" not in text  # three recent credits
    mode = page.evaluate("document.getElementById('card').shadowRoot.mode")
    assert mode == "open"
    link = card.get_by_role("link", name="See all credits on Credits ID")
    assert link.get_attribute("href") == live_server.url + "/"
    avatar = card.locator("img.avatar")
    assert avatar.get_attribute("alt") == "Photo of Ada Mine"
    assert avatar.evaluate("img => img.naturalWidth") > 0  # the image host's avatar, loaded
    # The fallback content is no longer shown (a shadow root without a slot hides it).
    assert page.locator("#card a.fallback").is_hidden()
    assert meter(key) == 1  # one card, one metered request
    page.console_log.assert_quiet()
    assert page.problems.messages == [], page.problems.messages


def test_the_card_is_a_landmark_a_screen_reader_and_a_keyboard_can_use(
    live_server, site, catalog, publishable, open_page, request
):
    _, value = publishable
    body = '<label>Search <input id="search"></label>' + card_markup(catalog.mine, value)
    site.pages["/artist"] = (host_page(live_server.url, body), {})
    page = open_page()
    page.goto(site.url("widgets", "/artist"))
    wait_for_card(page)
    tree = page.locator("#card").aria_snapshot()
    for expected in (
        '- article "Ada Mine"',
        '- heading "Ada Mine" [level=3]',
        '- img "Photo of Ada Mine"',
        '- list "Top roles"',
        '- heading "Recent credits" [level=4]',
        '- list "Chart positions"',
        '- link "See all credits on Credits ID"',
    ):
        assert expected in tree, (expected, tree)
    page.locator("#search").focus()
    page.keyboard.press("Tab")
    focused = page.evaluate(
        """() => { const host = document.activeElement, inner = host.shadowRoot && host.shadowRoot.activeElement;
        const s = inner && getComputedStyle(inner);
        return {host: host.id, text: inner && inner.textContent, outline: s && s.outlineStyle, width: s && parseFloat(s.outlineWidth)}; }"""
    )
    assert focused["host"] == "card" and focused["text"] == "See all credits on Credits ID"
    assert focused["outline"] == "solid" and focused["width"] >= 2
    shots_for(page, request).take("keyboard-focus-on-the-card-link")
    # The host chooses the heading level that fits its outline.
    site.pages["/h2"] = (
        host_page(live_server.url, card_markup(catalog.mine, value, extra='data-credits-heading="2"')),
        {},
    )
    page.goto(site.url("widgets", "/h2"))
    wait_for_card(page)
    tree = page.locator("#card").aria_snapshot()
    assert '- heading "Ada Mine" [level=2]' in tree and '- heading "Recent credits" [level=3]' in tree


def test_the_card_follows_the_readers_dark_preference_unless_the_host_sets_one(
    live_server, site, catalog, publishable, open_page, request
):
    _, value = publishable
    body = card_markup(catalog.mine, value) + card_markup(
        catalog.mine, value, element_id="light", extra='data-credits-theme="light"'
    )
    site.pages["/artist"] = (host_page(live_server.url, body), {})
    page = open_page(color_scheme="dark")
    page.goto(site.url("widgets", "/artist"))
    wait_for_card(page)
    wait_for_card(page, "#light")
    colours = page.evaluate(
        """() => ['card', 'light'].map(id => { const a = document.getElementById(id).shadowRoot.querySelector('article');
        return [getComputedStyle(a).backgroundColor, getComputedStyle(a).color]; })"""
    )
    assert colours[0] == ["rgb(31, 32, 36)", "rgb(241, 241, 244)"]  # dark
    assert colours[1] == ["rgb(255, 255, 255)", "rgb(29, 29, 31)"]  # forced light
    shots_for(page, request).take("dark-and-forced-light")


@pytest.mark.parametrize("width", [320, 390])
def test_the_card_fits_a_phone(live_server, site, catalog, publishable, open_page, request, width):
    _, value = publishable
    db.session.get(Profile, catalog.mine).name = "Ada Mine-Lovelace Featuring A Rather Long Stage Name Indeed"
    db.session.commit()
    site.pages["/artist"] = (host_page(live_server.url, card_markup(catalog.mine, value)), {})
    page = open_page(width=width, height=800)
    page.goto(site.url("widgets", "/artist"))
    wait_for_card(page)
    fit = page.evaluate(
        """() => { const a = document.getElementById('card').shadowRoot.querySelector('article'), r = a.getBoundingClientRect();
        return {page: document.documentElement.scrollWidth, inner: innerWidth, right: r.right, left: r.left,
                overflow: a.scrollWidth - a.clientWidth}; }"""
    )
    assert fit["page"] <= fit["inner"], "the card made the page scroll sideways"
    assert fit["left"] >= 0 and fit["right"] <= width and fit["overflow"] <= 0
    shots_for(page, request).take(f"phone-{width}px")
    page.console_log.assert_quiet()


def test_hostile_host_css_does_not_change_the_card(live_server, site, catalog, publishable, open_page, request):
    _, value = publishable
    site.css = HOSTILE_CSS
    # The element is a <section>: `div { display: none }` would hide a <div> element itself (the page's
    # to hide), and must not reach the card's own <div>s.
    element = card_markup(catalog.mine, value, tag="section")
    site.pages["/clean"] = (host_page(live_server.url, element), {})
    site.pages["/hostile"] = (host_page(live_server.url, element, stylesheet=True), {})
    looks = []
    for path in ("/clean", "/hostile"):
        page = open_page()
        page.goto(site.url("widgets", path))
        wait_for_card(page)
        page.wait_for_function("() => document.getElementById('card').shadowRoot.querySelector('img.avatar').complete")
        looks.append(
            page.evaluate(
                # The root fills the width the page gives the element (its layout): the card inside does not.
                # Each node's box is measured from the card's corner: where the card sits is the page's.
                """props => { const shadow = document.getElementById('card').shadowRoot;
                const corner = shadow.querySelector('article').getBoundingClientRect();
                return [...shadow.querySelectorAll('*')].map(n => {
                  const s = getComputedStyle(n), r = n.getBoundingClientRect(), root = n.classList.contains('root');
                  return [n.tagName, ...props.map(p => p === 'width' && root ? '' : s.getPropertyValue(p)),
                          root ? '' : [r.left - corner.left, r.top - corner.top, r.width, r.height].join(' ')]; }); }""",
                STYLE_PROPERTIES,
            )
        )
        shots_for(page, request, suffix=path.replace("/", "-")).take(path.strip("/"))
        if path == "/hostile":  # the hostile rules did apply to the page itself
            assert page.evaluate("getComputedStyle(document.getElementById('before')).color") == "rgb(0, 255, 0)"
    assert len(looks[0]) > 20
    for clean, hostile in zip(looks[0], looks[1], strict=True):
        assert clean == hostile, (clean, hostile)


def test_the_roster_grid_is_one_request_and_one_count(live_server, site, catalog, publishable, open_page, request):
    key, value = publishable
    ids = f"{catalog.other}, {catalog.mine},{uid(99, 1)}"
    body = f'<section id="roster" data-credits-profiles="{ids}" data-credits-key="{value}"></section>'
    site.pages["/roster"] = (host_page(live_server.url, body, title="Our roster"), {})
    before = card_requests(live_server), card_requests(live_server, "OPTIONS")
    page = open_page()
    page.goto(site.url("widgets", "/roster"))
    wait_for_card(page, "#roster")
    page.wait_for_load_state("networkidle")
    names = page.evaluate(
        "() => [...document.getElementById('roster').shadowRoot.querySelectorAll('article .name')].map(n => n.textContent)"
    )
    assert names == ["Otto Other", "Ada Mine"]  # in the order asked; the unknown id left out
    boxes = page.evaluate(
        "() => [...document.getElementById('roster').shadowRoot.querySelectorAll('article')].map(a => a.getBoundingClientRect().top)"
    )
    assert boxes[0] == boxes[1], "the cards should sit side by side in the grid"
    tree = page.locator("#roster").aria_snapshot()
    assert '- list "Profiles"' in tree and '- link "Ada Mine"' in tree
    assert card_requests(live_server) - before[0] == 1 and card_requests(live_server, "OPTIONS") - before[1] <= 1
    assert meter(key) == 1
    assert page.console_log.widget_warnings == [f"{WARNING_PREFIX} no profile with the id(s) asked for"]
    shots_for(page, request).take("roster-grid")
    to_docs(page.locator("#roster"), "widget-roster.png")
    phone = open_page(width=320, height=800)
    phone.goto(site.url("widgets", "/roster"))
    wait_for_card(phone, "#roster")
    assert phone.evaluate("document.documentElement.scrollWidth") <= 320
    shots_for(phone, request, suffix="-phone").take("roster-grid-320px")


def roster_requests(live_server) -> int:
    """GET requests the provider answered under /embed/v1/rosters/, from its access log."""
    return len(re.findall(r'"method": "GET", "path": "/embed/v1/rosters/', live_server.log_text()))


def roster_names(page, selector: str) -> list[str]:
    return page.evaluate(
        "s => [...document.querySelector(s).shadowRoot.querySelectorAll('article .name')].map(n => n.textContent)",
        selector,
    )


def test_a_roster_id_feeds_the_grid_with_its_owners_key(live_server, site, catalog, open_page, request):
    """The snippet copied from the roster's page on the account page, with the owner's publishable
    key put in: the roster's cards in its order, a page of 24 a request; a profile taken off the
    roster leaves the grid; another member's key, or an empty roster, shows nothing."""
    owner = make_member(role="developer")
    key, value = make_key("publishable", domains=[site.domain], owner=owner, name="Roster key")
    extra = [uid(100 + n, 1) for n in range(26)]
    db.session.add_all([Profile(id=pid, name=f"Zed Artist {n:02d}") for n, pid in enumerate(extra)])
    db.session.commit()
    roster = make_roster(owner, profiles=(catalog.other, catalog.mine, *extra))

    page = open_page(clipboard_origin=live_server.url)
    page.goto(live_server(f"/login?next=/account/rosters/{roster.id}"))
    page.get_by_label("Email").fill(owner.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**/account/rosters/{roster.id}")
    page.locator("button[data-copy=roster-snippet]").click()
    snippet = page.evaluate("navigator.clipboard.readText()")
    assert f'data-credits-roster="{roster.id}"' in snippet and f'src="{live_server.url}/embed/v1/widget.js"' in snippet
    element = snippet.splitlines()[0].replace("mpk_...", value).replace("></section>", ' id="roster"></section>')
    site.pages["/our-roster"] = (host_page(live_server.url, element, title="Our roster"), {})

    before = roster_requests(live_server)
    host = open_page()
    host.goto(site.url("widgets", "/our-roster"))
    wait_for_card(host, "#roster")
    host.wait_for_load_state("networkidle")
    names = roster_names(host, "#roster")
    assert names == ["Ada Mine", "Otto Other", *(f"Zed Artist {n:02d}" for n in range(26))]  # by name
    assert roster_requests(live_server) - before == 2  # 24 cards, then 4
    assert meter(key) == 2
    host.console_log.assert_quiet()
    assert host.problems.messages == []
    shots_for(host, request).take("roster-by-id")

    rosters.remove_profile(roster, catalog.other, actor=owner)
    db.session.commit()
    host.reload()
    wait_for_card(host, "#roster")
    host.wait_for_load_state("networkidle")
    assert "Otto Other" not in roster_names(host, "#roster") and len(roster_names(host, "#roster")) == 27

    # Another member's key with this roster id: the roster is not theirs - nothing, one warning.
    _, stranger = make_key("publishable", domains=[site.domain], name="Someone else's")
    fallback = '<a class="fallback" href="https://credits.example.com/">Our roster on Credits ID</a>'
    site.pages["/not-mine"] = (
        host_page(
            live_server.url,
            f'<section id="card" data-credits-roster="{roster.id}" data-credits-key="{stranger}">{fallback}</section>',
        ),
        {},
    )
    other = open_page()
    other.goto(site.url("widgets", "/not-mine"))
    wait_for_the_warning(other)
    assert_nothing_rendered(other)
    assert other.console_log.widget_warnings == [
        f"{WARNING_PREFIX} the card could not be shown: HTTP 404: no roster with that id is the key owner's"
    ]
    shots_for(other, request, suffix="-not-mine").take("nothing-for-another-members-key")

    # An empty roster, and a roster id that is not one: nothing, one warning each.
    empty = make_roster(owner, name="Empty")
    for path, roster_id, warning in (
        ("/empty", empty.id, "the roster holds no profile"),
        ("/junk", "our-roster", "data-credits-roster must hold a roster id (a UUID)"),
    ):
        site.pages[path] = (
            host_page(
                live_server.url,
                f'<section id="card" data-credits-roster="{roster_id}" data-credits-key="{value}">{fallback}</section>',
            ),
            {},
        )
        shown = open_page()
        shown.goto(site.url("widgets", path))
        wait_for_the_warning(shown)
        assert_nothing_rendered(shown)
        assert shown.console_log.widget_warnings == [f"{WARNING_PREFIX} {warning}"]


def test_cards_that_come_into_view_together_share_one_request(
    live_server, site, catalog, publishable, open_page, request
):
    key, value = publishable
    body = card_markup(catalog.mine, value) + card_markup(catalog.other, value, element_id="second")
    site.pages["/two"] = (host_page(live_server.url, body), {})
    before = card_requests(live_server)
    page = open_page()
    page.goto(site.url("widgets", "/two"))
    wait_for_card(page)
    wait_for_card(page, "#second")
    page.wait_for_load_state("networkidle")
    assert card_requests(live_server) - before == 1 and meter(key) == 1
    assert "Otto Other" in card_text(page, "#second") and "Ada Mine" in card_text(page)
    page.console_log.assert_quiet()


def test_a_strict_host_csp_still_shows_the_card(live_server, site, catalog, publishable, open_page, request):
    """The host allows scripts and connections to the provider only, style sheets of its own only
    (no 'unsafe-inline'), and Trusted Types: the card's constructable sheet is allowed, a <style>
    element in a shadow root would not be (checked here too, so the test can tell them apart)."""
    _, value = publishable
    csp = (
        f"default-src 'none'; script-src {live_server.url}; connect-src {live_server.url}; style-src 'self'; "
        f"img-src {site.url('images', '')}; base-uri 'none'; object-src 'none'; require-trusted-types-for 'script'"
    )
    site.pages["/strict"] = (
        host_page(live_server.url, card_markup(catalog.mine, value), stylesheet=True),
        {"Content-Security-Policy": csp},
    )
    site.css = "body { font-family: serif; }"
    page = open_page()
    page.add_init_script(
        "document.addEventListener('securitypolicyviolation', e => "
        "(window.violations = window.violations || []).push(e.violatedDirective + ' ' + e.blockedURI));"
    )
    response = page.goto(site.url("widgets", "/strict"))
    assert response.headers["content-security-policy"] == csp
    wait_for_card(page)
    styled = page.evaluate(
        "() => getComputedStyle(document.getElementById('card').shadowRoot.querySelector('article')).borderTopLeftRadius"
    )
    assert styled == "12px"  # the card's own style sheet applies
    assert page.evaluate("window.violations || []") == []
    shots_for(page, request).take("strict-csp")
    page.console_log.assert_quiet()
    assert page.problems.messages == [], page.problems.messages
    # The control: under this policy a <style> element in a shadow root is refused.
    colour = page.evaluate(
        """() => { const d = document.createElement('div'); document.body.append(d);
        const root = d.attachShadow({mode: 'open'}), style = document.createElement('style'), p = document.createElement('p');
        style.textContent = 'p { color: rgb(1, 2, 3); }'; root.append(style, p);
        return getComputedStyle(p).color; }"""
    )
    assert colour != "rgb(1, 2, 3)"
    page.wait_for_function("() => (window.violations || []).some(v => v.startsWith('style-src'))")


# -- nothing on failure ---------------------------------------------------------------------------

FAILURES = [
    "unregistered-domain",
    "revoked-key",
    "unknown-profile",
    "not-a-profile-id",
    "rate-limited",
    "malformed-data",
]


def _spend_the_budget(live_server, value: str, domain: str, profile_id: str) -> None:
    """The key's 300 requests of this minute, from the page's domain."""
    url = live_server(f"/embed/v1/cards?ids={profile_id}")
    headers = {"x-api-key": value, "Origin": f"http://{domain}"}
    with requests.Session() as session:
        statuses = [session.get(url, headers=headers, timeout=60).status_code for _ in range(300)]
        assert statuses.count(200) == 300, statuses
        assert session.get(url, headers=headers, timeout=60).status_code == 429


@pytest.mark.parametrize("failure", FAILURES)
def test_on_any_failure_nothing_shows_and_the_page_is_intact(
    live_server, site, catalog, publishable, open_page, request, failure
):
    key, value = publishable
    host, profile_id = "widgets", catalog.mine
    page = open_page()
    if failure == "unregistered-domain":
        host = "other"
    elif failure == "revoked-key":
        revoke_key(key)
        db.session.commit()
    elif failure == "unknown-profile":
        profile_id = uid(99, 1)
    elif failure == "not-a-profile-id":
        profile_id = "ada-mine"
    elif failure == "rate-limited":
        _spend_the_budget(live_server, value, site.domain, catalog.mine)
    elif failure == "malformed-data":
        page.route(
            "**/embed/v1/cards?*",
            lambda route: route.fulfill(
                status=200,
                headers={"Access-Control-Allow-Origin": "*", "Content-Type": "application/json"},
                body=json.dumps({"result": "ok", "code": 200, "data": [{"id": catalog.mine, "name": ["not", "text"]}]}),
            ),
        )
    site.pages["/artist"] = (host_page(live_server.url, card_markup(profile_id, value)), {})
    page.goto(site.url(host, "/artist"))
    wait_for_the_warning(page)
    assert_nothing_rendered(page)
    assert len(page.console_log.widget_warnings) == 1, page.console_log.widget_warnings
    assert page.console_log.errors == []
    shots_for(page, request).take(f"nothing-{failure}")
    return_reason = {
        "unregistered-domain": "HTTP 403",
        "revoked-key": "HTTP 401",
        "unknown-profile": "no profile",
        "not-a-profile-id": "must hold profile ids",
        "rate-limited": "HTTP 429",
        "malformed-data": "not a list of cards",
    }[failure]
    assert return_reason in page.console_log.widget_warnings[0]


def test_many_failures_on_one_page_warn_once(live_server, site, catalog, publishable, open_page, request):
    _, value = publishable
    revoked_key, revoked = make_key("publishable", domains=[site.domain])
    revoke_key(revoked_key)
    db.session.commit()
    _, secret = make_key()
    body = (
        card_markup(uid(99, 1), value)
        + card_markup(catalog.mine, revoked, element_id="revoked")
        + card_markup(catalog.mine, secret, element_id="secret")
        + card_markup("not-an-id", value, element_id="junk")
        + card_markup(catalog.mine, value, element_id="good", tag="p")
        + card_markup(catalog.mine, value, element_id="unsupported", tag="li")
    )
    site.pages["/many"] = (host_page(live_server.url, body), {})
    page = open_page()
    page.goto(site.url("widgets", "/many"))
    wait_for_card(page, "#good")  # a paragraph may hold a card too
    wait_for_the_warning(page)
    page.wait_for_timeout(500)
    for selector in ("#card", "#revoked", "#secret", "#junk"):
        assert_nothing_rendered(page, selector)
    assert page.evaluate("document.getElementById('unsupported').shadowRoot") is None  # <li> takes no shadow root
    assert len(page.console_log.widget_warnings) == 1, page.console_log.widget_warnings
    assert page.console_log.errors == []
    shots_for(page, request).take("many-failures-one-warning")


def test_nothing_shows_when_the_provider_is_down(settings, tmp_path, site, catalog, publishable, open_page, request):
    """The script came from the provider, which then stopped before the card came into view."""
    _, value = publishable
    port = free_port()
    provider = start_server(settings, port, tmp_path / "stopped.log")
    try:
        spacer = '<p class="spacer">Scroll down.</p>'
        site.css = ".spacer { height: 2400px; }"
        site.pages["/artist"] = (
            host_page(f"http://127.0.0.1:{port}", spacer + card_markup(catalog.mine, value), stylesheet=True),
            {},
        )
        page = open_page()
        page.goto(site.url("widgets", "/artist"))
        page.wait_for_function("() => window[Symbol.for('credits-id-widget')] === true")
    finally:
        provider.terminate()
        provider.wait(timeout=30)
    page.locator("#card").scroll_into_view_if_needed()
    wait_for_the_warning(page)
    assert_nothing_rendered(page)
    assert page.console_log.widget_warnings == [
        f"{WARNING_PREFIX} the card could not be shown: the service could not be reached"
    ]
    assert page.console_log.errors == []
    shots_for(page, request).take("provider-down")


# -- the console's snippet, pasted ----------------------------------------------------------------


def test_the_snippet_from_the_console_works_as_pasted(live_server, site, catalog, open_page, request):
    from tests.key_support import fund

    dev = make_member(role="developer")
    fund(dev)  # a key is served while its owner's account has credits (docs/billing.md)
    page = open_page(clipboard_origin=live_server.url)
    shots = shots_for(page, request)
    page.goto(live_server("/login?next=/console/api-keys"))
    page.get_by_label("Email").fill(dev.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/console/api-keys")
    page.get_by_label("Name", exact=True).fill("Artist pages")
    page.get_by_role("radio", name="Publishable (mpk_)").check()
    page.locator("#domains").fill(site.domain)
    with page.expect_navigation():
        page.get_by_role("button", name="Create key").click()
    page.locator("button[data-copy=widget-snippet]").click()
    snippet = page.evaluate("navigator.clipboard.readText()")
    value = page.locator("#api-key").inner_text().strip()
    assert f'data-credits-key="{value}"' in snippet and f'src="{live_server.url}/embed/v1/widget.js"' in snippet
    shots.take("console-snippet")
    page.get_by_role("link", name="I have copied it").click()
    detail_snippet = page.locator("#widget-snippet").inner_text()
    assert value not in detail_snippet and value[:12] + "…" in detail_snippet  # the value was shown once
    shots.take("console-key-page-snippet")

    site.pages["/pasted"] = (
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>Pasted</title></head><body>"
        "<h1 id=heading>Pasted</h1><p id=before>Text before the card.</p>"
        + snippet.replace("PROFILE_ID", catalog.mine)
        + "<p id=after>Text after the card.</p></body></html>",
        {},
    )
    host = open_page()
    host.goto(site.url("widgets", "/pasted"))
    wait_for_card(host, "[data-credits-profile]")
    assert "Ada Mine" in card_text(host, "[data-credits-profile]")
    shots_for(host, request, suffix="-pasted").take("pasted-snippet")
    host.console_log.assert_quiet()
