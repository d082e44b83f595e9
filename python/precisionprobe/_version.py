"""The package's version, in one place: __init__ exports it and pyproject.toml reads it."""
__version__ = "0.1.0"
