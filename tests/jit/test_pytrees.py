"""Pytrees through ``@ge.jit``: arguments and results as tuples, lists, dicts, namedtuples,
dataclasses, ``None`` and nests of them; Python scalars as trace constants; ``ge.graph.Tensor``
arguments on the host and on the device. Plus the pytree module on its own: flatten/unflatten
round trips (hypothesis) and ``paths``."""

from __future__ import annotations

import dataclasses
import math
from collections import namedtuple
from typing import Any, NamedTuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ge
from ge.graph import Tensor
from ge.jit._pytree import TreeDef, flatten, paths, unflatten


class Pair(NamedTuple):
    w: Any
    b: Any


Point = namedtuple("Point", "x y")  # a plain namedtuple, as users write them


@dataclasses.dataclass
class Batch:
    image: Any
    label: Any = None


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: Any
    b: Any


def _f32(*shape: int, start: float = 0.0) -> np.ndarray:
    return (np.arange(math.prod(shape), dtype=np.float32) + start).reshape(shape)


def assert_same_tree(actual: Any, expected: Any) -> None:
    """Same containers (exact types), same keys, and leaves equal; array leaves come back as
    numpy arrays with numpy's dtype and shape."""
    assert type(actual) is type(expected), f"{type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, dict):
        assert set(actual) == set(expected)
        for k in expected:
            assert_same_tree(actual[k], expected[k])
    elif isinstance(expected, (tuple, list)):
        assert len(actual) == len(expected)
        for a, e in zip(actual, expected, strict=True):
            assert_same_tree(a, e)
    elif dataclasses.is_dataclass(expected):
        for field in dataclasses.fields(expected):
            assert_same_tree(getattr(actual, field.name), getattr(expected, field.name))
    elif isinstance(expected, np.ndarray):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape
        np.testing.assert_allclose(actual, expected, rtol=1e-6)
    else:
        assert actual == expected


# --- the pytree module ----------------------------------------------------------------------------
def test_docstring_example() -> None:
    leaves, tree = flatten({"b": (1, 2), "a": [3, None]})
    assert leaves == [3, 1, 2]
    assert unflatten(tree, ["x", "y", "z"]) == {"a": ["x", None], "b": ("y", "z")}
    assert str(tree) == "{'a': [*, None], 'b': (*, *)}"


def test_leaf_order_and_kinds() -> None:
    tree = {"z": Pair(1, 2), "a": Batch(3, [4, None, 5]), 0: (), 1: []}
    leaves, treedef = flatten(tree)
    assert leaves == [3, 4, 5, 1, 2]  # int keys before str keys; fields in declaration order
    assert [c.kind for c in treedef.children] == ["tuple", "list", "dataclass", "namedtuple"]
    assert treedef.meta == (0, 1, "a", "z")


def test_none_is_an_empty_node_and_anything_else_a_leaf() -> None:
    assert flatten(None) == ([], TreeDef("none", None, ()))
    array = np.ones(2)
    for leaf in (1, 2.5, "s", array, object, Batch):  # a dataclass *type* is a leaf
        leaves, tree = flatten(leaf)
        assert leaves == [leaf] if not isinstance(leaf, np.ndarray) else leaves[0] is leaf
        assert tree.kind == "leaf"


def test_structures_that_differ_only_in_container_type_differ() -> None:
    trees = [flatten(t)[1] for t in ((1, 2), [1, 2], Pair(1, 2), Point(1, 2), Frozen(1, 2))]
    assert len(set(trees)) == len(trees)
    assert flatten((1, 2))[1] == flatten((3, 4))[1]  # leaves do not matter
    assert flatten({"a": 1})[1] != flatten({"b": 1})[1]


def test_unflatten_rebuilds_frozen_dataclasses_and_namedtuples() -> None:
    value = [Frozen(1, Point(2, 3)), Pair(w=Batch(4), b=None)]
    leaves, tree = flatten(value)
    rebuilt = unflatten(tree, [10 * v for v in leaves])
    assert rebuilt == [Frozen(10, Point(20, 30)), Pair(w=Batch(40), b=None)]
    assert type(rebuilt[0].b) is Point and type(rebuilt[1]) is Pair


def test_unflatten_checks_the_leaf_count() -> None:
    _, tree = flatten((1, [2, 3]))
    with pytest.raises(ValueError, match="fewer leaves"):
        unflatten(tree, [1, 2])
    with pytest.raises(ValueError, match="more leaves"):
        unflatten(tree, [1, 2, 3, 4])


def test_paths() -> None:
    value = {"w": 1, "layers": [Pair(2, 3), Batch(4, label=None)], "t": (5,)}
    leaves, tree = flatten(value)
    assert paths(tree, "params") == [
        "params['layers'][0].w",
        "params['layers'][0].b",
        "params['layers'][1].image",
        "params['t'][0]",
        "params['w']",
    ]
    assert len(paths(tree)) == len(leaves)
    assert paths(flatten(7)[1], "x") == ["x"]
    assert paths(flatten(None)[1], "x") == []


