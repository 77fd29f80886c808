"""Benchmarks run through ``tempura bench``; each module owns one benchmark."""
