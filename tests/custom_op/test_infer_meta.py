"""A prototype as an op: ``ge.es.custom.<OpType>``, infer_meta run at build time (errors at the
user's line, nothing half-built), the values it receives for every input and attribute kind,
result checks, and re-inference with real shapes (``GeUtils.infer_shape``, run time)."""

# ruff: noqa: UP006, UP035, UP045  (typing.List/Optional are annotation kinds under test)

import re
from typing import Any, List, Optional, Tuple

import numpy as np
import pytest

import ge.es.custom
from ge.custom_op import register_op
from ge.error import InferError
from ge.es import GraphBuilder
from ge.graph import DataType
from ge.graph import Tensor as GraphTensor
from ge.graph import TensorDesc as GraphTensorDesc
from ge.ops import get_op
from ge.runtime import Tensor, TensorDesc
from ge.utils import GeUtils

SEEN: list[Any] = []


def _record(*args: Any, **kwargs: Any) -> None:
    SEEN.append((args, kwargs))


@pytest.fixture(autouse=True)
def _clear_seen() -> None:
    SEEN.clear()


def _dims(d: TensorDesc) -> list[int]:
    return d.shape.origin_shape.dims


def test_es_custom_function_from_import_and_attribute(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x1: TensorDesc, x2: TensorDesc) -> TensorDesc:
        """Adds two tensors."""
        return TensorDesc(x1.shape, x1.data_type)

    module = __import__("ge.es.custom", fromlist=[op_type])
    fn = getattr(module, op_type)
    assert fn is getattr(ge.es.custom, op_type) and fn is getattr(ge.es, op_type)
    assert fn.__module__ == "ge.es.custom" and fn.__name__ == op_type
    assert op_type in dir(ge.es.custom)
    assert "Adds two tensors." in (fn.__doc__ or "")
    assert [p for p in fn.__signature__.parameters] == ["x1", "x2"]
    exec(f"from ge.es.custom import {op_type} as imported", globals())
    assert imported is fn  # type: ignore[name-defined]  # noqa: F821


def test_infer_meta_runs_at_build_with_runtime_descs(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc, *, scale: float = 2.0) -> TensorDesc:
        _record(type(x), _dims(x), x.data_type, scale)
        return TensorDesc([*_dims(x), 2], DataType.DT_INT32)

    b = GraphBuilder("g")
    y = getattr(ge.es.custom, op_type)(b.create_input(0, shape=[-1, 3]), scale=0.5)
    assert [((TensorDesc, [-1, 3], DataType.DT_FLOAT, 0.5), {})] == SEEN
    assert y.shape == (-1, 3, 2) and y.data_type is DataType.DT_INT32
    node = y._node
    assert node.type == op_type and node._op is get_op(op_type)


def test_an_infer_meta_error_names_the_call_and_the_line_and_builds_nothing(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x1: TensorDesc, x2: TensorDesc) -> TensorDesc:
        if _dims(x1) != _dims(x2):
            raise ValueError("inputs must have the same shape")
        return TensorDesc(x1.shape, x1.data_type)

    b = GraphBuilder("g")
    x, y = b.create_input(0, shape=[2, 3]), b.create_input(1, shape=[4])
    with pytest.raises(InferError) as info:
        getattr(ge.es.custom, op_type)(x, y)  # the line named in the error
    text = str(info.value)
    assert isinstance(info.value, ValueError)
    assert text.startswith(f"{op_type}(x1: f32[2,3], x2: f32[4]) at test_infer_meta.py:")
    assert re.search(
        r"infer_meta \S+infer raised ValueError: inputs must have the same shape", text
    )
    graph = b.build_and_reset([x])  # the failed call left no node behind
    assert [n.type for n in graph.get_all_nodes()].count(op_type) == 0


