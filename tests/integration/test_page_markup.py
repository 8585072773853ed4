"""The markup people (and their screen readers) get, over HTTP against the live server: console
field errors tied to their inputs, per-row buttons that say which row they act on, the account
and signed-in pages' lists laid out as meant, and the sign-out page offering only what applies."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest

from app.core.extensions import db
from app.protocol.jwks import keystore
from tests.factories import make_client, make_member
from tests.flows import Browser, RelyingParty, sign_in
from tests.integration.console_support import post_form, signed_in

END_SESSION = "/api/auth/oauth2/endsession"
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


# -- a small DOM over the standard library's parser -------------------------------------------


@dataclass(eq=False)
class Node:
    tag: str
    attrs: dict[str, str]
    parent: Node | None = field(default=None, repr=False)
    children: list[Node | str] = field(default_factory=list, repr=False)

    @property
    def classes(self) -> list[str]:
        return self.attrs.get("class", "").split()

    def elements(self) -> list[Node]:
        return [c for c in self.children if isinstance(c, Node)]

    def find_all(self, tag: str | None = None, **attrs: str) -> list[Node]:
        found = []
        for child in self.elements():
            if (tag is None or child.tag == tag) and all(
                child.attrs.get(k.rstrip("_").replace("_", "-")) == v for k, v in attrs.items()
            ):
                found.append(child)
            found.extend(child.find_all(tag, **attrs))
        return found

    def find(self, tag: str | None = None, **attrs: str) -> Node:
        found = self.find_all(tag, **attrs)
        assert len(found) == 1, f"expected one <{tag} {attrs}>, found {len(found)}"
        return found[0]

    def text(self, spoken: bool = False) -> str:
        """The text content; `spoken`: as a screen reader reads it (aria-hidden parts left out)."""
        parts = []
        for child in self.children:
            if isinstance(child, str):
                parts.append(child)
            elif not (spoken and child.attrs.get("aria-hidden") == "true"):
                parts.append(child.text(spoken))
        return re.sub(r"\s+", " ", "".join(parts)).strip()


class TreeBuilder(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = self.current = Node("#document", {})

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: (v if v is not None else "") for k, v in attrs}, self.current)
        self.current.children.append(node)
        if tag not in VOID:
            self.current = node

    def handle_startendtag(self, tag, attrs):
        self.current.children.append(Node(tag, {k: (v if v is not None else "") for k, v in attrs}, self.current))

    def handle_endtag(self, tag):
        node = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:  # a stray end tag is ignored
            self.current = node.parent

    def handle_data(self, data):
        self.current.children.append(data)


def parse(html: str) -> Node:
    builder = TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def by_id(doc: Node, element_id: str) -> Node:
    return doc.find(id=element_id)


def described_by(doc: Node, element: Node) -> list[Node]:
    return [by_id(doc, i) for i in element.attrs.get("aria-describedby", "").split()]


def accessible_name(doc: Node, control: Node) -> str:
    """aria-labelledby, then aria-label, then (buttons) content or (inputs, selects) <label for>."""
    if "aria-labelledby" in control.attrs:
        return " ".join(by_id(doc, i).text(spoken=True) for i in control.attrs["aria-labelledby"].split())
    if control.attrs.get("aria-label", "").strip():
        return control.attrs["aria-label"].strip()
    if control.tag in ("button", "a"):
        return control.text(spoken=True)
    return " ".join(label.text(spoken=True) for label in doc.find_all("label", for_=control.attrs["id"]))


def assert_unique_ids(doc: Node) -> None:
    ids = [n.attrs["id"] for n in doc.find_all() if "id" in n.attrs]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


# -- console form errors ----------------------------------------------------------------------


def refused_registration(live_server, **broken):
    """The register form sent by a developer with one field `broken`: the page it comes back as."""
    browser = signed_in(live_server.url, make_member(role="developer").email)
    response = post_form(
        browser,
        "/console/apps/new",
        "/console/apps/new",
        {
            "name": "Form App",
            "redirect_uris": "https://a.example/cb",
            "client_type": "confidential",
            "auth_method": "client_secret_basic",
            "scopes": ["openid"],
            **broken,
        },
    )
    assert response.status_code == 400
    return parse(response.text)


def test_a_field_error_is_tied_to_its_input(live_server):
    doc = refused_registration(live_server, name="")
    assert_unique_ids(doc)

    name = doc.find("input", id="name")
    assert name.attrs.get("aria-invalid") == "true"
    errors = described_by(doc, name)
    assert errors and all("error" in e.classes for e in errors)
    assert "required" in " ".join(e.text() for e in errors).lower()
    # Every error shown in the field's box is one the input names.
    box = name.parent
    assert {id(e) for e in box.find_all(class_="error small")} == {id(e) for e in errors}

    # A valid field keeps its help text, and is not marked invalid.
    logo = doc.find("input", id="logo_url")
    assert "aria-invalid" not in logo.attrs
    assert [n.attrs["id"] for n in described_by(doc, logo)] == ["logo_url-help"]


def test_an_error_in_a_group_of_options_is_tied_to_the_group(live_server):
    doc = refused_registration(live_server, client_type="bogus")
    radios = doc.find_all("input", type="radio", name="client_type")
    assert radios and all(r.attrs.get("aria-invalid") == "true" for r in radios)
    group = radios[0].parent
    while group.tag != "fieldset":
        group = group.parent
    errors = described_by(doc, group)
    assert errors and all("error" in e.classes for e in errors) and "valid choice" in errors[0].text().lower()
    # The scope checkboxes had no error: not marked invalid; their help text still describes them.
    scopes = doc.find_all("input", type="checkbox", name="scopes")
    assert scopes and not any("aria-invalid" in s.attrs for s in scopes)


# -- per-row controls say which row they act on ------------------------------------------------


def test_member_rows_have_distinct_control_names(live_server):
    admin = make_member(role="admin", email="admin-markup@example.test")
    make_member(email="ana-markup@example.test")
    make_member(email="bo-markup@example.test")
    doc = parse(signed_in(live_server.url, admin.email).get("/console/users").text)
    assert_unique_ids(doc)
    rows = doc.find("table").find("tbody").find_all("tr")
    assert len(rows) >= 3
    names = []
    for row in rows:
        email = row.find_all("td")[0].find("a").text()
        links = [a for a in row.find_all("a") if "button" in a.classes]
        controls = row.find_all("button") + row.find_all("select") + links
        # role, membership, save; "Suspend…" (a link to the confirmation), never on the admin's own row
        assert len(controls) == (3 if email == admin.email else 4), email
        for control in controls:
            name = accessible_name(doc, control)
            assert email in name, (email, name)
            names.append(name)
    assert len(names) == len(set(names))
    assert all(th.text() for th in doc.find("table").find_all("th"))


def test_key_rows_have_distinct_retire_buttons_and_every_column_a_header(live_server, restore_keys):
    admin = make_member(role="admin")
    keystore.generate()
    keystore.generate()  # the newest signs; the two before it can be retired
    db.session.commit()
    doc = parse(signed_in(live_server.url, admin.email).get("/console/keys").text)
    assert_unique_ids(doc)  # one form a row: no repeated id="csrf_token"
    table = doc.find("table")
    headers = table.find("thead").find_all("th")
    assert len(headers) == 7 and all(th.text() for th in headers)
    names = []
    for row in table.find("tbody").find_all("tr"):
        kid = row.find("code").text()
        for button in row.find_all("a"):  # each leads to the retire confirmation (issue 21)
            name = accessible_name(doc, button)
            assert name.startswith("Retire") and kid in name, (kid, name)
            names.append(name)
    assert len(names) >= 2 and len(names) == len(set(names))


# -- account and signed-in pages --------------------------------------------------------------


def test_membership_list_items_are_not_badges(live_server):
    member = make_member(tier="basic")
    doc = parse(signed_in(live_server.url, member.email, "/account").get("/account").text)
    assert_unique_ids(doc)
    items = doc.find("ul", class_="tiers").find_all("li")
    assert len(items) >= 2
    assert not any("tier" in li.classes for li in items)  # .tier is the small uppercase badge
    current = [li for li in items if "current" in li.classes]
    assert len(current) == 1 and "your plan" in current[0].text()


@pytest.mark.parametrize("path", ["/signed-in", "/account"])
def test_facts_are_plain_term_and_description_pairs(live_server, path):
    """dl.facts is a two-column grid: anything but <dt>/<dd> children becomes a cell of its own."""
    member = make_member(tier="pro")
    doc = parse(signed_in(live_server.url, member.email, path).get(path).text)
    facts = doc.find("dl", class_="facts")
    children = facts.elements()
    assert [c.tag for c in children] == ["dt", "dd"] * (len(children) // 2) and children
    terms = [c.text() for c in children if c.tag == "dt"]
    assert "Email" in terms
    if path == "/signed-in":
        assert terms == ["Email", "Membership"]
        assert children[-1].find("span").classes == ["tier", "tier-pro"]  # the badge is still a badge


def test_signed_in_page_says_what_apps_can_read(live_server):
    member = make_member()
    text = parse(signed_in(live_server.url, member.email, "/signed-in").get("/signed-in").text).find("main").text()
    for what in ("name", "email", "credits", "analytics", "first-party"):
        assert what in text, what


def test_revoke_note_does_not_promise_a_consent_screen_for_first_party_apps(live_server):
    member = make_member()
    client, secret = make_client(name="Liner Notes")
    sign_in(
        live_server.url, RelyingParty(live_server.url, client.client_id, secret), member.email, scope="openid profile"
    )
    doc = parse(signed_in(live_server.url, member.email, "/account").get("/account").text)
    section = doc.find("section", aria_labelledby="apps-h")
    assert "Liner Notes" in section.text()  # the note is shown under a connected app
    note = section.find_all("p", class_="muted small")[-1].text()
    assert "first-party" in note and "must ask you again to sign you in" not in note


# -- sign-out confirmation ----------------------------------------------------------------------


def test_stay_signed_in_is_offered_only_to_someone_signed_in(live_server):
    member = make_member()
    signed_in_page = signed_in(live_server.url, member.email, "/signed-in").get(END_SESSION)
    assert signed_in_page.status_code == 200 and "Sign out of Credits ID?" in signed_in_page.text
    assert "Stay signed in" in signed_in_page.text

    anonymous = Browser(live_server.url).get(END_SESSION)
    assert anonymous.status_code == 200 and "not signed in" in anonymous.text
    assert "Stay signed in" not in anonymous.text
