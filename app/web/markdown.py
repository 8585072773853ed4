"""Markdown to HTML for the pages that show the project's own documents (the developer docs under
`/docs/...` and the descriptions in the API reference): markdown-it-py, CommonMark with tables,
raw HTML off (a `<script>` in a document is shown as text, so the CSP has nothing to allow),
headings given GitHub's anchors (the documents' tables of contents link to them), and links to the
documents served here rewritten to their pages."""

from __future__ import annotations

import re
from collections.abc import Callable

from markdown_it import MarkdownIt
from markupsafe import Markup

_DROPPED = re.compile(r"[^\w\- ]", re.UNICODE)


def slug(text: str) -> str:
    """GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens."""
    return _DROPPED.sub("", text.strip().lower()).replace(" ", "-")


def renderer(link: Callable[[str], str] | None = None) -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")

    def anchors(state) -> None:  # type: ignore[no-untyped-def]
        tokens = state.tokens
        seen: dict[str, int] = {}
        for i, token in enumerate(tokens):
            if token.type == "heading_open" and i + 1 < len(tokens):
                base = slug(tokens[i + 1].content.replace("`", ""))
                count = seen.get(base, 0)
                seen[base] = count + 1
                token.attrSet("id", base if count == 0 else f"{base}-{count}")
            if link is not None and token.type == "inline":
                for child in token.children or []:
                    if child.type == "link_open":
                        child.attrSet("href", link(str(child.attrGet("href") or "")))

    md.core.ruler.push("anchors_and_links", anchors)
    return md


_PLAIN = renderer()


def to_html(text: str | None, md: MarkdownIt | None = None) -> Markup:
    """`text` rendered; safe to put in a template as it is (raw HTML in it was escaped)."""
    return Markup((md or _PLAIN).render(text or ""))  # noqa: S704 - markdown-it escapes (html=False)


def inline_html(text: str | None) -> Markup:
    """One line of markdown (a summary with `code` in it), without the paragraph around it."""
    return Markup(_PLAIN.renderInline(text or ""))  # noqa: S704 - markdown-it escapes (html=False)
