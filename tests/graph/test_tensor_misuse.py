"""``ge.graph.Tensor`` used after its device memory was freed behind its back, or holding a desc
with unknown dims (as an AIR file may): every use raises a ``GeError`` saying what happened,
never the device layer's own error or numpy's ``ValueError``, and printing never raises. The
device cases run in a child process too, so a crash would fail the test, not end the run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from ge._device import device_memory
from ge.error import GeError, GeValueError
from ge.graph import Graph, Placement, Tensor, TensorDesc

DEVICE = Placement.PLACEMENT_DEVICE


def freed_tensor() -> Tensor:
    t = Tensor.from_numpy(np.arange(4, dtype=np.float32), placement=DEVICE)
    device_memory().free(t.addr)  # what ge.runtime.free(MemBlock(t.addr, ...)) does
    return t


@pytest.mark.parametrize(
    "use", [Tensor.numpy, Tensor.get_data, Tensor.to_host, lambda t: t._clone()]
)
def test_reading_freed_device_memory_is_a_ge_error_naming_it(use: object) -> None:
    t = freed_tensor()
    with pytest.raises(
        GeError, match=r"device memory \(16 bytes at 0x[0-9a-f]+\) is no longer live"
    ):
        use(t)  # type: ignore[operator]


def test_printing_a_tensor_with_freed_memory_says_so() -> None:
    t = freed_tensor()
    with pytest.raises(GeError, match="is no longer live"):  # str() reads get_data(), as GE
        str(t)
    assert "data=<freed device memory>" in repr(t)


_CHILD = """
import gc, warnings
import numpy as np
from ge._device import device_memory
from ge.graph import Placement, Tensor
t = Tensor.from_numpy(np.ones(4, np.float32), placement=Placement.PLACEMENT_DEVICE)
device_memory().free(t.addr)
del t
gc.collect()  # the finalizer must not free the address again, nor print a traceback
u = Tensor.from_numpy(np.ones(4, np.float32), placement=Placement.PLACEMENT_DEVICE)
print("OK", float(u.numpy().sum()))
"""


def test_collecting_a_tensor_whose_memory_was_freed_is_silent(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_CHILD)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "OK 4.0", done.stdout
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr


def unknown_dims_tensor() -> Tensor:
    return Tensor._from_parts(TensorDesc([0, -1]), b"")  # what the AIR reader builds


def test_reading_a_tensor_with_unknown_dims_is_a_value_error() -> None:
    t = unknown_dims_tensor()
    with pytest.raises(GeValueError, match=r"shape \[0, -1\] has unknown dims"):
        t.numpy()
    with pytest.raises(ValueError, match=r"^Input must start with"):  # no bytes: GE's <empty>
        t.get_data()
    with pytest.raises(ValueError, match=r"^Input must start with"):
        str(t)
    assert "data=<0 bytes>" in repr(t)


def test_str_of_a_loaded_graph_with_such_a_tensor_attribute(tmp_path: Path) -> None:
    g = Graph("g")
    c = g.add_node("Const", "c", num_outputs=1)
    c.set_attr("value", unknown_dims_tensor())
    path = tmp_path / "g.air"
    g.save_to_air(path)
    loaded = Graph("h")
    loaded.load_from_air(path)
    assert "value=tensor<f32[0,-1]><0 bytes>" in loaded.as_text()
    assert "attrs = {value: <empty>}" in str(loaded)


def test_a_shape_too_big_to_allocate_is_a_value_error() -> None:
    with pytest.raises(GeValueError, match="more than can be allocated; check the shape"):
        Tensor([1.0], shape=[2**70])


def test_an_object_array_of_non_numbers_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="cannot be converted to DT_FLOAT"):
        Tensor(np.array([{}, None], dtype=object), shape=[2])
