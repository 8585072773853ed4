"""Does "Forgot password?" answer a member's address as fast as a stranger's? In-process timing.

    python -m bench.forgot_timing --n 400
    python -m bench.forgot_timing --n 400 \
        --database-url postgresql+psycopg://credits_id@127.0.0.1:5432/credits_forgot

The app runs in this process on the bench dataset (bench/profile.py's `build`; SQLite in a
temporary folder unless `--database-url` names a PostgreSQL database, which is emptied and
rebuilt), driven by Flask's test client. Requests for the bench member's address and for addresses
nobody has (as long as the member's) alternate, each kind first in every other pair, with every
mail limit raised so each member request does the whole of its work; mails go to a temporary
outbox. The wall time of each request is taken around the test client's call, until the answer is there; then,
untimed, its response is closed (as a server does once it has sent it: app/web/background.py starts its
work there) and whatever work it left in the background is waited for. The medians (and the
10th and 90th percentiles) of the two kinds are printed side by side.
"""

from __future__ import annotations

import argparse
import logging
import re
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.dataset import BENCH_EMAIL  # noqa: E402

BACKGROUND = (
    "reset-link",
    "mail",
)  # the threads a request may leave working (app/web/background.py, app/services/mail.py)
UNLIMITED = {"MAIL_ACCOUNT_LIMIT": "1000000 per hour", "MAIL_IP_LIMIT": "1000000 per hour"}


def build(database_url: str | None):
    """The app on the bench dataset, every mail limit out of the way, mails to a temporary outbox."""
    from bench import profile

    outbox = tempfile.mkdtemp(prefix="credits-forgot-outbox-")
    app, _data = profile.build(0, database_url)
    app.config.update(UNLIMITED, MAIL_OUTBOX_DIR=outbox)
    return app


def timings(app, n: int) -> dict[str, list[float]]:
    """Milliseconds per request, member and stranger alternating, after a warm-up of each."""
    client = app.test_client()
    page = client.get("/password/forgot").get_data(as_text=True)
    token = re.search(r'name="csrf_token" type="hidden" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]
    seen: dict[str, list[float]] = {"member": [], "stranger": []}

    def ask(email: str) -> float:
        started = time.perf_counter()
        answer = client.post("/password/forgot", data={"csrf_token": token, "email": email})
        elapsed = (time.perf_counter() - started) * 1000
        assert answer.status_code == 200, answer.get_data(as_text=True)[:300]
        answer.close()  # as a server does once it has sent the answer: background work starts
        for thread in threading.enumerate():  # the work a request left behind, untimed
            if thread.name in BACKGROUND:
                thread.join()
        return elapsed

    for i in range(10):  # warm-up: caches, statement compilation, connections
        ask(BENCH_EMAIL)
        ask(f"w{i:04d}@example.test")
    for i in range(n):  # which goes first alternates: neither kind always follows the other's work
        pair = [("member", BENCH_EMAIL), ("stranger", f"s{i:04d}@example.test")]
        for kind, email in pair if i % 2 == 0 else reversed(pair):
            seen[kind].append(ask(email))
    return seen


def summary(kind: str, ms: list[float]) -> str:
    deciles = statistics.quantiles(ms, n=10)
    return f"{kind:9s} median {statistics.median(ms):6.2f} ms  p10 {deciles[0]:6.2f}  p90 {deciles[-1]:6.2f}  (n={len(ms)})"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=400, help="requests of each kind")
    ap.add_argument("--database-url", help="a PostgreSQL database on this machine (emptied first)")
    a = ap.parse_args(argv)
    app = build(a.database_url)
    logging.disable(logging.WARNING)  # the access lines and the outbox's notes, not the figures
    try:
        seen = timings(app, a.n)
    finally:
        logging.disable(logging.NOTSET)
    store = "PostgreSQL" if a.database_url else "SQLite"
    print(f"POST /password/forgot, in-process, {store}:")
    for kind, ms in seen.items():
        print("  " + summary(kind, ms))
    ratio = statistics.median(seen["member"]) / statistics.median(seen["stranger"])
    print(f"  member / stranger (medians): {ratio:.2f}")


if __name__ == "__main__":
    main()
