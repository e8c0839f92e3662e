"""``Session.run_graph`` / ``run_graph_with_stream_async`` on inputs that do not fit: each is a
``GeError`` of the documented kind (a wrong input is also a ``ValueError``, as session.py
promises), raised when the call is made, never a crash or a bare exception. Runs that could
read out of bounds or allocate terabytes go through a child process, so a crash fails the
test instead of ending the session."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import ge.es
from ge.error import GeError, GeValueError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Graph, Tensor
from ge.runtime import Stream
from ge.session import Session

CONFIG = {"ge.exec.deviceId": "0"}


@pytest.fixture(autouse=True)
def initialized() -> Iterator[None]:
    GeApi.ge_initialize(CONFIG)
    yield
    GeApi.ge_finalize()


def plus_one(n: int = 4) -> Graph:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[n])
    return b.build_and_reset([x + 1.0])


def short_host_tensor() -> Tensor:
    """An f32[4] desc over 4 bytes: int8 data re-typed (set_data_type reinterprets bytes)."""
    t = Tensor.from_numpy(np.zeros(4, np.int8))
    t.set_data_type(DataType.DT_FLOAT)
    return t


def test_a_host_tensor_short_of_bytes_is_a_value_error() -> None:
    s = Session()
    s.add_graph(1, plus_one())
    with pytest.raises(
        GeValueError,
        match=r"RunGraph failed; graph_id=1; inputs\[0\] holds 4 "
        r"bytes, its shape and type need 16",
    ):
        s.run_graph(1, [short_host_tensor()])


def test_the_repeat_path_checks_it_too() -> None:
    s = Session()
    s.add_graph(1, plus_one())
    good = Tensor.from_numpy(np.ones(4, np.float32))
    (out,) = s.run_graph(1, [good])  # primes the quick path for f32[4]
    np.testing.assert_array_equal(out.numpy(), 2.0)
    with pytest.raises(ValueError, match=r"inputs\[0\] holds 4 bytes"):
        s.run_graph(1, [short_host_tensor()])
    (out,) = s.run_graph(1, [good])
    np.testing.assert_array_equal(out.numpy(), 2.0)


def test_async_refuses_it_at_the_call_not_on_the_stream() -> None:
    s = Session()
    s.add_graph(1, plus_one())
    stream = Stream()
    with pytest.raises(
        GeValueError,
        match=r"RunGraphWithStreamAsync failed; graph_id=1, stream=0x[0-9a-f]+; "
        r"inputs\[0\] holds 4 bytes",
    ):
        s.run_graph_with_stream_async(1, stream, [short_host_tensor()])
    stream.synchronize()  # nothing was queued


def test_a_value_dependent_graph_reports_short_inputs_as_value_errors() -> None:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[4])
    shape = b.create_input(1, shape=[1], data_type=DataType.DT_INT64)
    g = b.build_and_reset([ge.es.Reshape(x, shape)])
    s = Session()
    s.add_graph(1, g)
    target = Tensor.from_numpy(np.array([4], np.int64))
    with pytest.raises(GeValueError, match=r"RunGraph failed; graph_id=1; .*holds 4 bytes"):
        s.run_graph(1, [short_host_tensor(), target])


def test_wrong_count_shape_and_type_are_value_errors() -> None:
    s = Session()
    s.add_graph(1, plus_one())
    ok = Tensor.from_numpy(np.ones(4, np.float32))
    for inputs in (
        [],
        [ok, ok],
        [Tensor.from_numpy(np.ones(3, np.float32))],
        [Tensor.from_numpy(np.ones(4, np.int32))],
    ):
        with pytest.raises(GeValueError, match="RunGraph failed; graph_id=1; "):
            s.run_graph(1, inputs)


@pytest.mark.parametrize(
    ("multiple", "error", "message"),
    [
        (2**63 - 1, GeValueError, r"graph_id=1; a tensor of shape \[3, \d+, 2\]"),
        (2**40, GeError, r"graph_id=1; malloc: out of device memory"),
    ],
    ids=["past any address space", "past this machine's memory"],
)
def test_a_shape_no_memory_could_hold_is_a_ge_error(
    multiple: int, error: type[GeError], message: str
) -> None:
    """Tile multiples decide the output shape at run time; one past any address space is a
    ValueError naming the shape (it leaked OverflowError from the plan builder), one past
    the memory here fails to allocate; the session runs sizes that fit afterwards."""
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[1, 1, 2], data_type=DataType.DT_BOOL)
    multiples = b.create_input(1, shape=[3], data_type=DataType.DT_INT64)
    s = Session()
    s.add_graph(1, b.build_and_reset([ge.es.Tile(x, multiples)]))
    inputs = [
        Tensor.from_numpy(np.array([[[False, True]]])),
        Tensor.from_numpy(np.array([3, multiple, 1], np.int64)),
    ]
    with pytest.raises(error, match=message):
        s.run_graph(1, inputs)
    ok = [inputs[0], Tensor.from_numpy(np.array([2, 1, 3], np.int64))]
    (out,) = s.run_graph(1, ok)  # the session still runs sizes that fit
    np.testing.assert_array_equal(out.numpy(), np.tile([[[False, True]]], [2, 1, 3]))


_CHILD = """
import gc
import numpy as np
from ge._device import device_memory
from ge.error import GeError, GeValueError
from ge.es import GraphBuilder
from ge.ge_global import GeApi
from ge.graph import DataType, Placement, Tensor
from ge.runtime import Stream
from ge.session import Session
import ge.es
GeApi.ge_initialize({"ge.exec.deviceId": "0"})
b = GraphBuilder("g")
x = b.create_input(0, shape=[4])
g = b.build_and_reset([x + 1.0])
s = Session()
s.add_graph(1, g)

