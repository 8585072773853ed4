"""Benchmarks of Credits ID (`make bench`): see docs/performance.md."""
