"""Demo data for a first run: a catalog, two members (basic and pro) linked to two of its most
credited profiles, two apps (confidential and public), and a developer with a secret API key for
the catalog API.

Running it again is safe: the same catalog, members and apps are kept, and fresh credentials are
issued and printed (passwords and secrets are stored hashed, so they cannot be shown again).

All of it is one transaction, the caller's: `flask demo seed` commits once, then prints."""

from __future__ import annotations

from decimal import Decimal
from typing import Any, NamedTuple

from app.core.extensions import db
from app.models import Role, Tier, User
from app.models.base import new_secret
from app.services.apikeys import create_key, every_key, rotate_key
from app.services.billing.ledger import account_for, post
from app.services.catalog_seed import ensure_catalog, profiles_by_credit_count
from app.services.members import create_member, set_password
from app.services.registration import NewClient, register_client, rotate_secret, update_client
from app.store import store


class DemoMember(NamedTuple):
    email: str
    name: str
    tier: str
    catalog_rank: int  # which of the most-credited profiles the member is linked to (0 = the most)


DEMO_MEMBERS = (
    DemoMember("basic@demo.credits.example", "Billie Basic", Tier.BASIC.value, catalog_rank=1),
    DemoMember("pro@demo.credits.example", "Parker Pro", Tier.PRO.value, catalog_rank=0),
)
DEMO_DEVELOPER = {"email": "developer@demo.credits.example", "name": "Devi Developer"}
# An administrator, so the admin half of the console (members, signing keys, activity, every app's
# fee) can be seen on a local run too.
DEMO_ADMIN = {"email": "admin@demo.credits.example", "name": "Ada Admin"}
DEMO_KEY_NAME = "Demo server key"
DEMO_PORT = 5001  # `make run`'s default; `make run DEMO_PORT=...` (or DEMO_PORT=...) moves it
# One name everywhere: the demo relying party (examples/demo_app, APP_NAME) calls itself this, and
# the login, consent and account pages show the registered name.
DEMO_APP_NAME = "Liner Notes"


def demo_apps(demo_port: int = DEMO_PORT) -> tuple[NewClient, ...]:
    """The demo apps, their redirect and logout URIs on the port the demo app runs on: on macOS
    AirPlay Receiver holds 5000 and 5001, so `make run` takes other ports, and the registration
    follows (each seed writes the URIs for the port it is given)."""
    base = f"http://127.0.0.1:{demo_port}"
    return (
        NewClient(
            client_id="demo-web-app",
            name=DEMO_APP_NAME,
            redirect_uris=[f"{base}/callback", f"http://localhost:{demo_port}/callback"],
            post_logout_redirect_uris=[f"{base}/"],
            homepage_url=f"{base}/",
        ),
        NewClient(
            client_id="demo-native-app",
            name="Demo Native App",
            public=True,
            redirect_uris=["com.example.creditsdemo:/callback", f"{base}/callback"],
        ),
    )


def seed_accounts(
    catalog_seed: int | None = None, credits: int | None = None, rebuild: bool = False, demo_port: int = DEMO_PORT
) -> dict[str, Any]:
    """Create or refresh the demo catalog, members, admin and apps (registered for the demo app on
    `demo_port`); returns what a newcomer needs to try it. Flushed, not committed: the credentials
    returned are valid once the caller commits."""
    catalog = ensure_catalog(catalog_seed, credits, rebuild)
    linked = profiles_by_credit_count(len(DEMO_MEMBERS))
    members = []
    for spec in DEMO_MEMBERS:
        password = new_secret(12)
        profile_id = linked[spec.catalog_rank] if spec.catalog_rank < len(linked) else None
        user = db.session.scalar(db.select(User).where(User.email == spec.email))
        if user is None:
            # Demo addresses receive no mail: they are created verified, so `make run` works at once.
            user = create_member(
                spec.email, spec.name, password, tier=spec.tier, profile_id=profile_id, email_verified=True
            )
        else:
            user.profile_id, user.tier, user.email_verified = profile_id, spec.tier, True
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
    for app_spec in demo_apps(demo_port):
        client = store().apps.registered(app_spec.client_id) if app_spec.client_id else None
        if client is None:
            client, secret = register_client(app_spec)
        else:
            # The one name, and the URIs of this run's port (a database seeded under an older name,
            # or for another port, follows).
            if update_client(client, app_spec):
                client = store().apps.registered(client.client_id) or client
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
    return {
        "members": members,
        "apps": apps,
        "catalog": catalog.as_dict(),
        "developer": _demo_developer(),
        "admin": _demo_admin(),
    }


def _demo_admin() -> dict[str, Any]:
    """An administrator's login (a fresh password at every run)."""
    password = new_secret(12)
    user = db.session.scalar(db.select(User).where(User.email == DEMO_ADMIN["email"]))
    if user is None:
        user = create_member(DEMO_ADMIN["email"], DEMO_ADMIN["name"], password, role=Role.ADMIN, email_verified=True)
    else:
        user.role, user.email_verified = Role.ADMIN, True
        set_password(user, password)
    return {"email": user.email, "password": password}


def _demo_developer() -> dict[str, Any]:
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
    key = next((k for k in every_key(user.id) if k.name == DEMO_KEY_NAME and not k.is_revoked), None)
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