def outcome(call):
    try:
        call()
        return "RAN"
    except BaseException as e:  # the kind is what the test checks
        return type(e).__name__ + (" GeError" if isinstance(e, GeError) else " LEAK")

short = Tensor.from_numpy(np.zeros(4, np.int8), placement=Placement.PLACEMENT_DEVICE)
short.set_data_type(DataType.DT_FLOAT)  # f32[4] over a 4-byte block
print("short-device", outcome(lambda: s.run_graph(1, [short])))
stream = Stream()
print("short-device-async", outcome(lambda: s.run_graph_with_stream_async(1, stream, [short])))
freed = Tensor.from_numpy(np.ones(4, np.float32), placement=Placement.PLACEMENT_DEVICE)
device_memory().free(freed.addr)
print("freed", outcome(lambda: s.run_graph(1, [freed])))
print("freed-str", outcome(lambda: str(freed)))
del freed
gc.collect()
b = GraphBuilder("big")
b.create_input(0, shape=[1])
fill = ge.es.Fill(b.create_vector_int64([2**20, 2**20]), b.create_const_float(1.0))
s.add_graph(2, b.build_and_reset([fill]))  # 4 TiB: folding must not try, running must refuse
print("huge-fill", outcome(lambda: s.run_graph(2, [Tensor.from_numpy(np.ones(1, np.float32))])))
print("done")
"""


def test_device_inputs_that_cannot_be_read_never_crash(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    got = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert got["short-device"] == "GeValueError GeError", done.stdout
    assert got["short-device-async"] == "GeValueError GeError", done.stdout
    assert got["freed"].endswith(" GeError"), done.stdout
    # str(tensor) reads get_data() as GE-PY's does, so freed memory raises (a GeError), not crash
    assert got["freed-str"] == "GeError GeError", done.stdout
    assert got["huge-fill"].endswith(" GeError"), done.stdout
    assert done.stdout.splitlines()[-1] == "done"
    assert "Traceback" not in done.stderr, done.stderr[-3000:]


def test_an_empty_tensor_whose_other_dims_overflow_is_refused() -> None:
    """[0, 2**31 - 1, 2**40] holds nothing, but its strides pass int64 (numpy refuses it as
    too big); it leaked OverflowError from the plan builder. Known when the graph compiles,
    so it is the compile failure's GeError."""
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[0, 1, 1])
    s = Session()
    s.add_graph(1, b.build_and_reset([ge.es.Tile(x, [0, 2**31 - 1, 2**40])]))
    with pytest.raises(GeError, match=r"a tensor of shape \[0, 2147483647, \d+\] .* spans"):
        s.run_graph(1, [Tensor.from_numpy(np.zeros((0, 1, 1), np.float32))])
