"""Demo data for a first run: a catalog, two members (basic and pro) linked to two of its most
credited profiles, two apps (confidential and public), and a developer with a secret API key for
the catalog API.

Running it again is safe: the same catalog, members and apps are kept, and fresh credentials are
issued and printed (passwords and secrets are stored hashed, so they cannot be shown again).

All of it is one transaction, the caller's: `flask demo seed` commits once, then prints."""

from __future__ import annotations

from decimal import Decimal

from app.core.extensions import db
from app.models import ApiKey, Role, Tier, User
from app.models.base import new_secret
from app.services.apikeys import create_key, rotate_key
from app.services.billing.ledger import account_for, post
from app.services.catalog_seed import ensure_catalog, profiles_by_credit_count
from app.services.members import create_member, set_password
from app.services.registration import NewClient, register_client, rotate_secret
from app.store import store

# `catalog_rank`: which of the most-credited profiles the member is linked to (0 = the most).
DEMO_MEMBERS = (
    {"email": "basic@demo.credits.example", "name": "Billie Basic", "tier": Tier.BASIC.value, "catalog_rank": 1},
    {"email": "pro@demo.credits.example", "name": "Parker Pro", "tier": Tier.PRO.value, "catalog_rank": 0},
)
DEMO_DEVELOPER = {"email": "developer@demo.credits.example", "name": "Devi Developer"}
DEMO_KEY_NAME = "Demo server key"
DEMO_REDIRECT = "http://127.0.0.1:5001/callback"
# One name everywhere: the demo relying party (examples/demo_app, APP_NAME) calls itself this, and
# the login, consent and account pages show the registered name.
DEMO_APP_NAME = "Liner Notes"
DEMO_APPS = (
    NewClient(
        client_id="demo-web-app",
        name=DEMO_APP_NAME,
        redirect_uris=[DEMO_REDIRECT, "http://localhost:5001/callback"],
        post_logout_redirect_uris=["http://127.0.0.1:5001/"],
        homepage_url="http://127.0.0.1:5001/",
    ),
    NewClient(
        client_id="demo-native-app",
        name="Demo Native App",
        public=True,
        redirect_uris=["com.example.creditsdemo:/callback", "http://127.0.0.1:5001/callback"],
    ),
)


def seed_accounts(catalog_seed: int | None = None, credits: int | None = None, rebuild: bool = False) -> dict:
    """Create or refresh the demo catalog, members and apps; returns what a newcomer needs to try it.
    Flushed, not committed: the credentials returned are valid once the caller commits."""
    catalog = ensure_catalog(catalog_seed, credits, rebuild)
    linked = profiles_by_credit_count(len(DEMO_MEMBERS))
    members = []
    for spec in DEMO_MEMBERS:
        password = new_secret(12)
        profile_id = linked[spec["catalog_rank"]] if spec["catalog_rank"] < len(linked) else None
        user = db.session.scalar(db.select(User).where(User.email == spec["email"]))
        if user is None:
            # Demo addresses receive no mail: they are created verified, so `make run` works at once.
            user = create_member(
                spec["email"], spec["name"], password, tier=spec["tier"], profile_id=profile_id, email_verified=True
            )
        else:
            user.profile_id, user.tier, user.email_verified = profile_id, spec["tier"], True
            set_password(user, password)
        members.append(
            {
                "email": user.email,
                "password": password,
                "tier": user.tier,
                "profile_id": user.profile_id,
                "id": user.id,
                "sub": user.sub,
            }
        )
    apps = []
    for spec in DEMO_APPS:
        client = store().apps.registered(spec.client_id) if spec.client_id else None
        if client is None:
            client, secret = register_client(spec)
        else:
            if client.name != spec.name:  # a database seeded under an older name shows the one name too
                client = store().apps.change(client.id, {"name": spec.name})
            secret = None if client.is_public else rotate_secret(client)
        apps.append(
            {
                "name": client.name,
                "client_id": client.client_id,
                "client_secret": secret,
                "type": client.client_type,
                "redirect_uris": client.redirect_uris,
            }
        )
    return {"members": members, "apps": apps, "catalog": catalog.as_dict(), "developer": _demo_developer()}


def _demo_developer() -> dict:
    """A developer account and its secret API key (a fresh value at every run: only hashes are kept)."""
    password = new_secret(12)
    user = db.session.scalar(db.select(User).where(User.email == DEMO_DEVELOPER["email"]))
    if user is None:
        user = create_member(
            DEMO_DEVELOPER["email"], DEMO_DEVELOPER["name"], password, role=Role.DEVELOPER, email_verified=True
        )  # a demo address receives no mail
    else:
        user.role, user.email_verified = Role.DEVELOPER, True
        set_password(user, password)
    key = db.session.scalar(
        db.select(ApiKey).where(ApiKey.owner_id == user.id, ApiKey.name == DEMO_KEY_NAME, ApiKey.revoked_at.is_(None))
    )
    if key is None:
        key, value = create_key(user, DEMO_KEY_NAME, "secret", "payg")
    else:
        value = rotate_key(key)
    _demo_credits(user)
    return {"email": user.email, "password": password, "api_key": value, "api_key_plan": key.plan}


DEMO_CREDITS = Decimal("100.00")


def _demo_credits(user: User) -> None:
    """The demo developer's account starts with 100 of credits, once (the key works at once)."""
    account = account_for(user)
    post(account, "adjustment", DEMO_CREDITS, f"demo-credits:{account.id}", memo="Demo credits")
