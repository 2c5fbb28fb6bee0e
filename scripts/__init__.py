"""Benchmarks and generators (importable by tests as ``scripts.*``)."""
