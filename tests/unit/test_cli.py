import json

from app.core.extensions import db
from app.models import Client, User
from app.models.base import sha256_hex


def run(app, *args, input=None):
    result = app.test_cli_runner().invoke(args=list(args), input=input)
    return result


def test_users_create_prints_id_and_sub_as_json(app):
    result = run(
        app,
        "users",
        "create",
        "--email",
        "Ana@Example.com",
        "--name",
        "Ana",
        "--tier",
        "pro",
        "--password-stdin",
        "--json",
        input="a long enough password\n",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    user = db.session.get(User, data["id"])
    assert user.sub == data["sub"] and user.email == "ana@example.com" and user.tier == "pro"
    assert "password" not in data  # it came from stdin: nothing to show
    assert data["verification_sent_to"] == "ana@example.com" and user.email_verified is False


def test_users_create_without_a_password_invites_the_member_by_mail(app, mailbox):
    """Behaviour change (issue 18): no password is generated and shown any more; the member gets a
    mail with a link to choose one (which verifies the address)."""
    result = run(app, "users", "create", "--email", "bo@example.com", "--name", "Bo", "--admin", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["role"] == "admin" and "password" not in data and data["invitation_sent_to"] == "bo@example.com"
    mail = mailbox.wait_for("bo@example.com")
    assert mail.subject == "You are invited to Credits ID" and "/invitation?token=" in mail.link()
    again = run(app, "users", "invite", "bo@example.com", "--json")
    assert again.exit_code == 0 and mailbox.wait_for("bo@example.com", count=2).link() != mail.link()
    assert run(app, "users", "invite", "nobody@example.com").exit_code != 0


def test_users_create_reports_a_mail_that_could_not_be_sent(app, monkeypatch):
    from tests.conftest import free_port

    monkeypatch.setitem(app.config, "SMTP_URL", f"smtp://127.0.0.1:{free_port()}")  # nothing listens
    result = run(app, "users", "create", "--email", "di@example.com", "--name", "Di")
    assert (
        result.exit_code != 0
        and "was not sent" in result.output
        and "flask users invite di@example.com" in result.output
    )
    assert User.query.filter_by(email="di@example.com").count() == 1  # the member exists: invite again


def test_users_create_rejects_duplicates_and_bad_input(app):
    run(app, "users", "create", "--email", "cy@example.com", "--name", "Cy")
    again = run(app, "users", "create", "--email", "CY@example.com", "--name", "Cy")
    assert again.exit_code != 0 and "already exists" in again.output
    bad = run(app, "users", "create", "--email", "not-an-email", "--name", "X")
    assert bad.exit_code != 0 and "valid email" in bad.output
    assert User.query.count() == 1


def test_clients_create_shows_the_secret_once_and_stores_its_hash(app):
    result = run(
        app,
        "clients",
        "create",
        "--name",
        "Shop",
        "--redirect-uri",
        "https://shop.example/cb",
        "--redirect-uri",
        "http://127.0.0.1:8000/cb",
        "--auth-method",
        "client_secret_post",
        "--scope",
        "openid credits:read",  # an unknown name is refused (tests/integration/test_cli_operator.py)
        "--json",
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    client = Client.query.filter_by(client_id=data["client_id"]).one()
    assert client.client_secret_hash == sha256_hex(data["client_secret"])
    assert client.redirect_uris == ["https://shop.example/cb", "http://127.0.0.1:8000/cb"]
    assert client.allowed_scopes == "openid credits:read"
    assert client.token_endpoint_auth_method == "client_secret_post"
    listing = run(app, "clients", "list", "--json")
    assert data["client_secret"] not in listing.output
    assert json.loads(listing.output)[0]["client_id"] == data["client_id"]


def test_clients_create_public_has_no_secret(app):
    data = json.loads(
        run(
            app, "clients", "create", "--name", "Phone", "--public", "--redirect-uri", "com.example.phone:/cb", "--json"
        ).output
    )
    assert data["client_secret"] is None and data["token_endpoint_auth_method"] == "none"


def test_clients_create_rejects_a_bad_redirect_uri_and_says_why(app):
    result = run(app, "clients", "create", "--name", "Bad", "--redirect-uri", "http://evil.example/cb")
    assert result.exit_code != 0
    assert "http://evil.example/cb" in result.output and "https" in result.output
    assert Client.query.count() == 0


def test_keys_list_and_ensure(app):
    listing = json.loads(run(app, "keys", "list", "--json").output)
    assert [k["state"] for k in listing].count("active") == 1
    ensured = json.loads(run(app, "keys", "ensure", "--json").output)
    assert (
        ensured["generated"] is None and ensured["active"] == [k for k in listing if k["state"] == "active"][0]["kid"]
    )


def test_demo_seed_is_repeatable_and_prints_fresh_credentials(app):
    first = json.loads(run(app, "demo", "seed", "--json").output)
    second = json.loads(run(app, "demo", "seed", "--json").output)
    assert [m["tier"] for m in first["members"]] == ["basic", "pro"]
    assert {a["client_id"] for a in first["apps"]} == {"demo-web-app", "demo-native-app"}
    assert User.query.count() == 4 and Client.query.count() == 2  # the two members, the developer, the admin
    # Demo addresses receive no mail: created (and kept) verified, so `make run` works at once.
    assert all(u.email_verified for u in User.query)
    assert first["members"][0]["password"] != second["members"][0]["password"]
    web = [a for a in second["apps"] if a["client_id"] == "demo-web-app"][0]
    assert Client.query.filter_by(client_id="demo-web-app").one().check_client_secret(web["client_secret"])
    assert first["developer"]["api_key"] != second["developer"]["api_key"]


def test_demo_seed_names_the_web_app_as_the_demo_app_calls_itself(app):
    """One name (issue 21, item 2): the demo relying party's own name, also on a database seeded
    under the old name."""
    from examples.demo_app import APP_NAME

    first = json.loads(run(app, "demo", "seed", "--json").output)
    assert [a["name"] for a in first["apps"] if a["client_id"] == "demo-web-app"] == [APP_NAME]
    Client.query.filter_by(client_id="demo-web-app").one().name = "Demo Credits App"
    db.session.commit()
    run(app, "demo", "seed", "--json")
    assert Client.query.filter_by(client_id="demo-web-app").one().name == APP_NAME


def test_the_demo_app_shows_each_credit_role_by_name():
    from examples.demo_app.api import roles

    assert (
        roles(
            [
                {"child": "Co-Producer", "parent": "Producer"},
                {"child": "Producer", "parent": "Producer"},
                {"child": "Mixer", "parent": None},
            ]
        )
        == "Co-Producer (Producer), Producer, Mixer"
    )
    assert roles(None) == "" and roles([]) == ""
