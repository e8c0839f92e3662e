"""``JitFunction``: the object ``@ge.jit`` returns.

A call splits its arguments into *static* ones (``static_argnums``/``static_argnames``, and a
bound method's ``self``), whose values are part of the cache key and reach the function as
they are, and *dynamic* ones, pytrees whose leaves are numpy arrays, ``ge.graph.Tensor``s or
Python scalars. The key is the dynamic arguments' tree structure, each array leaf's dtype and
shape, each scalar leaf's type and value (scalars are baked into the graph as constants), and
the static values. A known key runs the compiled plan at once; a new one traces the function on
a fresh ``GraphBuilder`` (array leaves become graph inputs, as ``TensorHolder``s, their
``Data`` nodes named after the parameters: ``x``, ``params_w``), compiles the
graph (shape-generic kernels: another batch size reuses them) and logs why it had to retrace.

A new entry runs compiled at once when every kernel it needs is loaded or in the disk cache;
otherwise a worker process compiles them (``ge.compiler.background``) while calls run on the
reference interpreter, and the first call after the worker is done switches to the compiled
plan (``_Entry.ready``). Donated tensors (``donate_argnums``) are given up by each call, and
outputs are written over their memory where ``PlanRunner.aliasable`` says it is safe.

Retraces are explained on the ``ge.jit`` logger at ``INFO`` (``GE_JIT_EXPLAIN=warn``: at
``WARNING``, which Python shows without any logging set up), one line each: the function, its
``file:line``, the trace count and what changed against the previous trace
(``x: float32[3, 4] -> float32[5, 4]``). The fifth trace, and every tenth after it, logs a
summary naming the argument that changed in the most retraces, and per-trace lines stop after
the fifth (as TensorFlow's retracing warning does). Both count traces made for calls, not
``.trace()`` inspections; ``cache_info()`` counts exactly under concurrent callers.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ge.error import GeTypeError, GeValueError
from ge.es.graph_builder import GraphBuilder
from ge.es.tensor_holder import TensorHolder
from ge.es.tensor_like import to_const
from ge.graph._dtypes import data_type_from_numpy, numpy_dtype
from ge.graph.graph import Graph
from ge.graph.tensor import Tensor
from ge.graph.types import Placement
from ge.jit._args import (
    Identity,
    binding,
    check_hashable,
    has_varargs,
    index_set,
    name_set,
    parameters,
    scalar_key,
    static_key,
)
from ge.jit._debug import Print, recording
from ge.jit._entry import _Entry
from ge.jit._explain import explain_level
from ge.jit._pytree import TreeDef, data_names, flatten, paths, unflatten
from ge.jit._support import rewrite
from ge.passes.registry import generation as pass_generation

__all__ = ["CacheInfo", "JitFunction", "Lowered", "logger"]

logger = logging.getLogger("ge.jit")
_SUMMARY_AT = 5
_SUMMARY_EVERY = 10
_SCALARS = (bool, int, float, complex)


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    traces: int
    entries: int


@dataclass(frozen=True)
class _Leaf:
    """What the key records of one dynamic leaf."""

    path: str
    kind: str  # "array" or "const"
    dtype: np.dtype[Any] | None
    shape: tuple[int, ...]
    value: Any = None

    def __str__(self) -> str:
        if self.kind == "const":
            return f"{type(self.value).__name__} {self.value!r}"
        assert self.dtype is not None
        return f"{self.dtype.name}{list(self.shape)}"

    def same(self, other: _Leaf) -> bool:
        if self.kind != other.kind or self.dtype != other.dtype or self.shape != other.shape:
            return False
        return self.kind != "const" or scalar_key(self.value) == scalar_key(other.value)


@dataclass
class _Signature:
    trees: tuple[tuple[str, TreeDef], ...]
    leaves: tuple[_Leaf, ...]
    static: tuple[tuple[str, Any], ...]

    def key(self) -> Any:
        return (
            self.trees,
            tuple((lf.kind, lf.dtype, lf.shape, scalar_key(lf.value)) for lf in self.leaves),
            self.static,
        )


class Lowered:
    """``JitFunction.lower(...)``: the traced graph, the optimised graph and the task plan.

    In Jupyter it renders as a drawing of the optimised graph when Graphviz is installed,
    else as its ``as_text()`` listing (``_repr_mimebundle_``)."""

    def __init__(self, entry: _Entry) -> None:
        self.traced = entry.graph
        compiled = entry.compiled
        self.graph = compiled.graph if compiled is not None else entry.graph
        self.plan = entry.runner.plan if entry.runner is not None else None

    def as_text(self) -> str:
        plan = self.plan.as_text() if self.plan is not None else "(no plan: nothing to run)"
        return f"{self.graph.as_text()}\n{plan}"

    def __repr__(self) -> str:
        return f"<Lowered {self.graph.name}: {len(self.graph.get_direct_nodes())} nodes>"

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        """Jupyter: the optimised graph drawn by Graphviz when it is installed, else
        ``as_text()`` (graph and plan) as preformatted text; exactly one of the two, since
        JupyterLab would show the HTML over the drawing."""
        from ge.graph._dot import to_mimebundle  # noqa: PLC0415

        return to_mimebundle(self.graph, listing=self.as_text())


def _where(fun: Callable[..., Any]) -> str:
    code = getattr(fun, "__code__", None)
    if code is None:
        return "?"
    return f"{code.co_filename.rsplit('/', 1)[-1]}:{code.co_firstlineno}"


class JitFunction:
    """A function traced into a GE graph and compiled once per argument signature."""

    def __init__(
        self,
        fun: Callable[..., Any],
        static_argnums: int | Sequence[int] | None = None,
        static_argnames: str | Sequence[str] | None = None,
        donate_argnums: int | Sequence[int] | None = None,
    ) -> None:
        if not callable(fun):
            raise GeTypeError(f"ge.jit needs a function, got {type(fun).__name__}")
        functools.update_wrapper(self, fun)
        self._fun = fun
        self._name = getattr(fun, "__qualname__", getattr(fun, "__name__", repr(fun)))
        self._where = _where(fun)
        self._params = parameters(fun)
        self._binding = binding(fun)
        nums = index_set(static_argnums, "static_argnums")
        names = name_set(static_argnames, "static_argnames")
        donate = index_set(donate_argnums, "donate_argnums")
        positional = [p.name for p in self._params]
        for what, indexes in (("static_argnums", nums), ("donate_argnums", donate)):
            for n in indexes:
                if (
                    positional
                    and not -len(positional) <= n < len(positional)
                    and not has_varargs(fun)
                ):
                    raise GeValueError(
                        f"{what} {n} is out of range for {self._name}({', '.join(positional)})"
                    )
        self._static_nums = frozenset(
            n % len(positional) if positional and n < 0 else n for n in nums
        )
        self._static_names = frozenset(names) | {
            positional[n] for n in self._static_nums if n < len(positional)
        }
        self._static_nums = self._static_nums | {
            positional.index(n) for n in names if n in positional
        }
        if positional[:1] in (["self"], ["cls"]):  # a method: the instance is static
            self._static_nums |= {0}
            self._static_names |= {positional[0]}
        self._donate = frozenset(n % len(positional) if positional and n < 0 else n for n in donate)
        both = sorted(self._donate & self._static_nums)
        if both:
            raise GeValueError(
                f"argument {both[0]} of {self._name} is both static and donated: static "
                f"arguments are values of the trace, not buffers"
            )
        self._donee = f"{self._name} ({self._where})"
        self._warned: set[str] = set()
        self._pass_generation = pass_generation()  # traces compiled with this set of passes
        self._cache: dict[Any, _Entry] = {}
        self._fast: dict[Any, _Entry] = {}
        self._lock = threading.RLock()
        # cache_info's counters, changed only under _counts: calls come from any thread
        self._counts = threading.Lock()
        self._hits = self._misses = self._traces = 0
        # retrace explanations (under _lock, as compiles are): traces made for calls, the
        # retraces among them, and in how many of those each argument changed
        self._compiles = self._retraces = 0
        self._last: _Signature | None = None
        self._causes: Counter[str] = Counter()

    # --- calling --------------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if pass_generation() != self._pass_generation:
            self._passes_changed()
        if not kwargs and not self._static_nums:  # the fast path: arrays only, seen before
            entry = self._fast.get(_fast_key(args))
            if entry is not None:
                with self._counts:
                    self._hits += 1
                return entry.runner.call(args)[0] if entry.single else entry.run(args, targets=args)
        if _tracing(args, kwargs):  # called from inside another trace: trace inline
            return self._fun(*args, **kwargs)
        signature, sources = self._signature(args, kwargs)
        entry = self._entry(signature, args, kwargs)
        if not kwargs and not self._static_nums:
            fast_key = _fast_key(args)
            if fast_key is not None:
                self._fast[fast_key] = entry
        targets = self._targets(args, kwargs) if entry.writeback else ()
        if self._donate:
            return entry.run(sources, self._donated(args), self._donee, targets)
        return entry.run(sources, targets=targets)

    def _targets(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """The caller's array leaves, in the order of the graph's inputs (for write-back)."""
        named = [(i in self._static_nums, v) for i, v in enumerate(args)]
        named += [(k in self._static_names, v) for k, v in sorted(kwargs.items())]
        return [
            leaf
            for is_static, value in named
            if not is_static
            for leaf in flatten(value)[0]
            if not isinstance(leaf, _SCALARS)
        ]

    def _donated(self, args: tuple[Any, ...]) -> list[Tensor]:
        """The tensors of the donated arguments (each once). numpy arrays cannot be made
        unusable, so they are not donated: a warning says so, once per argument."""
        tensors: dict[int, Tensor] = {}
        for i in sorted(self._donate):
            if i >= len(args):
                continue
            values, tree = flatten(args[i])
            for path, leaf in zip(paths(tree, self._arg_name(i)), values, strict=True):
                if isinstance(leaf, Tensor):
                    tensors[id(leaf)] = leaf
                elif isinstance(leaf, np.ndarray) and path not in self._warned:
                    self._warned.add(path)
                    logger.warning(
                        "ge.jit: %s donates %s, a numpy array; numpy arrays cannot be "
                        "invalidated, so it is passed as usual. Donate a ge.graph.Tensor "
                        "(on the device, to reuse its memory)",
                        self._donee,
                        path,
                    )
        return list(tensors.values())

    def _entry(
        self,
        signature: _Signature,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        background: bool = True,
    ) -> _Entry:
        key = signature.key()
        entry = self._cache.get(key)
        if entry is None:
            with self._lock:
                entry = self._cache.get(key)
                if entry is None:
                    with self._counts:
                        self._misses += 1
                    entry = self._cache[key] = self._compile(signature, args, kwargs, background)
                    return entry
        # a hit, also when another thread compiled the entry while this one waited
        with self._counts:
            self._hits += 1
        return entry

    def trace(self, *args: Any, **kwargs: Any) -> Graph:
        """The graph this call traces to (traced afresh, not compiled, not cached)."""
        signature, _ = self._signature(args, kwargs)
        return self._trace(signature, args, kwargs)[0]

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """The optimised graph and task plan this call runs (``.as_text()`` shows both)."""
        signature, _ = self._signature(args, kwargs)
        entry = self._entry(signature, args, kwargs, background=False)
        if entry.job is not None:  # being compiled in the background: wait for it
            entry.job.wait()
            entry.ready()
        return Lowered(entry)

    def cache_info(self) -> CacheInfo:
        """Calls served by a cached trace (``hits``) and calls that traced (``misses``), all
        traces (``.trace()`` inspections too) and cached entries. Exact under threads."""
        with self._counts:
            return CacheInfo(self._hits, self._misses, self._traces, len(self._cache))

    def clear_cache(self) -> None:
        """Forget every trace (the next call traces again, and its log line says why)."""
        with self._lock:
            self._cache.clear()
            self._fast.clear()

    def _passes_changed(self) -> None:
        """The registered ``ge.passes`` changed since the cached traces were compiled: they
        would not show the passes now registered, so they are dropped."""
        with self._lock:
            generation = pass_generation()
            if generation != self._pass_generation:
                self._cache.clear()
                self._fast.clear()
                self._pass_generation = generation

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return _BoundJit(self, obj)

    def __repr__(self) -> str:
        return f"<ge.jit {self._name} ({self._where})>"

    # --- signatures -------------------------------------------------------------------------------
    def _signature(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[_Signature, list[Any]]:
        if self._binding is not None:
            try:
                self._binding.bind(*args, **kwargs)
            except TypeError as e:  # called with arguments the function does not take
                raise GeTypeError(f"{self._name}: {e}") from None
        trees: list[tuple[str, TreeDef]] = []
        leaves: list[_Leaf] = []
        sources: list[Any] = []
        static: list[tuple[str, Any]] = []
        named = [(self._arg_name(i), i in self._static_nums, v) for i, v in enumerate(args)]
        named += [(k, k in self._static_names, v) for k, v in sorted(kwargs.items())]
        for name, is_static, value in named:
            if is_static:
                check_hashable(self._name, name, value)
                static.append((name, static_key(value)))
                continue
            values, tree = flatten(value)
            trees.append((name, tree))
            for path, leaf in zip(paths(tree, name), values, strict=True):
                record, source = self._leaf(path, leaf)
                leaves.append(record)
                if source is not None:
                    sources.append(source)
        return _Signature(tuple(trees), tuple(leaves), tuple(static)), sources

    def _arg_name(self, index: int) -> str:
        if index < len(self._params) and self._params[index].kind in (
            inspect.Parameter.POSITIONAL_ONLY,
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
        ):
            return self._params[index].name
        return f"args[{index}]"

    def _leaf(self, path: str, value: Any) -> tuple[_Leaf, Any]:
        if isinstance(value, np.ndarray):
            # asarray, not ascontiguousarray: that one makes a 0-d array 1-d, which the
            # reference interpreter would then compute on (shape (1,) where the plan gives ())
            source = np.asarray(value, order="C")
            return _Leaf(path, "array", value.dtype, value.shape), source
        if isinstance(value, np.generic):
            array = np.asarray(value)
            return _Leaf(path, "array", array.dtype, ()), array
        if isinstance(value, Tensor):
            value._check_not_donated()
            dtype = numpy_dtype(value.data_type)
            shape = tuple(value.shape)
            if value.placement == Placement.PLACEMENT_DEVICE:
                return _Leaf(path, "array", dtype, shape), value  # read in place
            return _Leaf(path, "array", dtype, shape), value.numpy()
        if isinstance(value, _SCALARS):
            return _Leaf(path, "const", None, (), value), None
        if isinstance(value, TensorHolder):
            raise GeTypeError(
                f"argument {path} of {self._name} is a TensorHolder of another graph; "
                f"@ge.jit functions called while tracing are traced inline: call the "
                f"undecorated function, or pass arrays"
            )
        raise GeTypeError(
            f"argument {path} of {self._name} is a {type(value).__name__}: @ge.jit takes numpy "
            f"arrays, Python scalars, ge.graph.Tensor and tuples/lists/dicts/dataclasses of "
            f"them; pass other values as static (static_argnums/static_argnames)"
        )

    # --- tracing ----------------------------------------------------------------------------------
    def _compile(
        self,
        signature: _Signature,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        background: bool,
    ) -> _Entry:
        self._explain(signature)
        graph, out_tree, consts, writeback, prints = self._trace(signature, args, kwargs)
        return _Entry(
            graph, out_tree, consts, background=background, writeback=writeback, prints=prints
        )

    def _trace(
        self, signature: _Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> tuple[Graph, TreeDef, dict[int, Any], list[tuple[int, str]], list[Print]]:
        """Trace the function; an array argument it updated in place (``x[k] = v``, ``x +=
        y``: ge.es._inplace rebinds its holder) gets an extra graph output, its final value,
        listed in the returned write-back ``(argument index, path)`` pairs; each traced value
        ``ge.jit.debug_print`` prints is one more, after those (returned ``Print`` records)."""
        with self._counts:  # an attempt counts, as it does in the retrace summary
            self._traces += 1
        builder = GraphBuilder(_graph_name(self._name))
        builder._trace_note = f"@ge.jit function {self._name} ({self._where})"
        builder._numpy_semantics = True  # traced values follow numpy (ge.es._numpy_rules)
        holders: list[Any] = []
        k = 0
        names = data_names([lf.path for lf in signature.leaves if lf.kind != "const"])
        for leaf in signature.leaves:
            if leaf.kind == "const":
                holders.append(leaf.value)
                continue
            assert leaf.dtype is not None
            holders.append(
                builder.create_input(
                    k,
                    name=names[k],
                    shape=list(leaf.shape),
                    data_type=data_type_from_numpy(leaf.dtype),
                )
            )
            k += 1
        inputs = [
            (h, h._node, h._port, leaf.path)
            for h, leaf in zip(holders, signature.leaves, strict=True)
            if isinstance(h, TensorHolder)
        ]
        call_args, call_kwargs = self._rebuild(signature, holders, args, kwargs)
        try:
            with recording(builder) as recorder:
                result = self._fun(*call_args, **call_kwargs)
        except (TypeError, AttributeError) as error:
            clearer = rewrite(error)
            if clearer is None:
                raise
            raise clearer.with_traceback(error.__traceback__) from None
        out_leaves, out_tree = flatten(result)
        outputs: list[TensorHolder] = []
        consts: dict[int, Any] = {}
        for i, leaf in enumerate(out_leaves):
            if isinstance(leaf, TensorHolder):
                if leaf._builder is not builder:
                    leaf._builder._check_live("return a value")
                    raise GeValueError(f"{self._name} returned a TensorHolder of another graph")
                outputs.append(leaf)
            elif isinstance(leaf, (np.ndarray, np.generic)):
                outputs.append(to_const(builder, leaf))
            elif leaf is None or isinstance(leaf, (*_SCALARS, str)):
                consts[i] = leaf
            else:
                raise GeTypeError(
                    f"{self._name} returned a {type(leaf).__name__} at output {i}; return "
                    f"traced values, numpy arrays, scalars and pytrees of them"
                )
        writeback = []
        for index, (holder, node, port, path) in enumerate(inputs):
            if holder._node is not node or holder._port != port:
                writeback.append((index, path))
                outputs.append(holder)
        outputs += recorder.values
        graph = builder.build_and_reset(outputs)
        return graph, out_tree, consts, writeback, recorder.prints

    def _rebuild(
        self,
        signature: _Signature,
        holders: list[Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> tuple[list[Any], dict[str, Any]]:
        it = iter(holders)
        trees = dict(signature.trees)
        count = {name: len(paths(tree)) for name, tree in signature.trees}
        call_args: list[Any] = []
        for i, value in enumerate(args):
            name = self._arg_name(i)
            if i in self._static_nums:
                call_args.append(value)
            else:
                call_args.append(unflatten(trees[name], [next(it) for _ in range(count[name])]))
        call_kwargs: dict[str, Any] = {}
        for name in sorted(kwargs):
            if name in self._static_names:
                call_kwargs[name] = kwargs[name]
            else:
                call_kwargs[name] = unflatten(trees[name], [next(it) for _ in range(count[name])])
        return call_args, call_kwargs

    # --- retrace explanations ---------------------------------------------------------------------
    def _explain(self, signature: _Signature) -> None:
        """Log why a call traces again. Counts only traces made for calls (``.trace()``
        inspections are not retraces), and each argument at most once per retrace, so the
        summary's "changed in k of the n retraces" has k <= n."""
        previous, self._last = self._last, signature
        self._compiles += 1
        if previous is None:
            return
        self._retraces += 1
        causes = _differences(previous, signature)
        self._causes.update(list(dict.fromkeys(arg for arg, _ in causes if arg)))  # in order
        count = self._compiles
        where = f"{self._name} ({self._where})"
        if count < _SUMMARY_AT:
            text = "; ".join(cause for _, cause in causes if cause)
            logger.log(explain_level(), "ge.jit: retracing %s, trace %d: %s", where, count, text)
        elif count == _SUMMARY_AT or (count - _SUMMARY_AT) % _SUMMARY_EVERY == 0:
            top = self._causes.most_common(1)
            changed = (
                f"{top[0][0]} changed in {top[0][1]} of the {self._retraces} retraces"
                if top
                else f"the {self._retraces} retraces followed clear_cache()"
            )
            logger.log(
                explain_level(),
                "ge.jit: %s has been traced %d times; %s. "
                "Each new shape, dtype, structure or static value traces and compiles again: "
                "keep shapes fixed (pad or bucket them) and pass values that vary as arrays, "
                "not as static arguments or Python scalars",
                where,
                count,
                changed,
            )


