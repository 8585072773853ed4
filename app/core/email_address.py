"""Email addresses: the one rule for an address that enters the service (a member created in the
console or with `flask users create`, a change of address, the forgot-password form) and the one
form in which every address is stored, compared and mailed.

Accepted (`stored_form`): what an SMTP server delivers to as typed, without the SMTPUTF8 extension,
as checked by `email-validator` (syntax only; no DNS look-up):
- before the @, an RFC 5322 dot-atom: ASCII letters, digits and ``!#$%&'*+-/=?^_`{|}~``, with
  single dots between them. No quoted local part, spaces, ``"<>(),;:\\[]``, control characters or
  non-ASCII letters (an internationalized local part needs SMTPUTF8, which not every server has);
- after it, a domain name with at least one dot, letters, digits and hyphens in each label, or an
  internationalized domain name (IDNA 2008 with UTS 46 mapping); no IP address literal, and no
  special-use name (`localhost`, `.local`, `.invalid`, `.onion`, `.arpa`; `.test` in development
  only, for local runs and tests);
- at most 64 characters before the @ and 254 in all (RFC 5321).

Stored, compared and mailed as one string: lower-cased, with an internationalized domain in its
ASCII form, the A-label (`ana@bücher.example` is `ana@xn--bcher-kva.example`). The mail goes to the
stored address letter for letter, and apps receive in the `email` claim an address every mail
system reads. A sign-in or a forgot-password request typed either way finds the member
(`lookup_form`)."""

from __future__ import annotations

import idna
from email_validator import EmailNotValidError, validate_email
from flask import current_app, has_app_context

MAX_LENGTH = 254


class InvalidEmail(ValueError):
    """Not an address the service accepts; the message says why, in plain words."""


def _test_domains_allowed() -> bool:
    return has_app_context() and current_app.config.get("APP_ENV") == "development"


def stored_form(typed: str | None) -> str:
    """The address as the service stores and mails it, or InvalidEmail."""
    text = (typed or "").strip()
    if not text:
        raise InvalidEmail("Enter an email address.")
    if len(text) > 4 * MAX_LENGTH:  # long before the A-label could bring it back under 254
        raise InvalidEmail(f"The email address is too long (at most {MAX_LENGTH} characters).")
    try:
        checked = validate_email(
            text,
            check_deliverability=False,  # no DNS: a syntax rule, the same offline as online
            allow_smtputf8=False,
            allow_quoted_local=False,
            allow_domain_literal=False,
            allow_display_name=False,
            strict=True,  # the local part at most 64 characters (RFC 5321 4.5.3.1.1)
            test_environment=_test_domains_allowed(),
        )
    except EmailNotValidError as error:
        raise InvalidEmail(str(error)) from None
    return str(checked.ascii_email).lower()


def lookup_form(typed: str | None) -> str:
    """`typed` in the stored form, for looking a member up: trimmed, lower-cased, an internationalized
    domain as its A-label. Never refuses (an address stored before this rule still finds its
    member); for an address `stored_form` accepts, the two agree. ASCII, the common case, costs one
    `lower()`."""
    text = (typed or "").strip().lower()
    if text.isascii():
        return text
    local, at, domain = text.rpartition("@")
    if not at:
        return text
    try:
        return f"{local}@{idna.encode(domain, uts46=True).decode('ascii')}"
    except (idna.IDNAError, UnicodeError):
        return text
