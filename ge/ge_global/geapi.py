"""``GeApi``: process-wide initialisation, as GE-PY's ``ge.ge_global.GeApi``.

``ge_initialize(config)`` and ``ge_finalize()`` are classmethods (callable on the class or an
instance) and return 0. Decision: calling ``ge_initialize`` again replaces the options (GE calls
it undefined behaviour); ``ge_finalize`` without initialisation returns 0, as GE-PY does.
Sessions refuse work while ge is not initialised. ``ge_initialize`` also loads the Python custom
ops listed in ``ASCEND_CUSTOM_OPP_PATH`` (``ge.custom_op.bootstrap``; entries loaded before are
not run again); if that fails, its error propagates and ge stays uninitialised.

Checks, in GE-PY's order and texts (GE_ERRORS.md §5, §13.1): ``config`` not a dict
(``TypeError`` ``"Ge init config must be a dictionary"``) → a key or value not a ``str``
(``AttributeError`` ``"'<type>' object has no attribute 'encode'"``: a ``GeAttributeError``,
also a ``TypeError``) → ``config == {}`` (``TypeError`` ``"Ge init config must not be empty"``)
→ what GE's ``GEInitialize`` refuses: a known option with a value outside its documented set is
``"GEInitialize failed; option '<key>' must be ..."`` (a ``GeError``, and a ``ValueError``).
"""

from __future__ import annotations

import threading
from typing import Any

from ge._options import encode_options, invalid_option
from ge.error import GeTypeError, GeValueError

__all__ = ["GeApi", "global_options", "is_initialized"]

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"initialized": False, "options": {}}


class GeApi:
    """``GeApi.ge_initialize(config)`` before using sessions; ``GeApi.ge_finalize()`` after."""

    @classmethod
    def ge_initialize(cls, config: dict[str, str]) -> int:
        if not isinstance(config, dict):
            raise GeTypeError(f"Ge init config must be a dictionary, got {type(config).__name__}")
        options = encode_options(config, "Ge init config")
        if not options:
            raise GeTypeError("Ge init config must not be empty")
        why = invalid_option(options)
        if why is not None:
            raise GeValueError("GEInitialize", why)
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
