"""The package version, in one place (read by the package and the HTML report)."""
__version__ = "0.1.0"
