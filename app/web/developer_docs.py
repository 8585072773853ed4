"""The developer's documents, served as pages: `/docs/<name>` renders docs/<name>.md (integrating an
app, the catalog API, widgets, the tool server) and `/api/reference` renders the OpenAPI document
(app/web/api/openapi.yaml, still served as it is at `/openapi.yaml`) as a readable reference. Both
are drawn on the server from the files in this repository: nothing is fetched from elsewhere and no
script runs, so the pages keep the strict CSP, and they always match the running version."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

from flask import Blueprint, abort, render_template, url_for
from markupsafe import Markup

from app.core.config import PROJECT_ROOT
from app.web.api.openapi import openapi_document
from app.web.markdown import inline_html, renderer, to_html

bp = Blueprint("devdocs", __name__)

DOCS = PROJECT_ROOT / "docs"
# The documents a developer reads, by page name: their files are docs/<name>.md.
PAGES = {
    "integrating": "Integrating with Credits ID",
    "catalog-api": "The catalog API",
    "widgets": "Widgets",
    "tools": "The tool server",
}
HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")


def _link(href: str) -> str:
    """A link between documents (`catalog-api.md#paging`) to its page here; others stay as they are."""
    target, _, anchor = href.partition("#")
    if target.endswith(".md") and "/" not in target and target[:-3] in PAGES:
        return url_for("devdocs.page", name=target[:-3]) + (f"#{anchor}" if anchor else "")
    return href


@cache
def _rendered(name: str) -> Markup:
    """A document as HTML, read once per process (the files change only with a deploy)."""
    return Markup(renderer(_link).render((DOCS / f"{name}.md").read_text(encoding="utf-8")))  # noqa: S704


@bp.get("/docs/<name>")
def page(name: str):
    if name not in PAGES:
        abort(404)
    return render_template("docs/page.html", title=PAGES[name], body=_rendered(name), pages=PAGES, current=name)


# -- the API reference ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    name: str
    where: str  # query, path, header, body
    required: bool
    shape: str  # "string, 1-200 characters", "integer, 1..50, default 20"
    description: Markup


@dataclass(frozen=True)
class Answer:
    status: str
    description: Markup
    schema: str | None  # the component schema's name, linked on the page


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    summary: Markup
    description: Markup
    anchor: str
    doors: list[str]
    fields: list[Field]
    body_schema: str | None
    answers: list[Answer]


@dataclass(frozen=True)
class Schema:
    name: str
    description: Markup
    fields: list[Field]
    shape: str = ""
    variants: list[str] = field(default_factory=list)


def _resolve(document: dict, node: dict) -> dict:
    while "$ref" in node:
        parts = node["$ref"].removeprefix("#/").split("/")
        node = document
        for part in parts:
            node = node[part]
    return node


def _ref_name(node: dict | None) -> str | None:
    if not node:
        return None
    if "$ref" in node:
        return str(node["$ref"]).rsplit("/", 1)[-1]
    parts = [part for key in ("allOf", "oneOf", "anyOf") for part in node.get(key, [])]
    for part in parts:  # the envelope's `data` says more than the envelope itself
        if name := _ref_name(part.get("properties", {}).get("data")):
            return name
    return next((name for part in parts if (name := _ref_name(part))), None)


def shape(document: dict, schema: dict | None) -> str:
    """A schema in words: its type and every constraint a client must meet."""
    if not schema:
        return ""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    words: list[str] = []
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    if kind == "array":
        items = shape(document, schema.get("items"))
        words.append(f"array of {items}" if items else "array")
    elif kind:
        words.append(str(kind))
    if "const" in schema:
        words.append(f"always {schema['const']!r}")
    if "enum" in schema:
        words.append("one of " + ", ".join(str(v) for v in schema["enum"]))
    if "format" in schema:
        words.append(f"format {schema['format']}")
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        words.append(f"{low} to {high}")
    elif low is not None:
        words.append(f"at least {low}")
    elif high is not None:
        words.append(f"at most {high}")
    for lo, hi, unit in (("minLength", "maxLength", "characters"), ("minItems", "maxItems", "items")):
        a, b = schema.get(lo), schema.get(hi)
        if a is not None and b is not None:
            words.append(f"{a} to {b} {unit}")
        elif a is not None:
            words.append(f"at least {a} {unit}")
        elif b is not None:
            words.append(f"at most {b} {unit}")
    if "pattern" in schema:
        words.append(f"matching {schema['pattern']}")
    if "default" in schema:
        words.append(
            f"default {schema['default']!r}" if isinstance(schema["default"], str) else f"default {schema['default']}"
        )
    for key in ("oneOf", "anyOf"):
        if key in schema:
            words.append(" or ".join(shape(document, part) for part in schema[key]))
    if schema.get("nullable") or (isinstance(schema.get("type"), list) and "null" in schema["type"]):
        words.append("may be null")
    return ", ".join(w for w in words if w)


def _properties(document: dict, schema: dict, where: str) -> list[Field]:
    schema = _resolve(document, schema)
    required = set(schema.get("required", []))
    return [
        Field(
            name, where, name in required, shape(document, prop), to_html(_resolve(document, prop).get("description"))
        )
        for name, prop in (schema.get("properties") or {}).items()
    ]


def _doors(operation: dict, document: dict) -> list[str]:
    doors = []
    for requirement in operation.get("security", document.get("security", [])):
        for scheme, scopes in requirement.items():
            if scheme == "apiKey":
                doors.append("API key (x-api-key)")
            else:
                doors.append("access token" + (f" with {', '.join(scopes)}" if scopes else ""))
    return doors


@cache
def reference() -> dict[str, Any]:
    """The OpenAPI document as the page shows it: operations by tag, then the schemas."""
    document = openapi_document()
    by_tag: dict[str, list[Operation]] = {tag["name"]: [] for tag in document.get("tags", [])}
    for path, item in document["paths"].items():
        shared = item.get("parameters", [])
        for method in HTTP_METHODS:
            if method not in item:
                continue
            op = item[method]
            params = [_resolve(document, p) for p in [*shared, *op.get("parameters", [])]]
            fields = [
                Field(
                    p["name"],
                    p["in"],
                    bool(p.get("required")),
                    shape(document, p.get("schema")),
                    to_html(p.get("description")),
                )
                for p in params
            ]
            body_schema = None
            if "requestBody" in op:
                content = _resolve(document, op["requestBody"]).get("content", {})
                schema = next(iter(content.values()), {}).get("schema", {})
                body_schema = _ref_name(schema)
                fields += _properties(document, schema, "body")
            answers = []
            for status, answer in op.get("responses", {}).items():
                resolved = _resolve(document, answer)
                content = resolved.get("content", {})
                schema = next(iter(content.values()), {}).get("schema") if content else None
                answers.append(Answer(str(status), to_html(resolved.get("description")), _ref_name(schema)))
            operation = Operation(
                method.upper(),
                path,
                inline_html(op.get("summary", "")),
                to_html(op.get("description")),
                f"{method}-{path}".replace("/", "-").replace("{", "").replace("}", "").strip("-"),
                _doors(op, document),
                fields,
                body_schema,
                answers,
            )
            for tag in op.get("tags", ["other"]):
                by_tag.setdefault(tag, []).append(operation)
    schemas = []
    for name, schema in document["components"]["schemas"].items():
        variants = [shape(document, part) for part in schema.get("oneOf", [])]
        schemas.append(
            Schema(
                name,
                to_html(schema.get("description")),
                _properties(document, schema, "field"),
                "" if schema.get("properties") else shape(document, schema) if not variants else "",
                variants,
            )
        )
    return {
        "info": document["info"],
        "description": to_html(document["info"].get("description")),
        "tags": [{"name": t["name"], "description": t.get("description", "")} for t in document.get("tags", [])],
        "by_tag": by_tag,
        "schemas": schemas,
        "security": {
            name: to_html(s.get("description")) for name, s in document["components"]["securitySchemes"].items()
        },
    }


@bp.get("/api/reference")
def api_reference():
    return render_template("docs/api_reference.html", ref=reference(), pages=PAGES)
