"""The catalog's guard at the edges (app/services/catalog_guard.py says what it is for): each
catalog call - a `/v1` or `/embed/v1` request through the key door, a tool server call - runs
inside `catalog_call()`, and its two refusals are answered in the API's envelope:

    a search, every search slot of the process -> 503 `Service temporarily unavailable: too many
    taken                                          searches at once` (Retry-After: 1)
    a statement ran past its time bound        -> 503 `Service temporarily unavailable: the catalog
                                                  took too long to answer` (Retry-After: 2)

Neither is counted on the meter (the gateway counts a call only once the API has answered it). A
busy refusal is made before the key is looked up, so it spends none of the key's budget either;
a timed-out call was admitted, so it spent its budget like any call that ran."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from flask import current_app, request

from app.core.extensions import db
from app.services.catalog_guard import CatalogBusy, CatalogGuard, StatementTimeout
from app.web.api.call_cost import call_cost
from app.web.api.envelope import STATUS_MESSAGES, ApiError

EXTENSION = "credits_id.catalog_guard"
BUSY = f"{STATUS_MESSAGES[503]}: too many searches at once"
TOO_SLOW = f"{STATUS_MESSAGES[503]}: the catalog took too long to answer"
BUSY_RETRY_AFTER = "1"
TOO_SLOW_RETRY_AFTER = "2"
log = logging.getLogger(__name__)


def catalog_guard() -> CatalogGuard:
    """This process's guard for the app, made from its settings at the first catalog call."""
    guard: CatalogGuard | None = current_app.extensions.get(EXTENSION)
    if guard is None:
        config = current_app.config
        shared = config["CATALOG_SLOTS_DIR"]
        guard = current_app.extensions.setdefault(
            EXTENSION,
            CatalogGuard(
                int(config["CATALOG_SEARCH_CONCURRENCY"]),
                int(config["CATALOG_STATEMENT_TIMEOUT_MS"]),
                Path(shared) if shared else None,
            ),
        )
    return guard


@contextmanager
def catalog_call(tool: str | None = None) -> Iterator[None]:
    """Run one catalog call under the guard - a tool server call named by its `tool`, else the
    `/v1` route's; a search (a call that counts more, app/web/api/call_cost.py) takes a slot - and
    answer its refusals as ApiError 503 with Retry-After."""
    try:
        with catalog_guard().call(search=call_cost(tool) > 1):
            yield
    except CatalogBusy:
        raise ApiError(503, BUSY, {"Retry-After": BUSY_RETRY_AFTER}) from None
    except StatementTimeout as timeout:
        db.session.rollback()  # the call's work, ORM and store alike: nothing is half-written
        log.warning("catalog call stopped on %s %s: %s", request.method, request.path, timeout)
        raise ApiError(503, TOO_SLOW, {"Retry-After": TOO_SLOW_RETRY_AFTER}) from None
