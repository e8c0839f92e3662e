"""``ge.allocator``: the memory-block interface external allocators implement (GE-PY's
allocator module). ``Session.register_external_allocator`` lets such an allocator serve the
outputs and workspace of ``run_graph_with_stream_async`` on a stream.
"""

from ge.allocator.allocator import Allocator, MemBlock

__all__ = ["Allocator", "MemBlock"]
