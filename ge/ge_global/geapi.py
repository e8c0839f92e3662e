"""``GeApi``: process-wide initialisation, as GE-PY's ``ge.ge_global.GeApi``.

``ge_initialize(config)`` and ``ge_finalize()`` are classmethods (callable on the class or an
instance) and return 0. Decision: calling ``ge_initialize`` again replaces the options (GE calls
it undefined behaviour); ``ge_finalize`` without initialisation returns 0, as GE-PY does.
Sessions refuse work while ge is not initialised. ``ge_initialize`` also loads the Python custom
ops listed in ``ASCEND_CUSTOM_OPP_PATH`` (``ge.custom_op.bootstrap``; entries loaded before are
not run again); if that fails, its error propagates and ge stays uninitialised.
"""

from __future__ import annotations

import threading
from typing import Any

from ge._options import check_options
from ge.error import GeTypeError

__all__ = ["GeApi", "global_options", "is_initialized"]

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"initialized": False, "options": {}}


class GeApi:
    """``GeApi.ge_initialize(config)`` before using sessions; ``GeApi.ge_finalize()`` after."""

    @classmethod
    def ge_initialize(cls, config: dict[str, str]) -> int:
        if not isinstance(config, dict):
            raise GeTypeError(f"Ge init config must be a dict, got {type(config).__name__}")
        if not config:
            raise GeTypeError("Ge init config must not be empty")
        options = check_options(config, "Ge init config")
        # Python custom ops on ASCEND_CUSTOM_OPP_PATH load now, all or nothing: a failing
        # plugin raises (its own error) and leaves ge uninitialised and the registries unchanged
        from ge.custom_op.bootstrap import load_custom_op_plugins  # noqa: PLC0415

        load_custom_op_plugins()
        with _LOCK:
            _STATE["initialized"] = True
            _STATE["options"] = options
        return 0

    @classmethod
    def ge_finalize(cls) -> int:
        with _LOCK:
            _STATE["initialized"] = False
            _STATE["options"] = {}
        return 0


def is_initialized() -> bool:
    return bool(_STATE["initialized"])


def global_options() -> dict[str, str]:
    return dict(_STATE["options"])
