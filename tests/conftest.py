"""Test-wide settings.

``ge.jit`` compiles in a background worker by default (first calls run on the reference
interpreter); the suite compiles on the calling thread so every test sees compiled plans
deterministically. ``tests/jit/test_background.py`` and
``tests/compiler/test_background.py`` turn the worker on where they test it.
"""

import os

os.environ.setdefault("GE_JIT_BACKGROUND", "0")
