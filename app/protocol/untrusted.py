"""A sign-in request that cannot be answered by redirect (RFC 6749 4.1.2.1): the member gets an
error page instead. Raised by the authorization endpoint and the sign-in pages, rendered by
app/web/errors.py, so neither has to import the other."""

from __future__ import annotations

NOTHING_SHARED = "Nothing was shared with the application."


class UntrustedRequest(Exception):
    """The request cannot be answered by redirect: show the member an error page instead. Where
    they are known, the page names the app and the redirect URI it was refused (shown as text,
    never as a link), with a hint for the app's developer."""

    def __init__(
        self,
        title: str,
        message: str,
        status: int = 400,
        hint: str = NOTHING_SHARED,
        app_name: str | None = None,
        redirect_uri: str | None = None,
        developer_hint: str | None = None,
        restart: str | None = None,
        homepage: str | None = None,
        client_id: str | None = None,
    ):
        super().__init__(message)
        self.title, self.message, self.status, self.hint = title, message, status, hint
        self.app_name = app_name
        self.redirect_uri = redirect_uri[:500] if redirect_uri is not None else None
        # The client_id the request named and that was refused (an unknown app): shown as text.
        self.client_id = client_id[:200] if client_id is not None else None
        self.developer_hint = developer_hint
        # Ways on for the member, when known: `restart`, a path on this site that starts the same
        # sign-in request again (an expired one, rebuilt from what was parked); `homepage`, the
        # app's own address.
        self.restart, self.homepage = restart, homepage
