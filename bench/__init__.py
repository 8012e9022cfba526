"""Benchmark harness: ctxattn against its peers on the standard suite of shared/BENCH.md.

Run `python -m bench --help`; docs/benchmarks.md describes the method and every column.
"""
