"""``ge.ge_global``: process-wide setup (``GeApi.ge_initialize`` / ``ge_finalize``)."""

from ge.ge_global.geapi import GeApi

__all__ = ["GeApi"]
