"""Test-wide settings.

``ge.jit`` compiles in a background worker by default (first calls run on the reference
interpreter); the suite compiles on the calling thread so every test sees compiled plans
deterministically. ``tests/jit/test_background.py`` and
``tests/compiler/test_background.py`` turn the worker on where they test it. Nor does it
read or write ``ge.jit``'s plan cache (a plan from an earlier run would skip the compile a
test observes); ``tests/jit/test_plan_cache.py`` turns it on.
"""

import os

os.environ.setdefault("GE_JIT_BACKGROUND", "0")
os.environ.setdefault("GE_JIT_PLAN_CACHE", "0")
