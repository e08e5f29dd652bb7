"""The installed ragaudit's version, for provenance and ``--version``."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ragaudit")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0.0.0+unknown"
