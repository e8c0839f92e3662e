"""The holder an op with no outputs returns (GE: it "cannot be used to connect edges") is
refused with a GraphError (a RuntimeError, as GE's failed edge is) wherever it is used as a
tensor, never an IndexError, and the refused op call leaves the graph as it was."""

import pytest

from ge import es
from ge.error import GeError, GraphError
from ge.es import GraphBuilder


def _no_output_holder() -> tuple[GraphBuilder, es.TensorHolder, es.TensorHolder]:
    b = GraphBuilder("g")
    x = b.create_input(0, shape=[2])
    return b, x, es.JitDebugPrint([x], fmt="{}", print_id=1)


@pytest.mark.parametrize(
    "use",
    [
        pytest.param(es.Add, id="generated-op-input"),
        pytest.param(lambda h, x: es.Add(x, h), id="generated-op-second-input"),
        pytest.param(lambda h, x: h + x, id="operator"),
        pytest.param(lambda h, x: h.data_type, id="data_type"),
    ],
)
def test_a_no_output_holder_is_refused_as_a_tensor(use: object) -> None:
    b, x, h = _no_output_holder()
    before = len(b._graph.get_direct_nodes())
    with pytest.raises(GraphError, match="JitDebugPrint_0") as info:
        use(h, x)  # type: ignore[operator]
    assert isinstance(info.value, GeError) and isinstance(info.value, RuntimeError)
    assert len(b._graph.get_direct_nodes()) == before
