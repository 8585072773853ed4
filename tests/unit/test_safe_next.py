"""Where the login page may send a member who signed in directly: a path on this site, never
another site, however the `next` parameter is spelled."""

import pytest

from app.web.auth.views import safe_next


@pytest.mark.parametrize("target", ["/account", "/console/fees?from=2026-01", "/", "/console/apps/abc#keys"])
def test_paths_on_this_site_are_kept(target):
    assert safe_next(target) == target


@pytest.mark.parametrize(
    "target",
    [
        None,
        "",
        "account",
        "https://evil.example/",
        "//evil.example",
        "/\\evil.example",
        "/a\\b",
        "/\t/evil.example",  # Werkzeug and browsers drop the tab from a Location: "//evil.example"
        "/\n/evil.example",
        "/\r/evil.example",
        "\t//evil.example",
        "/ /evil.example",
        "/\x00",
        "/\x7f/x",
        "/\u00e9v\u00efl",
        "javascript:alert(1)",
    ],
)
def test_anything_else_is_dropped(target):
    assert safe_next(target) is None
