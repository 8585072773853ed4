"""The `credits` command-line client as a user runs it: the installed `.venv/bin/credits`, in a
subprocess with its own home and config directory, against a real server (granian).

What it must hold: each command's `--json` is the REST `data` exactly; the human output has the
right rows and fits the terminal; `--all` pages to the end; each exit code means one thing; a 429
is waited out and retried; `credits login` keeps the key readable by its owner alone and never
prints it; and the `api_requests` meter moves by exactly the requests the command made."""

from __future__ import annotations

import os
import pty
import re
import select
import stat
import subprocess
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import pytest
import redis
import requests
from rich.cells import cell_len
from sqlalchemy import func
from sqlalchemy import select as sql_select

from app.core.extensions import db
from app.models import ApiUsage, Credit, Profile, credit_role_links
from tests.api_support import make_catalog, uid
from tests.conftest import free_port, redis_test_url, start_server, unavailable
from tests.key_support import index_catalog, make_key

pytestmark = pytest.mark.live
CREDITS = Path(sys.executable).with_name("credits")
REDIS_URL = redis_test_url(5)  # the key-door tests' Redis database (keys are per key id)
CLOSED = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there


@pytest.fixture(scope="module", autouse=True)
def installed():
    if not CREDITS.exists():
        pytest.fail(f"{CREDITS} is missing: `make venv` installs the client (pip install -e .)", pytrace=False)


@pytest.fixture
def home(tmp_path) -> Path:
    (tmp_path / "home").mkdir()
    return tmp_path


