"""``ge.offline_compile``: compile graphs into offline models (``.om`` files).

``build_initialize``, ``build_model``, ``save_model``, ``bundle_build_model``,
``bundle_save_model``, ``build_finalize``, ``ModelBuffer`` and ``GraphWithOptions`` as in
GE-PY; ``ge.runtime.load_model`` loads and runs what they produce.
"""

from ge.offline_compile.offline_compile import (
    GraphWithOptions,
    ModelBuffer,
    build_finalize,
    build_initialize,
    build_model,
    bundle_build_model,
    bundle_save_model,
    save_model,
)

__all__ = [
    "GraphWithOptions",
    "ModelBuffer",
    "build_finalize",
    "build_initialize",
    "build_model",
    "bundle_build_model",
    "bundle_save_model",
    "save_model",
]
