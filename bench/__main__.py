"""`python -m bench` runs the benchmark (see bench/run.py); `--profile catalog` the catalog's at size
(bench/catalog.py)."""

import sys

if "catalog" in sys.argv[1:] and "--profile" in sys.argv[1:]:
    from bench.catalog import main as catalog

    sys.exit(catalog(sys.argv[1:]))

from bench.run import main

main()