def cli_env(home: Path, base_url: str | None, key: str | None, **extra: str) -> dict[str, str]:
    """The environment of a user's shell: their own home and config directory, no PYTHONPATH (the
    installed command must not need the source tree), no CREDITS_* left over from ours."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CREDITS_") and k not in ("PYTHONPATH", "COLUMNS")}
    env.update({"HOME": str(home / "home"), "XDG_CONFIG_HOME": str(home / "config"), "COLUMNS": "120"})
    env.update(extra)
    if base_url is not None:
        env["CREDITS_API_URL"] = base_url
    if key is not None:
        env["CREDITS_API_KEY"] = key
    return env


class Cli:
    """Runs `credits` for one user (a home) against one API root, with a key in the environment
    (or none: then the stored key, if any)."""

    def __init__(self, home: Path, base_url: str | None, key: str | None):
        self.home, self.base_url, self.key = home, base_url, key
        self.seen: list[str] = []  # everything printed, searched for the key at the end

    def __call__(self, *args: str, stdin: str | None = None, key: str | None = "same", **env: str):
        result = subprocess.run(
            [str(CREDITS), *args],
            input=stdin if stdin is not None else "",
            env=cli_env(self.home, self.base_url, self.key if key == "same" else key, **env),
            cwd=self.home,
            capture_output=True,
            text=True,
            timeout=120,
        )
        self.seen += [result.stdout, result.stderr]
        return result

    def json(self, *args: str):
        import json

        result = self(*args, "--json")
        assert result.returncode == 0, (args, result.stderr)
        assert result.stderr == ""
        return json.loads(result.stdout)


@pytest.fixture
def catalog():
    """tests/api_support.py's catalog, with `other` also credited on `mine`'s first track (a collaborator)."""
    made = make_catalog(credits=45)
    index_catalog()
    db.session.add(
        Credit(id=1000, profile_id=made.other, track_id=uid(1, 2), album_id=uid(1, 3), release_date=date(2020, 1, 1))
    )
    db.session.flush()
    db.session.execute(credit_role_links.insert(), [{"credit_id": 1000, "role_id": 4}])
    db.session.commit()
    return made


@pytest.fixture
def key():
    return make_key()


@pytest.fixture
def cli(home, live_server, key):
    runner = Cli(home, live_server.url + "/v1", key[1])
    yield runner
    assert not any(key[1] in text for text in runner.seen), "the key was printed"


def rest(live_server, value: str, method: str, path: str, **kw):
    response = requests.request(method, f"{live_server.url}/v1{path}", headers={"x-api-key": value}, timeout=30, **kw)
    assert response.status_code == 200, response.text
    return response.json()["data"]


def meter(api_key) -> int:
    db.session.expire_all()
    return db.session.scalar(
        sql_select(func.coalesce(func.sum(ApiUsage.count), 0)).where(ApiUsage.key_id == api_key.id)
    )


def request_ids(log: str) -> set[str]:
    return set(re.findall(r'"request_id": "([^"]+)"', log))


# -- every operation ------------------------------------------------------------------------------


def test_every_command_prints_the_rest_data_with_json(cli, live_server, catalog, key):
    value = key[1]
    track, album = uid(2, 2), uid(2, 3)
    cases = [
        (["profile", "get", catalog.mine], "GET", f"/profile/{catalog.mine}", {}),
        (["profile", "credits", catalog.mine], "GET", f"/profile/{catalog.mine}/credits", {}),
        (
            ["profile", "credits", catalog.mine, "--limit", "5", "--offset", "3"],
            "GET",
            f"/profile/{catalog.mine}/credits",
            {"params": {"limit": 5, "offset": 3}},
        ),
        (["profile", "charts", catalog.mine], "GET", f"/profile/{catalog.mine}/charts", {}),
        (["profile", "collaborators", catalog.mine], "GET", f"/profile/{catalog.mine}/collaborators", {}),
        (["track", "get", "--isrc", "USAAA2000001"], "GET", "/track/isrc/USAAA2000001", {}),
        (["track", "get", "--spotify", "sp1"], "GET", "/track/spotify/sp1", {}),
        (["track", "get", "--id", track], "GET", f"/track/id/{track}", {}),
        (["track", "albums", "--isrc", "USAAA2000001"], "GET", "/track/isrc/USAAA2000001/albums", {}),
        (["album", "get", "--upc", "000000000001"], "GET", "/album/upc/000000000001", {}),
        (["album", "get", "--spotify", "alb1"], "GET", "/album/spotify/alb1", {}),
        (["album", "get", "--id", album], "GET", f"/album/id/{album}", {}),
        (
            ["album", "credits", "--id", album, "--limit", "1"],
            "GET",
            f"/album/id/{album}/credits",
            {"params": {"limit": 1}},
        ),
        (["search", "Track", "1"], "POST", "/search", {"json": {"keyword": "Track 1"}}),
        (
            ["search", "otto", "--type", "profile,album"],
            "POST",
            "/search",
            {"json": {"keyword": "otto", "type": ["profile", "album"]}},
        ),
        (["autocomplete", "Ada"], "GET", "/search/autocomplete", {"params": {"q": "Ada"}}),
        (["roles"], "GET", "/roles", {}),
        (
            ["profiles", "search", "--names", "otto,ada", "--track-ids", f"{uid(1, 2)},{uid(2, 2)}"],
            "GET",
            "/profiles/search",
            {"params": {"names": "otto,ada", "track_ids": f"{uid(1, 2)},{uid(2, 2)}"}},
        ),
        (
            ["profiles", "search", "--names", "otto", "--spotify-track-ids", "sp0"],
            "GET",
            "/profiles/search",
            {"params": {"names": "otto", "spotify_track_ids": "sp0"}},
        ),
    ]
    for args, method, path, kw in cases:
        expected = rest(live_server, value, method, path, **kw)
        assert cli.json(*args) == expected, args
        assert expected not in ([], {"items": []}, None), args  # each case reads real rows


def test_the_human_output_has_the_rows_and_fits_the_terminal(cli, live_server, catalog, key):
    page = rest(live_server, key[1], "GET", f"/profile/{catalog.mine}/credits", params={"limit": 3})
    shown = cli("profile", "credits", catalog.mine, "--limit", "3")
    assert shown.returncode == 0 and shown.stderr == ""
    lines = shown.stdout.splitlines()
    titles = [row["track"]["title"] for row in page["items"]]
    rows = [next(n for n, line in enumerate(lines) if f" {title} " in f" {line} ") for title in titles]
    assert rows == sorted(rows), "newest release first, as the API pages them"
    first = lines[rows[0]]
    assert page["items"][0]["releaseDate"] in first and page["items"][0]["album"]["title"] in first
    assert "Rows 1–3 of 45. More: --offset 3, or --all." in shown.stdout
    assert "\x1b" not in shown.stdout  # not a terminal: no colours
    assert not [line for line in lines if line.endswith(" ")]  # no padding trails the lines

    card = cli("profile", "get", catalog.mine).stdout
    assert card.splitlines()[0] == "Ada Mine"
    assert re.search(r"city\s+Stockholm", card) and re.search(r"twitter\s+https://twitter.com/ada", card)
    assert "Producer." in card

    charts = cli("profile", "charts", catalog.mine).stdout
    assert re.search(r"Top Producers\s+3\s+-1\s+900\s+\+25\s+20\s+1\.5", charts)
    assert re.search(r"Top Songwriters\s+12\s+\+4\s+400\s+–\s+30\s+0\.25", charts)  # no scoreChange: a dash

    roles = cli("roles").stdout
    assert re.search(r"Producer\s+Co-Producer", roles) and re.search(r"Songwriter\s+Lyricist", roles)
    assert "3 roles." in roles

    found = cli("search", "otto").stdout
    assert "Profiles: 1 found" in found and "Otto Other" in found and "Tracks: 0 found" in found
    assert re.search(r"Albums: 48 found, first 10", cli("search", "album").stdout)

    assert re.search(r"profile\s+Ada Mine\s+" + catalog.mine, cli("autocomplete", "ad").stdout)
    track = cli("track", "get", "--isrc", "USAAA2000002").stdout
    assert track.splitlines()[0] == "Track 2" and re.search(r"ISRCs\s+USAAA2000002", track)
    assert re.search(r"UPC\s+000000000002", cli("album", "get", "--id", uid(3, 3)).stdout)
    assert re.search(r"2020-01-02\s+Album 2\s+0\s+" + uid(3, 3), cli("track", "albums", "--id", uid(3, 2)).stdout)
    assert re.search(
        r"Track 2\s+Ada Mine\s+Lyricist \(Songwriter\)", cli("album", "credits", "--upc", "000000000002").stdout
    )
    assert re.search(r"Otto Other\s+\d+\s+" + catalog.other, cli("profile", "collaborators", catalog.mine).stdout)
    who = cli("profiles", "search", "--names", "ada", "--spotify-track-ids", "sp1,sp3").stdout
    assert re.search(r"Ada Mine\s+" + catalog.mine + r"\s+2", who)

    # A long bio and long titles wrap to the terminal's width (COLUMNS), cell widths counted.
    db.session.get(Profile, catalog.mine).bio = "Produces records in Stockholm and writes songs for others. " * 8
    db.session.commit()
    for args in (["profile", "get", catalog.mine], ["profile", "credits", catalog.mine, "--limit", "5"]):
        narrow = cli(*args, COLUMNS="60")
        assert narrow.returncode == 0
        assert max(cell_len(line) for line in narrow.stdout.splitlines()) <= 60, narrow.stdout
    assert len(cli("profile", "get", catalog.mine, COLUMNS="60").stdout.splitlines()) > 12  # the bio wrapped


def test_catalog_text_cannot_drive_the_terminal(cli, catalog):
    """A name holding escape sequences prints as text: the control characters are replaced."""
    evil = str(uuid.uuid4())
    db.session.add(Profile(id=evil, name="Evil\x1b]0;owned\x07 \x1b[2J[bold]:fire:\u202eName", bio="x\x1b[31my"))
    db.session.commit()
    shown = cli("profile", "get", evil)
    assert shown.returncode == 0
    assert "\x1b" not in shown.stdout and "\x07" not in shown.stdout and "\u202e" not in shown.stdout
    assert "Evil\ufffd]0;owned\ufffd \ufffd[2J[bold]:fire:\ufffdName" in shown.stdout  # markup and emoji codes as typed
    raw = cli.json("profile", "get", evil)
    assert raw["name"].startswith("Evil\x1b]0;owned")  # --json is the data, exactly


# -- paging ----------------------------------------------------------------------------------------


def test_all_pages_until_offset_reaches_the_total_one_request_a_page(cli, live_server, catalog, key):
    api_key, value = key
    expected = [
        row
        for offset in (0, 20, 40)
        for row in rest(live_server, value, "GET", f"/profile/{catalog.mine}/credits", params={"offset": offset})[
            "items"
        ]
    ]
    before = meter(api_key)
    every = cli.json("profile", "credits", catalog.mine, "--all", "--limit", "20")
    assert meter(api_key) == before + 3  # 0-19, 20-39, 40-44: then offset 60 >= 45
    assert every == {"limit": 45, "offset": 0, "totalCount": 45, "items": expected}

    tail = cli.json("profile", "credits", catalog.mine, "--all", "--offset", "40", "--limit", "2")
    assert meter(api_key) == before + 3 + 3  # 40-41, 42-43, 44
    assert tail == {"limit": 5, "offset": 40, "totalCount": 45, "items": expected[40:]}

    default = cli.json("profile", "credits", catalog.mine, "--all")
    assert meter(api_key) == before + 6 + 1  # without --limit, --all asks for 50 a page
    assert default["items"] == expected

    past = cli.json("profile", "credits", catalog.mine, "--all", "--offset", "45")
    assert past == {"limit": 0, "offset": 45, "totalCount": 45, "items": []}
    assert meter(api_key) == before + 8

    human = cli("profile", "credits", catalog.mine, "--all", "--limit", "20")
    assert human.returncode == 0 and human.stderr == ""  # stderr is not a terminal: no progress bar
    assert "Rows 1–45 of 45." in human.stdout and "--offset" not in human.stdout
    assert all(row["track"]["title"] in human.stdout for row in expected)


def test_all_shows_a_progress_bar_when_stderr_is_a_terminal(home, live_server, catalog, key):
    """stderr on a pseudo-terminal: the bar is drawn there (and cleared), the rows go to stdout."""
    controller, terminal = pty.openpty()
    try:
        proc = subprocess.Popen(
            [str(CREDITS), "profile", "credits", catalog.mine, "--all", "--limit", "10", "--json"],
            env=cli_env(home, live_server.url + "/v1", key[1], TERM="xterm"),
            cwd=home,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=terminal,
        )
        os.close(terminal)
        drawn = b""
        while True:
            ready, _, _ = select.select([controller], [], [], 60)
            assert ready, "no output on the terminal"
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the command ended and closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        out = proc.stdout.read()
        assert proc.wait(timeout=60) == 0
    finally:
        os.close(controller)
    import json

    assert len(json.loads(out)["items"]) == 45
    assert b"Credits" in drawn and b"45/45" in drawn
    assert key[1].encode() not in drawn


# -- exit codes and messages --------------------------------------------------------------------------


def test_exit_codes_tell_the_failures_apart(cli, live_server, catalog, key):
    api_key, _ = key
    before = meter(api_key)

    unknown = cli("roles", key="msk_" + "x" * 43)
    assert unknown.returncode == 3 and unknown.stdout == ""
    said = re.fullmatch(r"credits: Unauthorized \(HTTP 401, request id (\S+)\)\n  .*credits login.*\n", unknown.stderr)
    assert said, unknown.stderr
    assert said.group(1) in request_ids(live_server.log_text())  # the id support can look up

    missing = cli("profile", "get", str(uuid.uuid4()))
    assert missing.returncode == 4 and missing.stdout == ""
    assert re.fullmatch(r"credits: Not found \(HTTP 404, request id \S+\)\n", missing.stderr), missing.stderr
    assert cli("track", "get", "--isrc", "NOPE").returncode == 4
    assert cli("album", "credits", "--upc", "nope", "--all").returncode == 4

    too_big = cli("profile", "credits", catalog.mine, "--limit", "51")
    assert too_big.returncode == 2
    assert "credits: Too big page, max page size is 50 (HTTP 400, request id" in too_big.stderr
    assert cli("profile", "collaborators", catalog.mine, "--offset", "-1").returncode == 2  # the API's 400
    assert meter(api_key) == before + 3  # found or not found counts; the 400s and the 401 do not

    usage = [
        ["track", "get"],
        ["track", "get", "--isrc", "A", "--id", "B"],
        ["album", "credits", "--isrc", "A"],
        ["search", "x", "--type", "song"],
        ["search"],
        ["profiles", "search", "--names", "ada"],
        ["profiles", "search", "--track-ids", uid(1, 2)],
        ["profile", "credits", catalog.mine, "--limit", "many"],
        ["nonsense"],
    ]
    for args in usage:
        refused = cli(*args)
        assert refused.returncode == 2 and "Usage:" in refused.stderr, (args, refused.stderr)
    assert meter(api_key) == before + 3  # usage errors send nothing


def test_the_key_is_checked_before_any_request(home, live_server, catalog, key):
    """No key, a publishable key or something else than a key: refused at once (exit 3), so
    nothing is sent - the address here has no server, and a request would have been exit 1."""
    _, publishable = make_key("publishable")
    response = requests.get(f"{live_server.url}/v1/roles", headers={"x-api-key": publishable}, timeout=30)
    assert response.status_code == 403 and response.json()["message"] == "You cannot consume this service"

    offline = Cli(home, CLOSED, None)
    refused = offline("roles", key=publishable)
    assert refused.returncode == 3
    assert refused.stderr.startswith("credits: CREDITS_API_KEY is a publishable key (mpk_…)")
    assert "secret key (msk_…)" in refused.stderr and publishable not in refused.stderr

    none = offline("roles", key=None)
    assert none.returncode == 3 and "credits: no API key" in none.stderr and "credits login" in none.stderr
    garbage = offline("roles", key="msk_bad key\nx-evil: 1")
    assert garbage.returncode == 3 and "not a secret API key" in garbage.stderr and "evil" not in garbage.stderr

    down = offline("roles", key=key[1])
    assert down.returncode == 1 and down.stderr == f"credits: cannot reach {CLOSED}: Connection refused\n"
    assert key[1] not in refused.stderr + none.stderr + down.stderr


def test_the_address_must_be_the_api_and_keep_the_key_private(home, live_server, catalog, key):
    cli = Cli(home, None, key[1])
    remote = cli("roles", "--help")  # --help needs no address, no key, no network
    assert remote.returncode == 0
    plain = cli("--base-url", "http://api.credits.example/v1", "roles")
    assert (
        plain.returncode == 2 and "refusing to send the API key over plain http to api.credits.example" in plain.stderr
    )
    assert cli("--base-url", "ftp://127.0.0.1/v1", "roles").returncode == 2

    origin = cli("--base-url", live_server.url, "roles", "--json")  # an origin alone means its /v1
    assert origin.returncode == 0 and origin.stdout.count('"child"') == 3
    wrong = cli("--base-url", live_server.url + "/console", "roles")
    assert wrong.returncode == 1
    assert wrong.stderr.startswith(f"credits: unexpected answer to GET {live_server.url}/console/roles: HTTP ")
    assert "ending in /v1" in wrong.stderr


def test_help_works_everywhere_without_a_key_or_a_network(home):
    cli = Cli(home, None, None)
    commands = [
        [],
        ["login"],
        ["logout"],
        ["profile"],
        *[["profile", op] for op in ("get", "credits", "charts", "collaborators")],
        ["track"],
        ["track", "get"],
        ["track", "albums"],
        ["album"],
        ["album", "get"],
        ["album", "credits"],
        ["search"],
        ["autocomplete"],
        ["roles"],
        ["profiles"],
        ["profiles", "search"],
    ]
    for args in commands:
        shown = cli(*args, "--help", CREDITS_API_URL="not a url")
        assert shown.returncode == 0 and shown.stdout.startswith("Usage: credits"), (args, shown.stderr)
    top = cli("--help").stdout
    assert "CREDITS_API_KEY" in top and "Exit codes" in top
    assert "--all" in cli("album", "credits", "--help").stdout
    assert re.match(r"credits, version \S+", cli("--version").stdout)


# -- rate limits -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_server(settings, tmp_path_factory):
    """A server counting key budgets in Redis, where a test can hold a key's window full."""
    try:
        redis.Redis.from_url(REDIS_URL, socket_timeout=5).ping()
    except redis.RedisError:
        unavailable("no Redis at " + REDIS_URL, "the Redis tests")
    port = free_port()
    proc = start_server(settings, port, tmp_path_factory.mktemp("cli-redis") / "server.log", REDIS_URL=REDIS_URL)
    yield f"http://127.0.0.1:{port}"
    proc.terminate()
    proc.wait(timeout=20)


