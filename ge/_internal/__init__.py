"""Internals shared by several public packages (not part of the API)."""
