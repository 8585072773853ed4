"""`make run`'s terminal lines (LOG_STYLE=text, issue 50, item 16): one readable line per request,
with the JSON line's fields and nothing more (no query string)."""

from __future__ import annotations

import logging

from app.core.logs import ReadableFormatter, access_log


def record(name: str, msg: str, **extra) -> logging.LogRecord:
    made = logging.makeLogRecord({"name": name, "msg": msg, "levelname": "INFO", "levelno": logging.INFO})
    made.__dict__.update(extra)
    return made


def test_a_request_is_one_readable_line():
    line = ReadableFormatter().format(
        record(
            access_log.name,
            "request",
            method="GET",
            path="/api/auth/oauth2/authorize",
            endpoint="oauth.authorize",
            status=302,
            latency_ms=12.345,
            client_id="demo-web-app",
            member="ab12",
            remote_addr="127.0.0.1",
            request_id="r1",
        )
    )
    assert line.endswith("  GET    /api/auth/oauth2/authorize -> 302  12.3 ms  app=demo-web-app")
    assert "\n" not in line and "{" not in line


def test_other_records_name_their_logger_and_fields():
    line = ReadableFormatter().format(record("credits_id.events", "mail.sent", to_hash="x1", request_id="r2"))
    assert line.endswith("  INFO credits_id.events: mail.sent to_hash=x1")
