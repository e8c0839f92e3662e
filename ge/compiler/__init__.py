"""``ge.compiler``: turns a graph into something that runs.

The pipeline (``PIPELINE``: infer, user passes at each ``PassStage``, constant folding, CSE,
algebraic simplification, dead-node elimination, verify) rewrites a copy of the graph;
``compile_graph`` then builds the executable.
"""

from ge.compiler.pipeline import PIPELINE, Step, copy_graph, optimize_graph, register_stage_hook

__all__ = ["PIPELINE", "Step", "copy_graph", "optimize_graph", "register_stage_hook"]