def _differences(old: _Signature, new: _Signature) -> list[tuple[str, str]]:
    """What changed between two signatures: ``(argument, description)`` pairs, the argument
    ``""`` where none changed (the cache was cleared)."""
    if old.trees != new.trees:
        before = ", ".join(f"{n}={t}" for n, t in old.trees)
        after = ", ".join(f"{n}={t}" for n, t in new.trees)
        old_trees, new_trees = dict(old.trees), dict(new.trees)
        names = dict.fromkeys([*old_trees, *new_trees])
        changed = [n for n in names if old_trees.get(n) != new_trees.get(n)]
        text = f"argument structure: {before} -> {after}"
        return [(changed[0], text), *((n, "") for n in changed[1:])]
    owners = [name for name, tree in new.trees for _ in paths(tree)]
    causes = [
        (owner, f"{b.path}: {a} -> {b}")
        for owner, a, b in zip(owners, old.leaves, new.leaves, strict=True)
        if not a.same(b)
    ]
    old_static = dict(old.static)
    for name, value in new.static:
        previous: Any = old_static.get(name)
        if name in old_static and previous == value:
            continue
        same_object = (
            isinstance(previous, Identity)
            and isinstance(value, Identity)
            and previous.value is value.value
        )
        if same_object:  # the same object, changed attributes
            was, now = dict(previous.fingerprint), dict(value.fingerprint)
            changed = sorted(k for k in was.keys() | now.keys() if was.get(k) != now.get(k))
            causes.append((name, f"{name}: attributes {', '.join(changed)} changed"))
            continue
        causes.append((name, f"{name}: static {previous!r} -> {value!r}"))
    return causes or [("", "(same signature: the cache was cleared)")]


