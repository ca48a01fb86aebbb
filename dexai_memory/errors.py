"""Errors raised by dexai-memory.

Every error the library raises on purpose derives from one root, so callers can
catch ``DexaiMemoryError`` and know it is ours::

    DexaiMemoryError
    ├── ConfigError (ValueError)          bad value, key or file in memory.yaml
    ├── StorageError                       the database cannot be used
    │   ├── DatabaseCorrupt                the file is not a usable SQLite database
    │   └── MigrationError                 a schema migration failed (rolled back)
    ├── MemoryNotFound (LookupError)       no memory with that id for that user
    ├── InvalidMemory (ValueError)         a memory failed validation (bad type, range, ...)
    │   └── PinLimitReached                the most pinned memories already (lifecycle.max_pins)
    ├── InvalidSignals (ValueError)        context assembly signals of the wrong shape
    ├── EmbeddingError                     the embedder could not load or run
    ├── ProviderError                      a provider backend failed
    │   ├── ProviderUnavailable            the backend is down / not installed
    │   └── MissingExtra (ImportError)     an optional SDK is not installed
    ├── ExtractionError                    extraction failed (kept as a dead letter)
    ├── QueueError                         the extraction queue cannot accept work
    ├── DaemonError (RuntimeError)         the daemon was used in the wrong state (double start, ...)
    │   └── DaemonRunning                  another daemon holds the data directory
    └── HookError                          a hook could not do its job (never surfaces to the agent)

``MemoryError`` is a Python builtin and is deliberately never shadowed.
"""

from __future__ import annotations


class DexaiMemoryError(Exception):
    """Root of every error dexai-memory raises on purpose."""


class ConfigError(DexaiMemoryError, ValueError):
    """A configuration file or value is invalid.

    The message names the file, the dotted key and the reason.
    """

    def __init__(self, message: str, *, path: str | None = None, key: str | None = None):
        self.path = path
        self.key = key
        where = ""
        if path:
            where += f"{path}: "
        if key:
            where += f"{key}: "
        super().__init__(f"{where}{message}")


class StorageError(DexaiMemoryError):
    """The memory database cannot be opened, read or written."""


class DatabaseCorrupt(StorageError):
    """The database file exists but is not a usable SQLite database.

    The file is never modified when this is raised.
    """


class MigrationError(StorageError):
    """A schema migration failed; the database was left at its previous version."""


class MemoryNotFound(DexaiMemoryError, LookupError):
    """No memory with that id exists for that user (or it was hard-deleted)."""


class InvalidMemory(DexaiMemoryError, ValueError):
    """A memory or one of its fields failed validation."""


class InvalidSignals(DexaiMemoryError, ValueError):
    """The ``signals`` given to context assembly are not strings or lists of strings."""


class PinLimitReached(InvalidMemory):
    """Pinning one more memory would pass ``lifecycle.max_pins``; the message says how to make room."""


class EmbeddingError(DexaiMemoryError):
    """The embedding model could not be loaded or run."""


class ProviderError(DexaiMemoryError):
    """A memory provider backend failed."""


class ProviderUnavailable(ProviderError):
    """The provider backend is unreachable or unhealthy."""


class MissingExtra(ProviderError, ImportError):
    """An optional dependency is not installed; the message names the pip command."""


class ExtractionError(DexaiMemoryError):
    """Memory extraction from a turn failed."""


class ModelUnavailable(ExtractionError):
    """The model cannot be asked now (daily token budget spent, Claude Code missing or signed out,
    its call failed); the offline implementation answers instead."""


class QueueError(DexaiMemoryError):
    """The extraction queue could not accept or persist a job."""


class DaemonError(DexaiMemoryError, RuntimeError):
    """The memory daemon was used in a state that does not allow it (started twice, not running)."""


class DaemonRunning(DaemonError):
    """Another daemon holds the data directory's lock. ``waited``: the caller waited for it to go."""

    def __init__(self, message: str, *, waited: bool = False):
        super().__init__(message)
        self.waited = waited


class HookError(DexaiMemoryError):
    """A hook failed internally. Hooks catch this and still answer valid output."""
