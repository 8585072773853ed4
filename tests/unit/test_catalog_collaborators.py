"""Collaborators: a prolific profile's are counted when the catalog is loaded, anyone else's per
request - the same answer either way, page by page (app/store/catalog.py)."""

from __future__ import annotations

from sqlalchemy import func, select

from app.core.extensions import db
from app.models import Credit, ProfileCollaborator
from app.store import store
from tests.api_support import make_catalog


def _pages(profile_id: str) -> list[tuple[int, list]]:
    catalog = store().catalog
    return [catalog.collaborators(profile_id, limit, offset) for limit, offset in ((50, 0), (1, 0), (1, 1), (5, 40))]


def test_counted_at_load_or_per_request_the_answer_is_the_same(monkeypatch):
    made = make_catalog(credits=45)
    # More people on the member's tracks, so the page has an order to keep.
    extra = db.session.scalars(select(Credit).where(Credit.profile_id == made.mine).limit(6)).all()
    for n, credit in enumerate(extra):
        db.session.add(Credit(profile_id=made.other, track_id=credit.track_id, album_id=credit.album_id,
                              release_date=credit.release_date, id=1000 + n))  # fmt: skip
    db.session.flush()
    store().catalog.refresh_profile_stats()
    db.session.commit()
    assert db.session.scalar(select(func.count()).select_from(ProfileCollaborator)) == 0  # nobody prolific
    live = _pages(made.mine)
    assert live[0][0] == 1 and live[0][1][0].id == made.other and live[0][1][0].shared >= 6

    monkeypatch.setattr(type(store().catalog), "PRECOMPUTED_FROM", 2)
    store().catalog.refresh_profile_stats()
    db.session.commit()
    kept = db.session.scalar(select(func.count()).select_from(ProfileCollaborator))
    assert kept == 2  # mine -> other and other -> mine
    assert _pages(made.mine) == live
    assert _pages(made.other)[0][1][0].id == made.mine
    assert store().catalog.collaborators("no-such-profile", 20, 0) == (0, [])
