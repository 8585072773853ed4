"""A real SMTP server on a free loopback port (aiosmtpd) that keeps what it receives, so tests can
read the mails the provider sent and follow their links."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from email import message_from_bytes, policy
from email.message import EmailMessage
from html import unescape
from urllib.parse import parse_qs, urlsplit

from aiosmtpd.controller import Controller

LINK = re.compile(r"https?://\S+")


@dataclass
class Received:
    envelope_from: str
    envelope_to: list[str]
    message: EmailMessage

    @property
    def to(self) -> str:
        return self.message["To"]

    @property
    def subject(self) -> str:
        return self.message["Subject"]

    @property
    def text(self) -> str:
        return self.message.get_content().replace("\r\n", "\n")

    def links(self) -> list[str]:
        return [unescape(u) for u in LINK.findall(self.text)]

    def link(self) -> str:
        [url] = self.links()
        return url

    def token(self) -> str:
        return parse_qs(urlsplit(self.link()).query)["token"][0]


class Mailbox:
    """The messages received by the SMTP server, searchable by recipient."""

    def __init__(self) -> None:
        self.messages: list[Received] = []
        self._lock = threading.Lock()

    async def handle_DATA(self, server, session, envelope):  # aiosmtpd's handler hook
        message = message_from_bytes(envelope.original_content or envelope.content, policy=policy.default)
        with self._lock:
            self.messages.append(Received(envelope.mail_from, list(envelope.rcpt_tos), message))
        return "250 Message accepted for delivery"

    def to(self, address: str) -> list[Received]:
        with self._lock:
            return [m for m in self.messages if address.lower() in (a.lower() for a in m.envelope_to)]

    def wait_for(self, address: str, count: int = 1, timeout: float = 15, subject: str = "") -> Received:
        """The `count`-th message to `address` (whose subject contains `subject`, if given); waits:
        pages send mail from a background thread."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [m for m in self.to(address) if subject in m.subject]
            if len(found) >= count:
                return found[count - 1]
            time.sleep(0.05)
        raise AssertionError(
            f"no mail #{count} to {address} {subject!r} within {timeout} s (got {len(self.to(address))})"
        )

    def assert_none_to(self, address: str, wait: float = 1.0) -> None:
        time.sleep(wait)
        assert self.to(address) == [], f"unexpected mail to {address}"


def start_smtp_server(port: int) -> tuple[Controller, Mailbox]:
    mailbox = Mailbox()
    controller = Controller(mailbox, hostname="127.0.0.1", port=port)
    controller.start()
    return controller, mailbox
