"""`python -m bench` runs the benchmark (see bench/run.py)."""

from bench.run import main

main()
