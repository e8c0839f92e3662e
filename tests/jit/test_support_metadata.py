"""The support table's sources: ``ge.es.numpy_rules``' public records (``RuleInfo`` filled by
the rule registrar, ``UfuncInfo``, ufunc method keywords, ``MethodInfo``), which
``ge.jit._support`` reads instead of private names of the rule modules; and
``NotSupportedError``, which lives in ``ge.error`` (``ge.jit``'s is the same class)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ge
import ge.error
from ge.es import numpy_rules, tensor_holder
from ge.es._numpy_common import rule_registrar
from ge.es.numpy_rules import MethodInfo, RuleInfo, UfuncInfo

SUPPORT = Path(ge.__file__).parent / "jit" / "_support.py"


def test_not_supported_error_is_ge_errors() -> None:
    assert ge.jit.NotSupportedError is ge.error.NotSupportedError
    assert issubclass(ge.error.NotSupportedError, ge.error.GeTypeError)
    with pytest.raises(ge.error.NotSupportedError, match=r"numpy\.lexsort"):
        ge.jit(lambda x: np.lexsort(x, axis=0))(np.ones((2, 3), np.float32))


def test_the_support_module_reads_no_private_names_of_rule_modules() -> None:
    tree = ast.parse(SUPPORT.read_text())
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ge.es"):
            assert not any(part.startswith("_") for part in node.module.split(".")), node.module  # type: ignore[union-attr]
            assert not any(a.name.startswith("_") for a in node.names), ast.dump(node)
            modules.update(a.asname or a.name for a in node.names)
    private = [
        f"{node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in modules
        and node.attr.startswith("_")
    ]
    assert private == []
    assert "getclosurevars" not in SUPPORT.read_text()


def test_registered_rules_carry_their_keywords() -> None:
    rules = numpy_rules.function_rules()
    assert rules["cumsum"] == RuleInfo("supported", frozenset({"a", "axis", "dtype"}))
    assert rules["nanquantile"].keywords == frozenset(
        {"a", "q", "axis", "overwrite_input", "method", "keepdims"}
    )
    assert rules["pad"].keywords is None  # it checks its own (**kwargs, by mode)


def test_refused_rules_say_why() -> None:
    info = numpy_rules.function_rules()["nonzero"]
    assert info.status == "refused"
    assert "output size depends on the values" in info.why and "np.where" in info.why
    row = ge.jit.numpy_support().row("numpy.nonzero")
    assert row is not None and (row.status, row.notes) == ("refused", info.why)


def test_a_rule_registered_later_appears_with_its_keywords(monkeypatch: pytest.MonkeyPatch) -> None:
    table: dict[str, Any] = {}

    @rule_registrar(table)("lexsort")
    def _lexsort(anchor: Any, keys: Any, axis: int = -1) -> Any:
        return keys

    monkeypatch.setitem(tensor_holder._FUNCTIONS, "lexsort", table["lexsort"])
    assert numpy_rules.function_rules()["lexsort"] == RuleInfo(
        "supported", frozenset({"keys", "axis"})
    )
    assert numpy_rules.has_rule("lexsort")
    row = ge.jit.numpy_support().row("numpy.lexsort")
    assert row is not None and (row.status, row.notes) == ("supported", "")


def test_ufunc_records() -> None:
    assert numpy_rules.ufunc_rule("add") == UfuncInfo("Add")
    assert numpy_rules.ufunc_rule("deg2rad") == UfuncInfo(None)  # several ops
    assert numpy_rules.ufunc_rule("frexp") is None
    assert numpy_rules.ufunc_method_keywords("reduce") == frozenset({"axis", "dtype", "keepdims"})
    assert numpy_rules.ufunc_method_keywords("reduceat") is None
    assert numpy_rules.ufunc_accumulator("add") == "cumsum"
    assert numpy_rules.ufunc_accumulator("maximum") is None


def test_ndarray_method_records() -> None:
    item = numpy_rules.ndarray_method("item")
    assert item is not None and item.always_raises
    cumsum = numpy_rules.ndarray_method("cumsum")
    assert isinstance(cumsum, MethodInfo) and cumsum.forwards_to == "cumsum"
    assert not cumsum.always_raises
    assert numpy_rules.ndarray_method("tofile") is None
    assert numpy_rules.ndarray_method("__bool__") == MethodInfo(None, True, "")