@contextmanager
def budget_spent(base: str, api_key, value: str):
    """While the block runs, every request of the key is over its budget: its per-minute counter in
    Redis is held far above the plan, expiring within a second and renewed every 0.1 s (so each
    429 says `Retry-After: 1`). `release()` ends it at once."""
    store = redis.Redis.from_url(REDIS_URL, socket_timeout=5)
    assert requests.get(f"{base}/v1/roles", headers={"x-api-key": value}, timeout=30).status_code == 200
    counters = list(store.scan_iter(match=f"*{api_key.id}*"))
    assert counters, "the key's window lives in Redis, by key id"
    stop = threading.Event()

    def hold():
        while not stop.is_set():
            for name in counters:
                store.set(name, 1_000_000, px=1000)
            stop.wait(0.1)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    time.sleep(0.2)

    def release():
        stop.set()
        holder.join()
        for name in counters:
            store.delete(name)

    try:
        yield release
    finally:
        release()


def test_a_429_waits_retry_after_and_retries(home, redis_server, catalog):
    api_key, value = make_key(plan="payg")
    cli = Cli(home, redis_server + "/v1", value)
    with budget_spent(redis_server, api_key, value) as release:
        proc = subprocess.Popen(
            [str(CREDITS), "roles", "--json"],
            env=cli_env(home, redis_server + "/v1", value),
            cwd=home,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        first = proc.stderr.readline()  # said before the wait: the budget is spent right now
        release()
        out, rest_of_stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, rest_of_stderr
    assert re.fullmatch(
        r"credits: API rate limit exceeded: 300 per minute for this key \(HTTP 429, request id \S+\); "
        r"retrying in 1 s \(1 of 3\)\n",
        first,
    ), first
    assert rest_of_stderr == ""
    assert '"child": "Co-Producer"' in out
    assert meter(api_key) == 1 + 1  # the fixture's request and the retry that got through; a 429 is not metered

    with budget_spent(redis_server, api_key, value):
        started = time.monotonic()
        exhausted = cli("roles")
        waited = time.monotonic() - started
        fail_fast = cli("--retries", "0", "roles")
    assert exhausted.returncode == 5 and exhausted.stdout == ""
    lines = exhausted.stderr.splitlines()
    assert [re.sub(r"request id [^)]+", "request id X", line) for line in lines] == [
        f"credits: API rate limit exceeded: 300 per minute for this key (HTTP 429, request id X); retrying in 1 s ({n} of 3)"
        for n in (1, 2, 3)
    ] + [
        "credits: API rate limit exceeded: 300 per minute for this key (HTTP 429, request id X); gave up after 3 retries"
    ]
    assert waited >= 3  # each retry waited the second Retry-After asked for
    assert fail_fast.returncode == 5 and "gave up after 0 retries" in fail_fast.stderr
    assert "retrying" not in fail_fast.stderr
    assert meter(api_key) == 2 + 1  # the second fixture's request; none of the 429s


# -- login and logout ----------------------------------------------------------------------------------


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_login_checks_the_key_once_and_keeps_it_private(home, live_server, catalog, key):
    api_key, value = key
    cli = Cli(home, live_server.url + "/v1", None)
    stored = home / "config" / "credits" / "api-key"
    before = meter(api_key)

    saved = cli("login", stdin=value + "\n")
    assert saved.returncode == 0, saved.stderr
    assert meter(api_key) == before + 1  # checked once against the API
    assert saved.stdout == f"Key {value[:12]}… accepted by {live_server.url}/v1; saved in {stored}.\n"
    assert stored.read_text() == value + "\n"
    assert mode(stored) == 0o600 and mode(stored.parent) == 0o700
    assert [p.name for p in stored.parent.iterdir()] == ["api-key"]  # no partial file left behind

    assert cli.json("roles")["totalCount"] == 3  # the stored key, with no CREDITS_API_KEY
    assert meter(api_key) == before + 2

    other_key, other = make_key()
    overridden = cli("roles", "--json", key=other)  # the environment wins over the stored key
    assert overridden.returncode == 0 and meter(other_key) == 1 and meter(api_key) == before + 2

    stored.chmod(0o644)
    loose = cli("roles")
    assert loose.returncode == 0 and f"warning: {stored} can be read by other users" in loose.stderr

    out = cli("logout")
    assert out.returncode == 0 and out.stdout == f"Removed the key saved in {stored}.\n" and not stored.exists()
    assert cli("logout").stdout == "No key was saved.\n"
    gone = cli("roles")
    assert gone.returncode == 3 and "no API key" in gone.stderr
    assert not any(value in text or other in text for text in cli.seen)


def test_login_stores_nothing_the_api_refuses(home, live_server, catalog, key):
    cli = Cli(home, live_server.url + "/v1", None)
    stored = home / "config" / "credits" / "api-key"
    _, publishable = make_key("publishable")
    unknown = "msk_" + "y" * 43
    refused = cli("login", stdin=unknown + "\n")
    assert refused.returncode == 3 and "Unauthorized (HTTP 401" in refused.stderr
    wrong_kind = Cli(home, CLOSED, None)("login", stdin=publishable + "\n")  # refused before any request
    assert wrong_kind.returncode == 3 and "publishable key" in wrong_kind.stderr
    empty = cli("login", stdin="")
    assert empty.returncode == 2 and "no key on standard input" in empty.stderr
    assert not stored.exists()
    assert all(unknown not in t and publishable not in t for t in [*cli.seen, wrong_kind.stdout, wrong_kind.stderr])

    # Without XDG_CONFIG_HOME: ~/.config/credits, a directory it tightens to 0700 if it was looser.
    loose_dir = home / "home" / ".config" / "credits"
    loose_dir.mkdir(parents=True, mode=0o755)
    loose_dir.chmod(0o755)
    saved = cli("login", stdin=key[1] + "\n", XDG_CONFIG_HOME="")
    assert saved.returncode == 0, saved.stderr
    assert mode(loose_dir) == 0o700 and mode(loose_dir / "api-key") == 0o600


def test_login_on_a_terminal_does_not_echo_the_key(home, live_server, catalog, key):
    """The prompt on a real terminal (the command's controlling tty): the key typed is not shown."""
    controller, terminal = pty.openpty()
    # A new session whose controlling terminal is the pseudo-terminal, as a login shell has one.
    session = (
        "import os, sys; os.setsid(); fd = os.open(sys.argv[1], os.O_RDWR); "
        "[os.dup2(fd, n) for n in (0, 1, 2)]; os.execv(sys.argv[2], sys.argv[2:])"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", session, os.ttyname(terminal), str(CREDITS), "login"],
        env=cli_env(home, live_server.url + "/v1", None),
        cwd=home,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    screen = b""
    try:
        while b"Secret API key" not in screen:
            ready, _, _ = select.select([controller], [], [], 60)
            assert ready, screen
            screen += os.read(controller, 4096)
        os.close(terminal)  # only now: the terminal ends when the command closes it
        terminal = None
        os.write(controller, key[1].encode() + b"\n")
        while True:
            ready, _, _ = select.select([controller], [], [], 60)
            assert ready, screen
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                break
            if not chunk:
                break
            screen += chunk
        assert proc.wait(timeout=60) == 0, screen
    finally:
        os.close(controller)
        if terminal is not None:
            os.close(terminal)
    assert b"accepted by" in screen
    assert key[1].encode() not in screen
    assert (home / "config" / "credits" / "api-key").read_text() == key[1] + "\n"


# -- the meter -------------------------------------------------------------------------------------------


def test_the_meter_moves_by_exactly_the_requests_made(cli, catalog, key):
    api_key, _ = key
    steps = [
        (["profile", "get", catalog.mine], 0, 1),
        (["profile", "credits", catalog.mine, "--all", "--limit", "20"], 0, 3),
        (["profile", "collaborators", catalog.mine, "--all", "--limit", "1"], 0, 1),  # one collaborator
        (["track", "albums", "--isrc", "USAAA2000001", "--all"], 0, 1),
        (["album", "credits", "--upc", "000000000001"], 0, 1),
        (["search", "Track"], 0, 1),
        (["autocomplete", "Tr"], 0, 1),
        (["roles", "--json"], 0, 1),
        (["profiles", "search", "--names", "ada", "--track-ids", uid(2, 2)], 0, 1),
        (["profile", "get", str(uuid.uuid4())], 4, 1),  # a 404 is a call
        (["profile", "credits", catalog.mine, "--limit", "51"], 2, 0),  # a refused request (400) is not
        (["track", "get"], 2, 0),  # a usage error sends nothing
    ]
    for args, code, requests_made in steps:
        before = meter(api_key)
        result = cli(*args)
        assert result.returncode == code, (args, result.stderr)
        assert meter(api_key) == before + requests_made, args
