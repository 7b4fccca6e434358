"""The package version, read by setuptools at build time (see CHANGELOG.md)."""

__version__ = "0.2.0"
