"""The developer documents and the API reference as pages (issue 50, item 7): drawn on the server
from the repository's files, raw HTML in a document escaped, links between documents kept inside."""

from __future__ import annotations

from app.web.api.openapi import openapi_document
from app.web.developer_docs import PAGES, reference
from app.web.markdown import slug, to_html


def test_each_document_is_a_page_and_nothing_else_is(client):
    for name in PAGES:
        response = client.get(f"/docs/{name}")
        assert response.status_code == 200 and "<script" not in response.get_data(as_text=True).split("<footer")[0]
    for name in ("operating", "../README", "security", "integrating.md"):
        assert client.get(f"/docs/{name}").status_code == 404


def test_links_between_documents_stay_here_and_headings_have_githubs_anchors(client):
    page = client.get("/docs/integrating").get_data(as_text=True)
    assert 'href="/docs/catalog-api' in page and "catalog-api.md" not in page.split("<main")[1].split('href="')[0]
    assert '<h2 id="the-members-data-v1">' in page and 'href="#the-members-data-v1"' in page
    assert slug("Tokens, refresh and rotation") == "tokens-refresh-and-rotation"


def test_raw_html_in_a_document_is_shown_as_text():
    assert str(to_html("<script>alert(1)</script> and `<b>`")) == (
        "<p>&lt;script&gt;alert(1)&lt;/script&gt; and <code>&lt;b&gt;</code></p>\n"
    )


def test_the_reference_has_every_operation_of_the_document(client):
    document = openapi_document()
    wanted = {(m.upper(), p) for p, item in document["paths"].items() for m in item if m != "parameters"}
    shown = {(op.method, op.path) for ops in reference()["by_tag"].values() for op in ops}
    assert shown == wanted
    credits = next(op for op in reference()["by_tag"]["profile"] if op.path == "/v1/profile/{id}/credits")
    assert {a.status: a.schema for a in credits.answers}["200"] == "CreditPage"
    page = client.get("/api/reference")
    assert page.status_code == 200 and "'unsafe-inline'" not in page.headers["Content-Security-Policy"]
    assert client.get("/openapi.yaml").status_code == 200  # the YAML stays where it was
