"""``ge.utils``: helpers over whole graphs — ``GeUtils.infer_shape`` and
``GeUtils.check_node_support_on_aicore`` (GE-PY's utils module)."""

from ge.utils.ge_utils import GeUtils

__all__ = ["GeUtils"]
