"""`flask catalog generate`: deterministic by seed, realistic where search and paging feel it,
loaded through the store's bulk path (COPY on PostgreSQL), with the figures search shows."""

from __future__ import annotations

import hashlib

from sqlalchemy import func, select, text

from app.core.extensions import db
from app.models import Album, ChartRow, Credit, Profile, Track, TrackIsrc
from app.store import store

SIZES = ["--tracks", "300", "--profiles", "80", "--albums", "40", "--credits", "1500"]


def _digest() -> str:
    rows = (
        db.session.execute(select(Track.id, Track.title, Track.popularity).order_by(Track.id)).all()
        + db.session.execute(select(Credit.id, Credit.profile_id, Credit.track_id).order_by(Credit.id)).all()
    )
    return hashlib.sha256(repr(rows).encode()).hexdigest()


def test_generate_is_deterministic_and_realistic(app):
    runner = app.test_cli_runner()
    result = runner.invoke(args=["catalog", "generate", *SIZES, "--seed", "5", "--json"])
    assert result.exit_code == 0, result.output
    db.session.expire_all()
    count = lambda model: db.session.scalar(select(func.count()).select_from(model))  # noqa: E731
    assert (count(Track), count(Profile), count(Credit)) == (300, 80, 1500)
    assert count(TrackIsrc) >= 300 and count(ChartRow) > 0
    first = _digest()

    titles = list(db.session.scalars(select(Track.title)))
    names = list(db.session.scalars(select(Profile.name)))
    assert any("(feat. " in t for t in titles)  # featuring artists
    assert len(set(titles)) < len(titles)  # the same title more than once
    assert any(any(ord(ch) > 127 for ch in n) for n in names)  # accents
    # Popularity is skewed: most tracks are far from the top.
    popularity = sorted(db.session.scalars(select(Track.popularity)))
    assert popularity[len(popularity) // 2] < 30 and popularity[-1] > 80
    # The figures search shows were computed from the credits.
    busiest = db.session.execute(select(Profile.id, Profile.credit_count).order_by(Profile.credit_count.desc())).first()
    assert busiest.credit_count == db.session.scalar(select(func.count()).where(Credit.profile_id == busiest.id))
    assert busiest.credit_count > 1500 / 80  # a Zipf-like spread: the busiest holds more than its share
    # Searchable at once, through the text index the triggers or the GIN indexes keep.
    word = titles[0].split()[0]
    assert store().catalog.search(["track"], word, 10)["track"].total > 0

    refused = runner.invoke(args=["catalog", "generate", *SIZES])
    assert refused.exit_code != 0 and "--replace" in refused.output
    again = runner.invoke(args=["catalog", "generate", *SIZES, "--seed", "5", "--replace"])
    assert again.exit_code == 0, again.output
    db.session.expire_all()
    assert _digest() == first
    other = runner.invoke(args=["catalog", "generate", *SIZES, "--seed", "6", "--replace"])
    assert other.exit_code == 0, other.output
    db.session.expire_all()
    assert _digest() != first
    # A new catalog, a new vocabulary: the words of its names and no other (a typo is looked up there).
    keys = [k for model in (Profile, Track, Album) for k in db.session.scalars(select(model.search_key))]
    vocabulary = set(db.session.scalars(text("SELECT word FROM catalog_words")))
    assert vocabulary == {w for k in keys for w in k.split()}
