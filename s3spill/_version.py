"""The package version, apart from ``__init__`` so any module can read it without a cycle."""

__version__ = "0.1.0"
