"""The console's forms. Flask-WTF gives each one its CSRF token; the rules for what makes a
valid registration live in app.services.registration, not here (these only carry the input)."""

from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import (
    BooleanField,
    HiddenField,
    RadioField,
    SelectField,
    SelectMultipleField,
    StringField,
    TextAreaField,
    widgets,
)
from wtforms.validators import DataRequired, Length, Optional

from app.core.capabilities import DEFAULT_SECRET_AUTH_METHOD, SECRET_AUTH_METHODS
from app.core.scopes import SCOPES, scope_list
from app.models import Role, Tier
from app.services.registration import NewClient
from app.web.console.once import new_submission_id


class ActionForm(FlaskForm):
    """A button that changes something: only the CSRF token."""


class DeleteForm(FlaskForm):
    """Deleting an app cannot be undone: the developer types its name, compared on the server."""

    confirm_name = StringField("Type the app's name to confirm", validators=[Length(max=200)])

    def names(self, client) -> bool:
        return (self.confirm_name.data or "").strip() == client.name


class CheckboxesField(SelectMultipleField):
    widget = widgets.ListWidget(prefix_label=False)
    option_widget = widgets.CheckboxInput()


def lines(text: str | None) -> list[str]:
    """One URI per line; blank lines ignored, surrounding spaces kept out."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


AUTH_METHOD_WORDS = {"client_secret_basic": "HTTP Basic", "client_secret_post": "form fields"}
URL_HELP = "An https:// address (http only for 127.0.0.1, [::1] or localhost)."


class OnceForm(FlaskForm):
    """A form whose repeated submission must not act twice (app/web/console/once.py)."""

    submission = HiddenField(default=new_submission_id)


class AppForm(OnceForm):
    name = StringField("Name", validators=[DataRequired("Name is required (at most 120 characters)"), Length(max=120)])
    homepage_url = StringField("Homepage", validators=[Optional(), Length(max=500)], description=URL_HELP)
    logo_url = StringField(
        "Logo URL",
        validators=[Optional(), Length(max=500)],
        description="Shown on the consent page, 56×56. An https:// address: the page loads images over https only.",
    )
    policy_url = StringField("Privacy policy URL", validators=[Optional(), Length(max=500)])
    tos_url = StringField("Terms of service URL", validators=[Optional(), Length(max=500)])
    redirect_uris = TextAreaField(
        "Redirect URIs (one per line)",
        validators=[DataRequired("At least one redirect URI is required"), Length(max=8000)],
        description="Absolute, no fragment, no user name or password, no wildcard. https, or http on "
        "127.0.0.1 / [::1] / localhost, or a private-use scheme in reverse-DNS form "
        "(com.example.app:/callback) for native apps. A public app's loopback address is "
        "127.0.0.1 or [::1] without a port, and matches any port; for development a public app may "
        "also register http://localhost:<port>/... with its dev server's port (matched exactly; "
        "localhost is a name the machine resolves, so not for production: RFC 8252 8.3).",
    )
    post_logout_redirect_uris = TextAreaField(
        "Post-logout redirect URIs (one per line, optional)", validators=[Optional(), Length(max=8000)]
    )
    client_type = RadioField(
        "Type",
        choices=[
            ("confidential", "Confidential — a server that keeps a client secret"),
            ("public", "Public — a native or browser app, no secret (PKCE protects it)"),
        ],
        default="confidential",
    )
    auth_method = SelectField(
        "How a confidential app authenticates at the token endpoint",
        choices=[(method, f"{method} ({AUTH_METHOD_WORDS[method]})") for method in SECRET_AUTH_METHODS],
        default=DEFAULT_SECRET_AUTH_METHOD,
    )
    scopes = CheckboxesField(
        "Allowed scopes",
        choices=[(s.name, f"{s.name} — {s.description}") for s in SCOPES.values()],
        default=list(SCOPES),
        description="openid is always allowed.",
    )
    trusted = BooleanField("Trusted first-party app (skip the consent page) — admins only")
    require_pkce = BooleanField(
        "Require PKCE (turn off only for a confidential legacy app) — admins only", default=True
    )
    owner_email = StringField("Owner (a developer's email; empty: you)", validators=[Optional(), Length(max=254)])

    def to_spec(self) -> NewClient:
        return NewClient(
            name=self.name.data or "",
            redirect_uris=lines(self.redirect_uris.data),
            post_logout_redirect_uris=lines(self.post_logout_redirect_uris.data),
            public=self.client_type.data == "public",
            auth_method=self.auth_method.data,
            scope=" ".join(self.scopes.data or []),
            trusted=bool(self.trusted.data),
            require_pkce=bool(self.require_pkce.data),
            homepage_url=self.homepage_url.data or None,
            logo_url=self.logo_url.data or None,
            policy_url=self.policy_url.data or None,
            tos_url=self.tos_url.data or None,
        )

    def fill_from(self, client) -> None:
        """Pre-fill the edit form from the stored app."""
        self.name.data = client.name
        for attr in ("homepage_url", "logo_url", "policy_url", "tos_url"):
            getattr(self, attr).data = getattr(client, attr) or ""
        self.redirect_uris.data = "\n".join(client.redirect_uris)
        self.post_logout_redirect_uris.data = "\n".join(client.post_logout_redirect_uris)
        self.client_type.data = client.client_type
        if not client.is_public:
            self.auth_method.data = client.token_endpoint_auth_method
        self.scopes.data = scope_list(client.allowed_scopes)
        self.trusted.data = client.trusted
        self.require_pkce.data = client.require_pkce


GRACE_CHOICES = [
    ("0", "None — the old secret stops working now (after a leak)"),
    ("3600", "1 hour"),
    ("86400", "24 hours"),
    ("604800", "7 days"),
]


class RotateSecretForm(OnceForm):
    # 24 hours unless the developer chooses otherwise: time to deploy the new secret before the
    # old one stops (a routine rotation must not break a live app); "None" is for a leaked secret.
    grace = SelectField("Keep the old secret working for", choices=GRACE_CHOICES, default="86400")


class InviteForm(FlaskForm):
    email = StringField("Email", validators=[DataRequired(), Length(max=254)])
    name = StringField("Name", validators=[DataRequired(), Length(max=200)])
    role = SelectField("Role", choices=[(r.value, r.value) for r in Role], default=Role.MEMBER.value)
    tier = SelectField("Membership", choices=[(t.value, t.value) for t in Tier], default=Tier.BASIC.value)


class MemberForm(FlaskForm):
    role = SelectField("Role", choices=[(r.value, r.value) for r in Role])
    tier = SelectField("Membership", choices=[(t.value, t.value) for t in Tier])


class EditKeyForm(FlaskForm):
    """A key's name and, for a publishable key, its domains: what may change without a new value."""

    name = StringField("Name", validators=[DataRequired("A name is required."), Length(max=120)])
    domains = TextAreaField(
        "Domains (one per line)",
        validators=[Optional(), Length(max=4000)],
        description=(
            "Host names of the pages that may use the key, e.g. shop.example.com or localhost:8080; "
            "*.example.com for every subdomain of example.com."
        ),
    )


