"""All models, imported here so Alembic and the app see the whole schema."""

from app.models.api_key import ApiKey, ApiUsage, KeyKind, KeyPlan
from app.models.audit import AuditEvent
from app.models.authorization_code import AuthorizationCode
from app.models.billing import BillingAccount, BillingEntry, BillingPayment, BillingWebhookEvent
from app.models.catalog import (
    Album,
    ChartRow,
    Credit,
    CreditRole,
    Profile,
    ProfileCollaborator,
    Track,
    TrackArtist,
    TrackIsrc,
    credit_role_links,
)
from app.models.client import Client, ClientStatus, ClientType, Registration
from app.models.consent import Consent
from app.models.interaction import Interaction
from app.models.key_activity import KeyRequest
from app.models.login_session import LoginSession
from app.models.one_time_link import LinkPurpose, OneTimeLink
from app.models.refresh_replay import RefreshReplay
from app.models.roster import Roster, RosterProfile
from app.models.second_factor import Passkey, RecoveryCode, TotpFactor
from app.models.signing_key import SigningKey
from app.models.token import Token
from app.models.user import Role, Tier, User
from app.models.webauthn_challenge import WebauthnChallenge

__all__ = [
    "Album",
    "ApiKey",
    "ApiUsage",
    "AuditEvent",
    "AuthorizationCode",
    "BillingAccount",
    "BillingEntry",
    "BillingPayment",
    "BillingWebhookEvent",
    "ChartRow",
    "Client",
    "ClientStatus",
    "ClientType",
    "Consent",
    "Credit",
    "CreditRole",
    "Interaction",
    "KeyKind",
    "KeyPlan",
    "KeyRequest",
    "LinkPurpose",
    "LoginSession",
    "OneTimeLink",
    "Passkey",
    "Profile",
    "ProfileCollaborator",
    "RecoveryCode",
    "RefreshReplay",
    "Registration",
    "Role",
    "Roster",
    "RosterProfile",
    "SigningKey",
    "Tier",
    "Token",
    "TotpFactor",
    "Track",
    "TrackArtist",
    "TrackIsrc",
    "User",
    "WebauthnChallenge",
    "credit_role_links",
]