class _BoundJit:
    """A ``JitFunction`` read from an instance: the instance is a static first argument."""

    def __init__(self, function: JitFunction, obj: Any) -> None:
        self._function = function
        self._obj = obj

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._function(self._obj, *args, **kwargs)

    def trace(self, *args: Any, **kwargs: Any) -> Graph:
        return self._function.trace(self._obj, *args, **kwargs)

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        return self._function.lower(self._obj, *args, **kwargs)

    def cache_info(self) -> CacheInfo:
        return self._function.cache_info()

    def clear_cache(self) -> None:
        self._function.clear_cache()


def _tracing(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """Whether any argument leaf is a traced value (a ``TensorHolder``)."""
    for value in (*args, *kwargs.values()):
        if isinstance(value, TensorHolder):
            return True
        nested = isinstance(value, (tuple, list, dict)) or hasattr(value, "__dataclass_fields__")
        if nested and any(isinstance(v, TensorHolder) for v in flatten(value)[0]):
            return True
    return False


def _fast_key(args: tuple[Any, ...]) -> Any:
    """For calls with only array arguments (any layout): their dtypes and shapes."""
    key = []
    for a in args:
        if type(a) is not np.ndarray:
            return None
        key.append((a.dtype, a.shape))
    return tuple(key)


def _graph_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return f"jit_{cleaned}"