def test_inputs_of_every_kind_reach_infer_meta(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(
        x: TensorDesc, bias: Optional[TensorDesc], xs: List[TensorDesc]
    ) -> Tuple[TensorDesc, List[TensorDesc]]:
        _record(_dims(x), None if bias is None else _dims(bias), [_dims(d) for d in xs])
        return TensorDesc(x.shape, x.data_type), [TensorDesc(d.shape, d.data_type) for d in xs]

    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    a, c = b.create_input(1, shape=[3]), b.create_input(2, shape=[4, 4])
    fn = getattr(ge.es.custom, op_type)
    out = fn(x, None, [a, c], output1_num=2)
    assert SEEN[-1] == (([2], None, [[3], [4, 4]]), {})
    assert out.output0.shape == (2,) and [t.shape for t in out.output1] == [(3,), (4, 4)]
    fn(x, a, [], output1_num=0)
    assert SEEN[-1] == (([2], [3], []), {})


ATTR_CASES: list[tuple[str, Any, Any, Any]] = [
    # name, annotation, value passed, value infer_meta sees
    ("i", int, 7, 7),
    ("f", float, 0.25, 0.25),
    ("b", bool, True, True),
    ("s", str, "mode", "mode"),
    ("d", DataType, DataType.DT_INT8, DataType.DT_INT8),
    ("li", List[int], [1, 2], [1, 2]),
    ("lf", List[float], [0.5], [0.5]),
    ("lb", List[bool], [False, True], [False, True]),
    ("ls", List[str], ["a", "b"], ["a", "b"]),
    ("ld", List[DataType], [DataType.DT_INT32], [DataType.DT_INT32]),
    ("lli", List[List[int]], [[1], [2, 3]], [[1], [2, 3]]),
]


@pytest.mark.parametrize(("name", "annotation", "given", "seen"), ATTR_CASES)
def test_every_attribute_kind_reaches_infer_meta(
    op_type: str, name: str, annotation: Any, given: Any, seen: Any
) -> None:
    def infer(x: TensorDesc, **attrs: Any) -> TensorDesc:
        _record(**attrs)
        return TensorDesc(x.shape, x.data_type)

    # build ``def f(x: TensorDesc, *, <name>: <annotation>) -> TensorDesc`` around ``infer``
    namespace: dict[str, Any] = {"TensorDesc": TensorDesc, "A": annotation, "infer": infer}
    exec(
        f"def f(x: TensorDesc, *, {name}: A) -> TensorDesc:\n    return infer(x, {name}={name})",
        namespace,
    )
    register_op(op_type=op_type)(namespace["f"])
    b = GraphBuilder("g")
    getattr(ge.es.custom, op_type)(b.create_input(0, shape=[1]), **{name: given})
    assert SEEN[-1] == ((), {name: seen})
    value = SEEN[-1][1][name]
    assert type(value) is type(seen)
    if isinstance(seen, list) and seen and isinstance(seen[0], list):
        assert all(type(row) is list for row in value)


def test_tensor_attribute_arrives_as_the_graph_tensor(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc, *, table: Tensor) -> TensorDesc:
        _record(table)
        return TensorDesc(x.shape, x.data_type)

    b = GraphBuilder("g")
    value = GraphTensor([1.0, 2.0], None, DataType.DT_FLOAT, shape=[2])
    getattr(ge.es.custom, op_type)(b.create_input(0, shape=[1]), table=value)
    (seen,), _ = SEEN[-1]
    assert isinstance(seen, GraphTensor) and seen.numpy().tolist() == [1.0, 2.0]


def test_defaults_fill_in_and_required_attributes_are_required(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(
        x: TensorDesc,
        *,
        k: int,
        alpha: float = 1.5,
        axes: List[int] = [0, 1],  # noqa: B006
    ) -> TensorDesc:
        _record(k=k, alpha=alpha, axes=axes)
        return TensorDesc(x.shape, x.data_type)

    b = GraphBuilder("g")
    fn = getattr(ge.es.custom, op_type)
    x = b.create_input(0, shape=[1])
    y = fn(x, k=3)
    assert SEEN[-1] == ((), {"k": 3, "alpha": 1.5, "axes": [0, 1]})
    assert y._node.get_attr("axes") == [0, 1]
    with pytest.raises(TypeError):
        fn(x)  # k is required


RESULTS: list[tuple[str, Any, str]] = [
    (
        "graph-desc",
        lambda x: GraphTensorDesc([1]),
        "use ge.runtime.TensorDesc|build it with ge.runtime.TensorDesc",
    ),
    ("int", lambda x: 3, "must return a ge.runtime.TensorDesc"),
    ("none", lambda x: None, "must return a ge.runtime.TensorDesc"),
    ("too-many", lambda x: [x, x], "returned 2 entries for 1 outputs"),
]


@pytest.mark.parametrize(("make", "message"), [r[1:] for r in RESULTS], ids=[r[0] for r in RESULTS])
def test_bad_results_are_infer_errors(op_type: str, make: Any, message: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        return make(x)  # type: ignore[no-any-return]

    b = GraphBuilder("g")
    with pytest.raises(InferError, match=message):
        getattr(ge.es.custom, op_type)(b.create_input(0, shape=[1]))


def test_dynamic_output_count_must_match(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> List[TensorDesc]:
        return [TensorDesc(x.shape, x.data_type)]

    b = GraphBuilder("g")
    fn = getattr(ge.es.custom, op_type)
    assert [t.shape for t in fn(b.create_input(0, shape=[5]), output0_num=1)] == [(5,)]
    with pytest.raises(InferError, match="is dynamic with 2 instances, but infer_meta returned 1"):
        fn(b.create_input(1, shape=[5]), output0_num=2)


def test_no_outputs_returns_none(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> None:
        _record(_dims(x))

    b = GraphBuilder("g")
    getattr(ge.es.custom, op_type)(b.create_input(0, shape=[2]))
    assert SEEN[-1] == (([2],), {})


def test_storage_and_origin_shapes_of_the_result(op_type: str) -> None:
    from ge.runtime import StorageShape

    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        return TensorDesc(StorageShape([2, 3], [6]), DataType.DT_FLOAT16)

    b = GraphBuilder("g")
    y = getattr(ge.es.custom, op_type)(b.create_input(0, shape=[1]))
    desc = y._node._output_descs[0]
    assert list(desc.get_shape()) == [6] and list(desc.get_origin_shape()) == [2, 3]
    assert desc.get_data_type() is DataType.DT_FLOAT16


def test_ge_utils_infer_shape_calls_infer_meta_again_with_real_shapes(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc, *, rows: int = 2) -> TensorDesc:
        _record(_dims(x))
        return TensorDesc([rows, *_dims(x)], x.data_type)

    b = GraphBuilder("g")
    y = getattr(ge.es.custom, op_type)(b.create_input(0, shape=[-1, 4]), rows=3)
    graph = b.build_and_reset([np.negative(y)])
    assert SEEN[-1] == (([-1, 4],), {})
    GeUtils.infer_shape(graph, [[5, 4]])
    assert SEEN[-1] == (([5, 4],), {})
    custom = next(n for n in graph.get_all_nodes() if n.type == op_type)
    assert list(custom._output_descs[0].get_shape()) == [3, 5, 4]
    neg = next(n for n in graph.get_all_nodes() if n.type == "Neg")
    assert list(neg._output_descs[0].get_shape()) == [3, 5, 4]


def test_ge_utils_infer_shape_failure_leaves_the_graph(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        if _dims(x)[0] > 10:
            raise ValueError("at most 10 rows")
        return TensorDesc(x.shape, x.data_type)

    b = GraphBuilder("g")
    graph = b.build_and_reset([getattr(ge.es.custom, op_type)(b.create_input(0, shape=[-1]))])
    before = [list(d.get_shape()) for n in graph.get_all_nodes() for d in n._output_descs]
    with pytest.raises(RuntimeError, match="at most 10 rows"):
        GeUtils.infer_shape(graph, [[11]])
    assert [list(d.get_shape()) for n in graph.get_all_nodes() for d in n._output_descs] == before


def test_more_dims_than_ge_runtime_allows_is_an_infer_error(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        return TensorDesc(x.shape, x.data_type)

    b = GraphBuilder("g")
    with pytest.raises(InferError, match=r"cannot be given as ge\.runtime\.TensorDescs"):
        getattr(ge.es.custom, op_type)(b.create_input(0, shape=[1] * 26))


def test_graph_verify_accepts_the_recorded_descs(op_type: str) -> None:
    @register_op(op_type=op_type)
    def infer(x: TensorDesc) -> TensorDesc:
        return TensorDesc([*_dims(x), 1], DataType.DT_INT64)

    b = GraphBuilder("g")
    graph = b.build_and_reset([getattr(ge.es.custom, op_type)(b.create_input(0, shape=[2]))])
    graph.verify()
