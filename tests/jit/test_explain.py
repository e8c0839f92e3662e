"""``ge.jit._explain``: the level of retrace notices comes from the ``Options`` record
(``jit_explain``, read from ``GE_JIT_EXPLAIN`` like every ``GE_*`` variable), not from
``os.environ`` directly."""

from __future__ import annotations

import logging

import numpy as np
import pytest

import ge
from ge.jit._explain import ENV, explain_level
from ge.options import Options, using_options


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("info", logging.INFO),
        (" Info", logging.INFO),
        ("warn", logging.WARNING),
        ("", logging.INFO),
    ],
)
def test_the_level_follows_the_record(text: str, level: int) -> None:
    assert explain_level(Options(jit_explain=text)) == level


def test_a_bad_value_logs_what_it_takes_and_gives_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ge.jit"):
        assert explain_level(Options(jit_explain="loud")) == logging.WARNING
    [record] = caplog.records
    assert record.getMessage() == (
        "ge.jit: GE_JIT_EXPLAIN must be info or warn (or unset), got 'loud'; logging at WARNING"
    )


def test_the_variable_is_the_records(monkeypatch: pytest.MonkeyPatch) -> None:
    assert ENV == "GE_JIT_EXPLAIN" == Options.variables()["jit_explain"]
    monkeypatch.setenv(ENV, "warn")
    assert explain_level() == logging.WARNING
    with using_options(Options()):  # the record in force wins over the environment
        assert explain_level() == logging.INFO


def test_a_using_options_block_sets_the_notice_level(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(ENV, raising=False)

    @ge.jit
    def f(x):
        return x + 1

    with using_options(Options(jit_explain="warn")), caplog.at_level(logging.WARNING):
        f(np.zeros(1, np.float32))
        f(np.zeros(2, np.float32))
    [record] = caplog.records
    assert (record.name, record.levelno) == ("ge.jit", logging.WARNING)
    assert "retracing" in record.getMessage()
