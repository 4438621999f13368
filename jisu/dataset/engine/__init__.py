"""Execution of dataset pipelines: threads, ordered stages, RNG streams, iterators."""
