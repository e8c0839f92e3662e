"""GE's layout strings for ``Format`` (``FormatToSerialString``), used in AIR ``layout`` fields."""

from __future__ import annotations

from ge.graph.types import Format

__all__ = ["format_from_string", "format_to_string"]

_F = Format
# Members whose string is not simply the name without "FORMAT_".
_SPECIAL = {
    _F.FORMAT_FRACTAL_DECONV_SP_STRIDE8_TRANS: "DECONV_SP_STRIDE8_TRANS",
    _F.FORMAT_HASHTABLE_LOOKUP_LOOKUPS: "LOOKUP_LOOKUPS",
    _F.FORMAT_HASHTABLE_LOOKUP_KEYS: "LOOKUP_KEYS",
    _F.FORMAT_HASHTABLE_LOOKUP_VALUE: "LOOKUP_VALUE",
    _F.FORMAT_HASHTABLE_LOOKUP_OUTPUT: "LOOKUP_OUTPUT",
    _F.FORMAT_HASHTABLE_LOOKUP_HITS: "LOOKUP_HITS",
    _F.FORMAT_FRACTAL_ZZ: "RESERVED",
    _F.FORMAT_RESERVED: "FORMAT_RESERVED",
}
_TO_STRING = {f: _SPECIAL.get(f, f.name.removeprefix("FORMAT_")) for f in Format}
_FROM_STRING = {s: f for f, s in reversed(list(_TO_STRING.items()))}


def format_to_string(fmt: Format) -> str:
    """``Format.FORMAT_NCHW`` -> ``"NCHW"``."""
    return _TO_STRING[Format(fmt)]


def format_from_string(text: str) -> Format | None:
    """Inverse of :func:`format_to_string` (a ``":<sub_format>"`` suffix is ignored)."""
    return _FROM_STRING.get(text.split(":", 1)[0])
