"""ragtui: see whether retrieval found the evidence."""

__version__ = "0.1.0"
