"""The package version, in a module of its own so that anything may import it
without loading the public API (:mod:`dexai_memory`)."""

__version__ = "0.1.0"
