"""Patterns: the graphs a ``PatternFusionPass`` looks for, and what a match reports."""

from __future__ import annotations

from ge.passes._hooks import pattern

__all__ = ["pattern"]
