"""The package version, in a module that imports nothing."""
__version__ = "0.1.0"
