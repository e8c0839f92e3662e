"""The compile pipeline: a flat, named list of steps, run top to bottom.

    before_infer_shape        user passes at PassStage.BEFORE_INFER_SHAPE
    infer_shape               every node's shape and dtype (ge.ops.infer_graph)
    after_infer_shape         user passes at PassStage.AFTER_INFER_SHAPE
    after_builtin_fusion      user passes at PassStage.AFTER_BUILTIN_FUSION_PASS
    optimize                  constant folding, CSE, algebraic simplification and dead-node
                              elimination on every graph, to a fixed point
    after_origin_optimize     user passes at PassStage.AFTER_ORIGIN_GRAPH_OPTIMIZE
    recognize                 multi-node patterns with a dedicated kernel become one op
                              (ge.compiler.patterns: numpy-spelled softmax -> SoftmaxV2)
    fuse                      elementwise groups become FusedElementwise nodes
                              (ge.compiler.fuse), on every graph
    verify                    Graph.verify(), ops included

Each step can dump the graph (``GE_DUMP_GRAPH=dir``); which steps run follows the
``ge.options.Options`` record the compile is given. Passes at a ``PassStage`` are plugged in
with ``register_stage_hook``; the ``ge.passes`` framework registers its passes there.

    >>> from ge.es import GraphBuilder
    >>> b = GraphBuilder("g"); x = b.create_input(0, shape=[2])
    >>> g = optimize_graph(b.build_and_reset([x * 1.0 + (2.0 * 3.0)]))
    >>> sorted(n.type for n in g.get_direct_nodes())
    ['Add', 'Const', 'Data', 'NetOutput']
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field

from ge.compiler._graphs import all_graphs
from ge.compiler.cse import eliminate_common_subexpressions
from ge.compiler.dce import eliminate_dead_nodes
from ge.compiler.dump import dump_step
from ge.compiler.fold import fold_constants
from ge.compiler.fuse import fuse_elementwise
from ge.compiler.patterns import recognize_patterns
from ge.compiler.simplify import simplify
from ge.error import GeTypeError
from ge.graph._air import model_from_bytes, model_to_bytes
from ge.graph._clone import clone_graph
from ge.graph.graph import Graph
from ge.ops.infer import infer_graph
from ge.options import Options, current_options
from ge.passes._run import StageReport, run_stage
from ge.passes.stage import PassStage

__all__ = [
    "PIPELINE",
    "Compilation",
    "HookHandle",
    "Step",
    "copy_graph",
    "optimize_graph",
    "register_stage_hook",
]

StageHook = Callable[[Graph], None]
_HOOKS: dict[PassStage, list[StageHook]] = {stage: [] for stage in PassStage}
_MAX_ROUNDS = 20


class HookHandle:
    """What ``register_stage_hook`` returns: ``remove()`` takes the hook out again."""

    def __init__(self, stage: PassStage, hook: StageHook) -> None:
        self._stage = stage
        self._hook = hook

    def remove(self) -> bool:
        """Take the hook out; ``False`` when it was removed already."""
        hooks = _HOOKS[self._stage]
        if self._hook in hooks:
            hooks.remove(self._hook)
            return True
        return False


def register_stage_hook(stage: PassStage, hook: StageHook) -> HookHandle:
    """Run ``hook(graph)`` at ``stage`` of every compilation (in registration order), before
    the ``ge.passes`` registered there. Returns a handle whose ``remove()`` unregisters it."""
    if not isinstance(stage, PassStage):
        raise GeTypeError(f"stage must be a PassStage, got {stage!r}")
    if not callable(hook):
        raise GeTypeError(f"hook must be callable, got {type(hook).__name__}")
    _HOOKS[stage].append(hook)
    return HookHandle(stage, hook)


@dataclass(frozen=True)
class Compilation:
    """What every step may read: the compile options (session, graph and ``build_model``
    options, for ``PassContext.get_option_value``) and the dump numbering of the step."""

    options: Mapping[str, str]
    step_index: int = 0
    reports: list[StageReport] | None = None  # filled by the pass stages when given
    ge_options: Options = field(default_factory=Options)  # the record compiled with


def _stage(stage: PassStage) -> Callable[[Graph, Compilation], None]:
    def run(graph: Graph, compilation: Compilation) -> None:
        for hook in list(_HOOKS[stage]):
            hook(graph)

        def dump(pass_name: str, g: Graph, when: str) -> None:
            step = f"{stage.value}_{pass_name}_{when}"
            dump_step(g, compilation.step_index, step, compilation.ge_options.dump_graph)

        explain = compilation.reports is not None
        on_change = dump if compilation.ge_options.dump_graph else None  # else no text renders
        report = run_stage(
            graph,
            stage,
            compilation.options,
            on_change=on_change,
            infer=infer_graph,
            explain=explain,
        )
        if compilation.reports is not None:
            compilation.reports.append(report)

    return run


def _infer(graph: Graph, compilation: Compilation) -> None:
    infer_graph(graph)


_REWRITES = (fold_constants, eliminate_common_subexpressions, simplify, eliminate_dead_nodes)
Rewrite = Callable[[Graph], bool]
# rewrites that leave nothing for a second run of their own on the graph they changed: CSE and
# DCE sweep once in topological order, simplify runs its rules to a fixed point (folding also
# refines descs, of a parent graph too, so it is not counted)
_SETTLES_ITSELF = frozenset({eliminate_common_subexpressions, simplify, eliminate_dead_nodes})


def _optimize(graph: Graph, compilation: Compilation) -> None:
    """Rounds of every rewrite on every graph until a whole round changes nothing.

    A rewrite that found nothing to do finds nothing again on unchanged graphs, so the rounds
    stop as soon as every (graph, rewrite) pair has nothing left to do since the last change,
    mid-round if need be: the result of the full rounds, without their idle passes."""
    idle: set[tuple[Graph, Rewrite]] = set()  # nothing left to do since the last change

    def settled(graphs: list[Graph]) -> bool:
        return len(idle) >= len(graphs) * len(_REWRITES) and all(
            (g, rewrite) in idle for g in graphs for rewrite in _REWRITES
        )

    for _ in range(_MAX_ROUNDS):
        graphs = list(all_graphs(graph))
        for g in graphs:
            for rewrite in _REWRITES:
                if settled(graphs):
                    return
                if rewrite(g):
                    idle.clear()
                    if rewrite in _SETTLES_ITSELF:
                        idle.add((g, rewrite))
                else:
                    idle.add((g, rewrite))
        if settled(graphs):
            return


def _recognize(graph: Graph, compilation: Compilation) -> None:
    for g in list(all_graphs(graph)):
        recognize_patterns(g)


def _fuse(graph: Graph, compilation: Compilation) -> None:
    for g in list(all_graphs(graph)):
        parent = g.parent_node
        if parent is None or parent.type != "FusedElementwise":  # bodies are fused already
            fuse_elementwise(g)


def _verify(graph: Graph, compilation: Compilation) -> None:
    graph.verify()


@dataclass(frozen=True)
class Step:
    name: str
    run: Callable[[Graph, Compilation], None]


PIPELINE: tuple[Step, ...] = (
    Step("before_infer_shape", _stage(PassStage.BEFORE_INFER_SHAPE)),
    Step("infer_shape", _infer),
    Step("after_infer_shape", _stage(PassStage.AFTER_INFER_SHAPE)),
    Step("after_builtin_fusion", _stage(PassStage.AFTER_BUILTIN_FUSION_PASS)),
    Step("optimize", _optimize),
    Step("after_origin_optimize", _stage(PassStage.AFTER_ORIGIN_GRAPH_OPTIMIZE)),
    Step("recognize", _recognize),
    Step("fuse", _fuse),
    Step("verify", _verify),
)


def copy_graph(graph: Graph) -> Graph:
    """An independent deep copy: what the lossless AIR round trip gives, made node by node
    (``ge.graph._clone``, ~30x faster), or through AIR bytes for what the cloner leaves out."""
    twin = clone_graph(graph)
    return twin if twin is not None else model_from_bytes(model_to_bytes(graph))


def optimize_graph(
    graph: Graph,
    *,
    fuse: bool = True,
    options: Mapping[str, str] | None = None,
    reports: list[StageReport] | None = None,
    ge_options: Options | None = None,
) -> Graph:
    """Run ``PIPELINE`` on a copy of ``graph`` and return the copy (the input is unchanged).

    ``fuse=False`` (or the environment variable ``GE_FUSION=0``) skips the ``fuse`` step, to
    see or run each op on its own. ``options`` (str to str) are what passes read through
    ``PassContext.get_option_value``. ``reports``, when given, receives what the passes of
    each stage did, with the reasons patterns did not match (``ge.passes.explain``).
    ``ge_options`` (default ``current_options()``) gives ``fusion`` (``GE_FUSION``) and
    ``dump_graph`` (``GE_DUMP_GRAPH``)."""
    if not isinstance(graph, Graph):
        raise GeTypeError(f"graph must be a Graph, got {type(graph).__name__}")
    opts = current_options() if ge_options is None else ge_options
    fuse = fuse and opts.fusion
    with _gc_paused():
        work = copy_graph(graph)
        dump_step(work, 0, "input", opts.dump_graph)
        for index, step in enumerate(PIPELINE, start=1):
            if step.name != "fuse" or fuse:
                step.run(work, Compilation(options or {}, index, reports, opts))
            dump_step(work, index, step.name, opts.dump_graph)
    return work


@contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic garbage collection while compiling. The passes make millions of small objects
    that live (a graph copy, new nodes), and each collection walks every live object of the
    process: at 100k nodes that was a quarter of the compile time. What the passes drop is
    freed by reference counting as before; cycles wait for the first collection after."""
    if not gc.isenabled():  # disabled by the caller (or a compile running in another thread)
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
