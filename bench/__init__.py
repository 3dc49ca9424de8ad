"""Benchmarks that print figures; run ``python -m bench.run``."""
