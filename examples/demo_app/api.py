"""The member's own data from the Credits ID data API (/v1), read with the access token.

Each section says what happened in words the page can show: the data, "not shared" (the scope
was not granted), "refused" (the API said no, e.g. analytics on the basic membership), or "not
available" (this server has no data API: a 404 outside the API's error envelope)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import requests

CREDITS_PAGE = 10


@dataclass
class Section:
    state: str  # ok | not_shared | refused | unavailable | error
    message: str = ""
    data: Any = None
    total: int | None = None
    rows: list = field(default_factory=list)


def fetch_member_data(remote_app, api: str, token: dict, granted: list[str]) -> dict[str, Section]:
    sections = {"profile": _get(remote_app, f"{api}/me", token)}
    if "credits:read" in granted:
        sections["credits"] = _get(remote_app, f"{api}/me/credits?limit={CREDITS_PAGE}", token)
    else:
        sections["credits"] = Section("not_shared", "You did not share your credits with this app.")
    if "analytics:read" in granted:
        sections["analytics"] = _get(remote_app, f"{api}/me/analytics", token)
    else:
        sections["analytics"] = Section(
            "not_shared", "Analytics were not shared: they come with the pro membership (or you unticked them)."
        )
    return sections


def _get(remote_app, url: str, token: dict) -> Section:
    try:
        response = remote_app.get(url, token=token, timeout=10)
    except requests.RequestException as exc:
        return Section("error", f"Could not reach the data API ({exc.__class__.__name__}).")
    body = _json(response)
    if response.status_code == 404 and body.get("result") != "error":
        # A 404 outside the API's envelope: the server has no data API at all.
        return Section("unavailable", "Not available: this Credits ID server does not offer this data API yet.")
    if response.status_code != 200 or body.get("result") != "ok":
        message = body.get("message") or f"The data API answered {response.status_code}."
        return Section("refused", message)
    data = body.get("data")
    if isinstance(data, dict) and isinstance(data.get("items"), list):  # a page: {limit, offset, totalCount, items}
        return Section("ok", data=data, total=data.get("totalCount"), rows=data["items"])
    if isinstance(data, list):
        return Section("ok", data=data, total=len(data), rows=data)
    return Section("ok", data=data)


def _json(response) -> dict:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def names(values) -> str:
    """A list of artists, albums... as text: their `name` (or `title`), comma-separated."""
    if not isinstance(values, list):
        return "" if values is None else str(values)
    texts = [
        str(v.get("name") or v.get("title") or v.get("id") or "") if isinstance(v, dict) else str(v) for v in values
    ]
    return ", ".join(t for t in texts if t)


def roles(values) -> str:
    """A credit's roles as text. The API gives each as `{child, parent}` (the role and its family,
    e.g. Mixing Engineer in Engineering): the role, with its family when it adds something."""
    if not isinstance(values, list):
        return "" if values is None else str(values)
    texts = []
    for value in values:
        if not isinstance(value, dict):
            texts.append(str(value))
            continue
        child, parent = value.get("child") or value.get("name") or "", value.get("parent") or ""
        texts.append(f"{child} ({parent})" if child and parent and parent != child else (child or parent))
    return ", ".join(t for t in texts if t)
