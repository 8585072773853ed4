"""app/services/mail.py: development's outbox, and SMTP's refusal to send in clear to a remote server."""

from __future__ import annotations

import logging
import smtplib
from email import message_from_bytes, policy

import pytest

from app.services import mail
from app.services.mail import Mail, deliver
from tests.issued import separate_app


def test_without_smtp_mails_go_to_the_outbox_and_their_links_to_the_log(settings, tmp_path, caplog):
    web = separate_app(settings, SMTP_URL="", MAIL_OUTBOX_DIR=str(tmp_path / "outbox"))
    with web.app_context(), caplog.at_level(logging.WARNING, logger="app.services.mail"):
        deliver(Mail("ana@example.test", "Reset your password", "Open https://id.test/password/reset?token=abc\n"))
    [path] = (tmp_path / "outbox").glob("*.eml")
    message = message_from_bytes(path.read_bytes(), policy=policy.default)
    assert message["To"] == "ana@example.test" and message["From"] == "Credits ID <no-reply@id.test>"
    assert "https://id.test/password/reset?token=abc" in message.get_content()
    assert "https://id.test/password/reset?token=abc" in caplog.text and str(path) in caplog.text


def test_smtp_delivers_to_the_server(settings, mailbox):
    web = separate_app(settings)
    with web.app_context():
        deliver(Mail("bo@example.test", "Hello", "Body text\n"))
    received = mailbox.wait_for("bo@example.test")
    assert received.subject == "Hello" and received.text == "Body text\n"
    assert received.message["Auto-Submitted"] == "auto-generated"


def test_no_mail_in_clear_to_a_remote_server_without_starttls(settings, mailbox, monkeypatch):
    """The test server offers no STARTTLS; on loopback that is allowed, anywhere else it is refused."""
    monkeypatch.setattr(mail, "is_loopback_host", lambda host: False)
    web = separate_app(settings)
    with web.app_context(), pytest.raises(smtplib.SMTPNotSupportedError, match="STARTTLS"):
        deliver(Mail("cy@example.test", "Hello", "Body\n"))
    mailbox.assert_none_to("cy@example.test", wait=0.2)


def test_without_smtp_each_mailed_link_is_alone_on_its_own_line_of_the_terminal(settings, tmp_path, capsys):
    web = separate_app(settings, SMTP_URL="", MAIL_OUTBOX_DIR=str(tmp_path / "outbox"))
    body = "Reset it:\nhttps://id.test/password/forgot\nthen review:\nhttps://id.test/account\n"
    with web.app_context():
        deliver(Mail("ana@example.test", "Credits ID security notice", body))
    printed = capsys.readouterr().err.splitlines()
    assert "    https://id.test/password/forgot" in printed and "    https://id.test/account" in printed
    assert any(line.startswith("mail to ana@example.test: Credits ID security notice") for line in printed)


def test_every_mail_puts_its_links_on_lines_of_their_own(app):
    """A link in running text breaks in mail readers and terminals: each stands alone."""
    import re

    from flask import render_template

    from tests.factories import make_member

    member = make_member()
    values = {
        "user": member,
        "url": "https://id.test/x?token=abc",
        "lifetime": "3 days",
        "minutes": 30,
        "what": "Your password was changed",
        "when": "2026-11-27 14:00 UTC",
        "where": "Firefox on Linux, address 127.0.0.1",
        "detail": None,
        "forgot": "https://id.test/password/forgot",
        "account": "https://id.test/account",
        "old": "old@example.test",
        "email": "new@example.test",
        "new_address": True,
    }
    with app.test_request_context():
        for name in ("reset", "invite", "verify", "security_notice", "email_changed"):
            text = render_template(f"mail/{name}.txt", **values)
            for line in text.splitlines():
                if re.search(r"https?://", line):
                    assert re.fullmatch(r"\s*https?://\S+", line), f"{name}: {line!r}"
