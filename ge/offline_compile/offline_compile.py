"""Compile graphs into offline models: ``build_model`` → ``ModelBuffer`` → ``save_model``.

GE-PY's ``ge.offline_compile`` (GE_REFERENCE.md §5.4, checks and texts of GE_ERRORS.md §8),
on our device: a model is the task plan the compiler made for the graph (kernel launches with
their argument slots, host copies and BLAS calls, control flow over sub-plans, the memory
plan), every kernel binary it
launches (built-in and custom ops alike), its weights and its input/output descs, in the file
format of ``ge.runtime.om`` (``docs/om_format.md``). ``ge.runtime.load_model`` runs it in any
process, with neither the compiler, the op registry, Numba nor the user's modules imported.

    >>> from ge.es import GraphBuilder
    >>> build_initialize({})
    >>> b = GraphBuilder("g"); x = b.create_input(0, shape=[4])
    >>> model = build_model(b.build_and_reset([x + 1.0]))
    >>> model.get_length() > 0
    True

Decisions where GE is silent (ours):

* ``build_initialize`` loads the Python custom ops on ``ASCEND_CUSTOM_OPP_PATH`` (as
  ``GeApi.ge_initialize`` does; a failing batch loads nothing and raises
  ``"BuildInitialize failed; ..."``), so their ``compile`` and ``declare_launch_args``
  callbacks run at build time and only the kernels they produced go into the model.
* Options: ``build_model``'s options override ``build_initialize``'s; both are saved in the
  model. ``input_shape`` (``"x:1,3;y:2"``, ATC's form; names are Data node names) fixes the
  shapes of inputs declared with ``-1`` dims; ``dynamic_dims`` / ``dynamic_batch_size`` (ATC's
  shape gears) compile one plan per listed shape instead, and the model runs the one its
  inputs name. Every plan's shapes are fixed.
* If, Case and While go into a model as control flow over compiled sub-plans (at most 16
  deep; a branch or loop step that would change a type or shape is refused). A node that can
  only run as Python on the host (an op without a kernel, a custom op with ``execute`` alone)
  cannot go into a model: ``build_model`` raises
  ``"BuildModel failed; node <name> runs Python on the host ..."``.
* A model is compiled with the ``ge.options`` record in force at ``build_model``
  (``current_options()``: the ``GE_*`` variables or a ``using_options`` block) with index
  bounds checks turned on (its kernel arguments come from a file, and none may make a kernel
  index past a view); the record is saved in the model (``Model.ge_options``).
* ``bundle_build_model`` compiles each graph with its options into one model; graphs run by
  name (``Model.graph(name)``), and constants of one name with equal values are stored once and
  shared (``Model.set_weights`` updates them for every graph).
"""

from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ge.error import GeError, GeTypeError, GeValueError
from ge.graph import Graph
from ge.options import current_options

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

_LOCK = threading.Lock()
_STATE: dict[str, Any] = {"options": None}  # None: not initialised


def _check_options(options: Any, name: str) -> dict[str, str]:
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise GeTypeError(f"{name} must be a dictionary")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in options.items()):
        raise GeTypeError(f"{name} keys and values must be strings")
    return dict(options)


@dataclass
class GraphWithOptions:
    """A graph and its build options, for ``bundle_build_model``."""

    graph: Graph
    build_options: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.graph, Graph):
            raise GeTypeError("graph must be a Graph")
        self.build_options = _check_options(self.build_options, "build_options")


class ModelBuffer:
    """The bytes of a built model (``build_model``); ``save_model`` writes them to a file."""

    __slots__ = ("_data",)
    _data: bytes

    def __init__(self) -> None:
        raise GeError("ModelBuffer objects should not be created directly")

    @classmethod
    def _create_from(cls, data: bytes | None) -> ModelBuffer:
        if not data:
            raise GeValueError("Failed to create ModelBuffer")
        buffer = object.__new__(cls)
        buffer._data = data
        return buffer

    @property
    def length(self) -> int:
        return len(self._data)

    def get_length(self) -> int:
        """The model's size in bytes."""
        return len(self._data)

    def get_bytes(self) -> bytes:
        """The model file's bytes (ours: what ``ge.runtime.load_model`` reads)."""
        return self._data

    def __bytes__(self) -> bytes:
        return self._data

    def __copy__(self) -> NoReturn:
        raise GeError("ModelBuffer does not support copy")

    def __deepcopy__(self, memo: dict[int, Any]) -> NoReturn:
        raise GeError("ModelBuffer does not support deepcopy")