_keys = st.one_of(st.text(max_size=3), st.integers(-3, 3))
_trees = st.recursive(
    st.one_of(st.integers(), st.none()),
    lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.lists(kids, max_size=4).map(tuple),
        st.dictionaries(st.text(max_size=3), kids, max_size=4),
        st.dictionaries(_keys, kids, max_size=4),
        st.builds(Pair, kids, kids),
        st.builds(Point, kids, kids),
        st.builds(Batch, kids, kids),
        st.builds(Frozen, kids, kids),
    ),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(_trees)
def test_flatten_unflatten_round_trip(tree: Any) -> None:
    leaves, treedef = flatten(tree)
    assert_same_tree(unflatten(treedef, leaves), tree)
    assert len(paths(treedef, "a")) == len(leaves)
    assert len(set(paths(treedef, "a"))) == len(leaves)  # one path per leaf, all different
    hash(treedef)
    # the tree does not depend on the leaves' values; new leaves land in the same places
    labels = [f"leaf{i}" for i in range(len(leaves))]
    assert flatten(unflatten(treedef, labels)) == (labels, treedef)


# --- pytrees through ge.jit -----------------------------------------------------------------------
def test_nested_arguments_and_results_round_trip() -> None:
    @ge.jit
    def f(t, lst, d, p, batch, none):
        assert none is None
        return {
            "sum": t[0] + t[1],
            "list": [lst[0] * 2.0, None, (lst[1] - 1.0,)],
            "diff": d["a"] - d["b"],
            "pair": Pair(p.w * 2.0, p.b),
            "batch": Batch(batch.image + batch.label, batch.label),
            "frozen": Frozen(np.exp(t[0]), Point(t[1], t[1].sum())),
            "none": None,
        }

    a, b = _f32(2, 3), _f32(2, 3, start=1.0)
    args = ((a, b), [a, b], {"b": b, "a": a}, Pair(a, b), Batch(a, b), None)
    expected = {
        "sum": a + b,
        "list": [a * 2.0, None, (b - 1.0,)],
        "diff": a - b,
        "pair": Pair(a * 2.0, b),
        "batch": Batch(a + b, b),
        "frozen": Frozen(np.exp(a), Point(b, np.asarray(b.sum()))),
        "none": None,
    }
    assert_same_tree(f(*args), expected)
    assert_same_tree(f(*args), expected)
    assert f.cache_info().traces == 1 and f.cache_info().hits == 1


def test_keyword_arguments_are_pytrees_too() -> None:
    @ge.jit
    def f(x, params=None):
        return x @ params["w"] + params["b"]

    x, w, b = _f32(2, 3), _f32(3, 4), _f32(4)
    np.testing.assert_allclose(f(x, params={"w": w, "b": b}), x @ w + b, rtol=1e-6)
    np.testing.assert_allclose(f(x, params={"b": b, "w": w}), x @ w + b, rtol=1e-6)
    assert f.cache_info().traces == 1


def test_empty_containers_and_none_arguments() -> None:
    @ge.jit
    def f(x, empty_tuple, empty_dict, empty_list, none):
        assert (empty_tuple, empty_dict, empty_list, none) == ((), {}, [], None)
        return x + 1.0, (), {}, [], None

    x = _f32(3)
    out = f(x, (), {}, [], None)
    assert_same_tree(out, (x + 1.0, (), {}, [], None))


def test_results_that_are_not_traced_come_back_as_they_are() -> None:
    @ge.jit
    def f(x):
        return {"y": x * 2.0, "n": 3, "f": 0.5, "s": "label", "c": np.arange(3, dtype=np.int32)}

    out = f(_f32(2))
    assert_same_tree(
        out,
        {"y": _f32(2) * 2.0, "n": 3, "f": 0.5, "s": "label", "c": np.arange(3, dtype=np.int32)},
    )


def test_a_function_without_arguments() -> None:
    @ge.jit
    def f():
        return np.ones((2, 2), np.float32), 4

    assert_same_tree(f(), (np.ones((2, 2), np.float32), 4))
    assert_same_tree(f(), (np.ones((2, 2), np.float32), 4))
    assert f.cache_info().traces == 1


def test_results_are_fresh_arrays() -> None:
    """No result aliases an input, another result or an earlier call's result."""

    @ge.jit
    def ident(x):
        return x, x + 1.0, x + 1.0

    x = _f32(3)
    first = ident(x)
    second = ident(x)
    first[0][0] = 100.0
    first[1][0] = -1.0
    np.testing.assert_array_equal(x, _f32(3))
    np.testing.assert_array_equal(first[2], _f32(3) + 1.0)
    np.testing.assert_array_equal(second[0], _f32(3))
    np.testing.assert_array_equal(second[1], _f32(3) + 1.0)