class SuspendForm(FlaskForm):
    """Suspending ends a member's sessions and tokens at once: the admin says why, and the reason is
    kept in the audit trail (`user.suspended`, detail `reason`)."""

    reason = TextAreaField(
        "Reason (kept in the audit log)",
        validators=[
            DataRequired("Say why the member is suspended: the reason is kept in the audit log."),
            Length(min=3, max=200, message="The reason takes 3 to 200 characters."),
        ],
    )


class ApiKeyForm(OnceForm):
    name = StringField(
        "Name",
        validators=[DataRequired(), Length(max=120)],
        description="For you: where the key is used (e.g. 'production server').",
    )
    kind = RadioField(
        "Kind",
        choices=[
            ("secret", "Secret (msk_) — for your servers: the whole catalog API"),
            ("publishable", "Publishable (mpk_) — for web pages: the widget API only, from your domains"),
        ],
        default="secret",
    )
    plan = SelectField(
        "Plan",
        choices=[
            ("payg", "Pay as you go — 300 requests a minute; from 0.025 USD a call"),
            ("start", "Start — 5 requests a second; from 0.025 USD a call"),
            ("build", "Build — 25 a second; 500 USD a month with 25,000 calls included"),
            ("scale", "Scale — 100 a second; 3,000 USD a month with 150,000 calls included"),
        ],
        default="payg",
        description="Build and Scale are bought on the billing page; then every key of yours follows the plan.",
    )
    domains = TextAreaField(
        "Domains (publishable keys; one per line)",
        validators=[Optional(), Length(max=4000)],
        description=(
            "Host names of the pages that may use the key, e.g. shop.example.com or localhost:8080; "
            "*.example.com for every subdomain of example.com."
        ),
    )


ROTATE_KEY_GRACE = [
    ("0", "None — the old key stops working now (after a leak)"),
    ("3600", "1 hour"),
    ("86400", "24 hours"),
    ("604800", "7 days"),
]


class RotateKeyForm(OnceForm):
    grace = SelectField("Keep the old key working for", choices=ROTATE_KEY_GRACE, default="86400")


# -- billing (app/web/console/billing.py) ---------------------------------------------------------


class LoadForm(OnceForm):
    """Load credits: a preset or any amount from 10 (checked by app/services/billing/payments.py)."""

    amount = StringField("Amount (USD)", validators=[DataRequired("Choose or type an amount"), Length(max=12)])


class PlanForm(FlaskForm):
    plan = HiddenField(validators=[DataRequired()])


class AdjustForm(FlaskForm):
    amount = StringField(
        "Amount (USD)",
        validators=[DataRequired("An amount is required"), Length(max=14)],
        description="Positive credits the account, negative debits it.",
    )
    memo = StringField("Reason", validators=[DataRequired("Say why"), Length(max=255)])


class EnterpriseForm(FlaskForm):
    enterprise = BooleanField("Enterprise terms (custom key limits, no spend ceiling, invoiced)")
    storage_allowed = BooleanField("The agreement allows caching or storing data for the term")
    terms_until = StringField(
        "Term ends (YYYY-MM-DD)",
        validators=[Optional(), Length(max=10)],
        description="Data stored must be deleted by then.",
    )
    note = StringField("Agreement reference", validators=[Optional(), Length(max=500)])


class KeyLimitsForm(FlaskForm):
    per_minute = StringField("Per minute", validators=[Optional(), Length(max=7)])
    per_second = StringField("Per second", validators=[Optional(), Length(max=6)])