def build_initialize(global_options: dict[str, str] | None = None) -> None:
    """Start a build session with ``global_options`` (and load the custom ops on
    ``ASCEND_CUSTOM_OPP_PATH``)."""
    options = _check_options(global_options, "global_options")
    from ge.custom_op.bootstrap import load_custom_op_plugins  # noqa: PLC0415

    try:
        load_custom_op_plugins()
    except Exception as e:  # the batch loaded nothing; say so as GE does
        raise GeError("BuildInitialize", f"{type(e).__name__}: {e}") from e
    with _LOCK:
        _STATE["options"] = options


def build_finalize() -> None:
    """End the build session (``build_model`` then needs ``build_initialize`` again)."""
    with _LOCK:
        _STATE["options"] = None


def build_model(graph: Graph, build_options: dict[str, str] | None = None) -> ModelBuffer:
    """Compile ``graph`` into a model."""
    if not isinstance(graph, Graph):
        raise GeTypeError("graph must be a Graph")
    options = _check_options(build_options, "build_options")
    merged = _session_options("BuildModel", options)
    return ModelBuffer._create_from(_build("BuildModel", [(graph, merged)], merged))


def bundle_build_model(graph_with_options: list[GraphWithOptions]) -> ModelBuffer:
    """Compile several graphs into one model that runs each by name and shares weights."""
    if not isinstance(graph_with_options, list):
        raise GeTypeError("graph_with_options must be a list")
    if len(graph_with_options) <= 1:
        raise GeValueError("graph_with_options size must be larger than 1")
    if not all(isinstance(item, GraphWithOptions) for item in graph_with_options):
        raise GeTypeError("Each item in graph_with_options must be a GraphWithOptions")
    api = "BundleBuildModel"
    common = _session_options(api, {}, graph_count=len(graph_with_options))
    graphs = [(item.graph, {**common, **item.build_options}) for item in graph_with_options]
    return ModelBuffer._create_from(
        _build(api, graphs, common, graph_count=len(graph_with_options))
    )


def save_model(output_file: str, model: ModelBuffer) -> None:
    """Write ``model`` to ``output_file + ".om"``."""
    _save("SaveModel", output_file, model)


def bundle_save_model(output_file: str, model: ModelBuffer) -> None:
    """Write a bundle model to ``output_file + ".om"``."""
    _save("BundleSaveModel", output_file, model)


def _save(api: str, output_file: str, model: ModelBuffer) -> None:
    if not isinstance(output_file, str):
        raise GeTypeError("output_file must be a string")
    if not isinstance(model, ModelBuffer):
        raise GeTypeError("model must be a ModelBuffer")
    path = output_file + ".om"
    tmp = f"{path}.tmp{os.getpid()}.{threading.get_ident()}"
    try:  # written whole, then renamed: a reader never sees half a model
        with open(tmp, "wb") as f:
            f.write(model.get_bytes())
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise GeError(api, e.strerror or str(e), output_file=output_file) from None


def _session_options(api: str, options: dict[str, str], **context: Any) -> dict[str, str]:
    with _LOCK:
        initial = _STATE["options"]
    if initial is None:
        raise GeError(api, "build_initialize has not been called", **context)
    return {**initial, **options}


def _build(
    api: str, graphs: list[tuple[Graph, dict[str, str]]], options: dict[str, str], **context: Any
) -> bytes:
    from ge import __version__  # noqa: PLC0415
    from ge.offline_compile._builder import add_graph  # noqa: PLC0415
    from ge.runtime.om import ModelData, pack  # noqa: PLC0415

    try:
        # the model's kernel arguments will come from a file: bounds checks always
        settings = current_options().replace(kernel_boundscheck=True)
        model = ModelData([], [], [], dict(options), __version__, ge_options=settings)
        for graph, graph_options in graphs:
            add_graph(model, graph, graph_options)
        return pack(model)
    except GeError as e:
        raise GeError(api, str(e), **context) from e
    except (ValueError, TypeError, ArithmeticError, IndexError, KeyError) as e:
        raise GeError(api, f"{type(e).__name__}: {e}", **context) from e
