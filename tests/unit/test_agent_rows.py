"""An agent's row, kept by the store from its metadata document (`keep_agent`): a document URL
that an app registered another way already holds is refused, not a 500; and on PostgreSQL two
first sign-ins of one agent that race end with one row, neither request failing."""

from __future__ import annotations

import threading
import time

import pytest
from sqlalchemy import func, select, text

from app.core.extensions import db
from app.models import Client
from app.store import store
from app.store.apps import ClientIdTaken
from app.store.unit_of_work import commit
from tests.factories import make_client
from tests.production.servers import ON_POSTGRES

DOCUMENT = "https://agent.example/.well-known/client.json"


def agent_values(name: str = "Helpful Agent") -> dict:
    return {
        "name": name,
        "client_type": "public",
        "token_endpoint_auth_method": "none",
        "redirect_uris": ["http://127.0.0.1:33418/callback"],
        "post_logout_redirect_uris": [],
        "allowed_scopes": "openid profile",
        "require_pkce": True,
        "trusted": False,
        "homepage_url": None,
        "logo_url": None,
    }


def rows_for(client_id: str) -> int:
    return db.session.scalar(select(func.count()).select_from(Client).where(Client.client_id == client_id))


def test_an_id_held_by_an_app_registered_another_way_is_refused(app):
    with app.app_context():
        make_client(client_id=DOCUMENT)
        with pytest.raises(ClientIdTaken):
            store().apps.keep_agent(DOCUMENT, agent_values())


def test_a_known_agent_is_refreshed_not_inserted_again(app):
    with app.app_context():
        first = store().apps.keep_agent(DOCUMENT, agent_values("Old name"))
        commit()
        again = store().apps.keep_agent(DOCUMENT, agent_values("New name"))
        commit()
        assert again.id == first.id and again.name == "New name" and rows_for(DOCUMENT) == 1


@pytest.mark.skipif(not ON_POSTGRES, reason="SQLite serializes writers: only PostgreSQL meets the race")
def test_two_first_sign_ins_of_one_agent_that_race_keep_one_row(app):
    """The other request has inserted the agent's row and not yet committed when ours looks: our
    UPDATE finds nothing, our INSERT waits on the unique index, and when the other commits it
    loses - under a savepoint, so ours refreshes the other's row instead of failing."""
    values = agent_values()
    other = db.engine.connect()
    other.execute(
        text(
            "INSERT INTO clients (client_id, name, client_type, token_endpoint_auth_method, redirect_uris,"
            " post_logout_redirect_uris, allowed_scopes, require_pkce, trusted, status, registration, created_at, updated_at)"
            " VALUES (:id, 'Racing Agent', 'public', 'none', '[]', '[]', 'openid', true, false, 'active',"
            " 'metadata_document', now(), now())"
        ),
        {"id": DOCUMENT},
    )

    def commit_later() -> None:
        time.sleep(0.5)
        other.commit()

    committer = threading.Thread(target=commit_later)
    committer.start()
    try:
        with app.app_context():
            kept = store().apps.keep_agent(DOCUMENT, values)
            commit()
            assert kept.name == "Helpful Agent" and rows_for(DOCUMENT) == 1
    finally:
        committer.join()
        other.close()
