"""``ge.passes``: the Python pass framework (GE-PY's passes module).

So far it holds ``PassStage``, the points of the compile pipeline where passes run; the pass
classes, pattern matching and registration come with the pass-framework issue.
"""

from ge.passes.stage import PassStage

__all__ = ["PassStage"]