def test_container_type_is_part_of_the_key() -> None:
    @ge.jit
    def f(pair):
        return pair[0] - pair[1]

    a, b = _f32(2), _f32(2, start=5.0)
    for value in ((a, b), [a, b], Pair(a, b), Point(a, b)):
        np.testing.assert_array_equal(f(value), a - b)
    assert f.cache_info().traces == 4
    np.testing.assert_array_equal(f([b, a]), b - a)
    assert f.cache_info().traces == 4


def test_non_contiguous_and_scalar_array_arguments() -> None:
    @ge.jit
    def f(x, s):
        return x * s

    base = _f32(4, 6)
    view = base[::2, 1::2].T  # strided and transposed
    np.testing.assert_array_equal(f(view, np.float32(3.0)), view * np.float32(3.0))
    # a numpy scalar is a 0-d array argument, not a constant: a new value does not retrace
    np.testing.assert_array_equal(f(view, np.float32(5.0)), view * np.float32(5.0))
    assert f.cache_info().traces == 1


# --- Python scalars are constants -----------------------------------------------------------------
def test_python_scalars_are_constants_and_a_new_value_retraces() -> None:
    @ge.jit
    def f(x, scale):
        return x * scale

    x = _f32(3)
    np.testing.assert_array_equal(f(x, 2.0), x * 2.0)
    np.testing.assert_array_equal(f(x, 2.0), x * 2.0)
    assert f.cache_info().traces == 1
    np.testing.assert_array_equal(f(x, 3.0), x * 3.0)
    assert f.cache_info().traces == 2
    np.testing.assert_array_equal(f(x, 3), x * 3)  # int 3 is not float 3.0: a new key
    assert f.cache_info().traces == 3
    types = [n.type for n in f.trace(x, 2.0).get_direct_nodes()]
    assert types.count("Data") == 1 and "Const" in types  # the scalar is baked in


def test_bool_and_int_scalars_are_distinct_keys() -> None:
    @ge.jit
    def f(x, flag):
        return x + flag

    x = np.arange(3, dtype=np.int32)
    np.testing.assert_array_equal(f(x, 1), x + 1)
    np.testing.assert_array_equal(f(x, True), x + 1)
    assert f.cache_info().traces == 2


def test_scalars_inside_pytrees_are_constants() -> None:
    @ge.jit
    def f(cfg, x):
        return x * cfg["scale"] + cfg["shift"]

    x = _f32(3)
    np.testing.assert_allclose(f({"scale": 2.0, "shift": 1}, x), x * 2.0 + 1)
    np.testing.assert_allclose(f({"scale": 2.0, "shift": 1}, x), x * 2.0 + 1)
    np.testing.assert_allclose(f({"scale": 2.0, "shift": 4}, x), x * 2.0 + 4)
    assert f.cache_info().traces == 2


def test_negative_zero_scalar_is_not_positive_zero() -> None:
    @ge.jit
    def f(x, y):
        return x / y

    x = np.ones(2, np.float32)
    with np.errstate(divide="ignore"):
        np.testing.assert_array_equal(f(x, 0.0), x / 0.0)
        np.testing.assert_array_equal(f(x, -0.0), x / -0.0)


def test_nan_scalar_argument_hits_the_cache() -> None:
    @ge.jit
    def f(x, y):
        return x + y

    x = np.ones(2, np.float32)
    f(x, float("nan"))
    f(x, float("nan"))
    assert f.cache_info().traces == 1


# --- ge.graph.Tensor arguments --------------------------------------------------------------------
def test_tensor_arguments_on_host_and_device() -> None:
    @ge.jit
    def f(x, y):
        return np.maximum(x, y) * 2.0

    a = _f32(2, 3, start=-3.0)
    b = np.zeros((2, 3), np.float32)
    expected = np.maximum(a, b) * 2.0
    host = Tensor.from_numpy(a)
    device = Tensor.from_numpy(a).to_device()
    np.testing.assert_array_equal(f(a, b), expected)
    np.testing.assert_array_equal(f(host, b), expected)
    np.testing.assert_array_equal(f(device, b), expected)
    np.testing.assert_array_equal(f(device, Tensor.from_numpy(b).to_device()), expected)
    # a Tensor keys as its dtype and shape: same entry as the array
    assert f.cache_info().traces == 1
    np.testing.assert_array_equal(device.numpy(), a)  # the input is read, not changed


def test_tensor_arguments_inside_pytrees() -> None:
    @ge.jit
    def f(params, x):
        return x @ params["w"] + params["b"]

    x, w, b = _f32(2, 3), _f32(3, 4), _f32(4)
    params = {"w": Tensor.from_numpy(w).to_device(), "b": Tensor.from_numpy(b)}
    np.testing.assert_allclose(f(params, x), x @ w + b, rtol=1e-6)
    np.testing.assert_allclose(f({"w": w, "b": b}, x), x @ w + b, rtol=1e-6)
    assert f.cache_info().traces == 1
