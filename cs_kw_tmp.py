import sys, time
from app.factory import create_app
from app.store import store
from bench.catalog import KEYWORDS, PREFIXES
app = create_app()
with app.app_context():
    c = store().catalog
    for k in KEYWORDS:
        row = []
        for kind in ("profile", "track", "album"):
            t = time.perf_counter(); c.search(kind, k, 10); row.append(round((time.perf_counter()-t)*1000, 1))
        print(k, row)
    for p in PREFIXES:
        t = time.perf_counter(); c.autocomplete(p, 10); print("auto", p, round((time.perf_counter()-t)*1000, 1))
