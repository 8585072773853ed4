"""Sending mail: password-reset, verification and invitation links.

- With `SMTP_URL` set, over SMTP: `smtp://[user:password@]host[:587]` upgrades with STARTTLS, which
  is required unless the host is a loopback address (a relay on the same machine);
  `smtps://host[:465]` speaks TLS from the start. Credentials are percent-decoded from the URL.
- Without it (development only: `check_settings` refuses to start production without it), each
  message is written to `MAIL_OUTBOX_DIR` (`instance/outbox/`) as an `.eml` file and its links are
  printed in the log, so `make run` works offline.

Pages send with `send_later`: the answer never waits on (or reveals, by its timing) a mail server,
and a mail is only sent after the change that it links to is committed. The CLI sends with
`deliver`, which reports a failure to the operator.
"""

from __future__ import annotations

import logging
import re
import smtplib
import ssl
import sys
import threading
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from flask import Flask, current_app, render_template

from app.core.config import is_loopback_host
from app.models.base import new_secret, utcnow

log = logging.getLogger(__name__)
SMTP_TIMEOUT = 15  # seconds
LINK = re.compile(r"https?://\S+")


@dataclass(frozen=True)
class Mail:
    to: str
    subject: str
    text: str

    @classmethod
    def from_template(cls, to: str, subject: str, template: str, **context: Any) -> Mail:
        """A plain-text mail rendered from `templates/mail/<template>.txt`."""
        return cls(to=to, subject=subject, text=render_template(f"mail/{template}.txt", **context))


def _message(mail: Mail, sender: str) -> EmailMessage:
    message = EmailMessage()
    message["From"] = sender
    message["To"] = mail.to
    message["Subject"] = mail.subject
    message["Date"] = formatdate(localtime=False)
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2].strip(">") or None)
    message["Auto-Submitted"] = "auto-generated"
    message.set_content(mail.text)
    return message


def deliver(mail: Mail, app: Flask | None = None) -> None:
    """Send `mail` now (raises on an SMTP failure). Needs the app (its settings)."""
    config = (app or current_app).config
    message = _message(mail, config["MAIL_FROM"])
    if not config["SMTP_URL"]:
        _to_outbox(message, Path(config["MAIL_OUTBOX_DIR"]))
        return
    url = urlsplit(config["SMTP_URL"])
    host = url.hostname or "localhost"
    context = ssl.create_default_context()
    if url.scheme == "smtps":
        smtp: smtplib.SMTP = smtplib.SMTP_SSL(host, url.port or 465, timeout=SMTP_TIMEOUT, context=context)
    else:
        smtp = smtplib.SMTP(host, url.port or 587, timeout=SMTP_TIMEOUT)
    with smtp:
        smtp.ehlo()
        if url.scheme == "smtp":
            if smtp.has_extn("starttls"):
                smtp.starttls(context=context)
                smtp.ehlo()
            elif not is_loopback_host(host):
                raise smtplib.SMTPNotSupportedError(f"{host} does not offer STARTTLS; refusing to send in clear")
        if url.username:
            smtp.login(unquote(url.username), unquote(url.password or ""))
        smtp.send_message(message)
    log.info("mail sent", extra={"subject": mail.subject})


def send_later(mail: Mail) -> None:
    """Send `mail` from a background thread: the request answers at once, whatever the mail server
    does. A failure is logged (the member can ask for another link)."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]

    def run() -> None:
        try:
            deliver(mail, app)
        except Exception as exc:
            log.error("mail not sent: %s: %s", type(exc).__name__, exc, extra={"subject": mail.subject})

    threading.Thread(target=run, name="mail", daemon=True).start()


def _to_outbox(message: EmailMessage, outbox: Path) -> None:
    """Development without SMTP: the message as a file, and its links in the log."""
    outbox.mkdir(parents=True, exist_ok=True)
    path = outbox / f"{utcnow().strftime('%Y%m%dT%H%M%S')}-{new_secret(4)}.eml"
    path.write_bytes(bytes(message))
    links = LINK.findall(message.get_content())
    log.warning(
        "mail written to %s (no SMTP_URL): %s to %s; links: %s",
        path,
        message["Subject"],
        message["To"],
        " ".join(links) or "none",
    )
    # And for the developer at the terminal (`make run`): each link alone on its own line, where
    # a terminal makes it clickable (inside the JSON log line it ends with a quote).
    lines = [f"mail to {message['To']}: {message['Subject']} ({path})", *(f"    {link}" for link in links)]
    print("\n".join(lines), file=sys.stderr, flush=True)
