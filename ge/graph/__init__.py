"""``ge.graph``: the graph IR every other stage reads and writes.

``Graph`` owns ``Node``s linked by data and control edges, plus attributes and named subgraphs;
``Tensor``/``TensorDesc``/``Shape`` describe values; ``DataType``/``Format``/``Placement`` are
GE's enums with GE-PY's values. Graphs round-trip through AIR files (``save_to_air`` /
``load_from_air``), the binary ``ge.proto.ModelDef`` that GE itself reads.

    >>> from ge.graph import Graph, DataType
    >>> g = Graph("g"); g.set_attr("dtype", DataType.DT_INT32); g.get_attr("dtype").name
    'DT_INT32'
"""

from ge.graph._attr import AttrValue, NamedAttrs
from ge.graph.graph import Graph
from ge.graph.node import Node
from ge.graph.tensor import Tensor
from ge.graph.tensor_desc import Shape, TensorDesc
from ge.graph.types import AttrValueType, DataType, DumpFormat, Format, Placement

__all__ = [
    "AttrValue",
    "AttrValueType",
    "DataType",
    "DumpFormat",
    "Format",
    "Graph",
    "NamedAttrs",
    "Node",
    "Placement",
    "Shape",
    "Tensor",
    "TensorDesc",
]
