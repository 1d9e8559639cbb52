"""jobstats' console output: Spark's progress bar only on a terminal.

A run whose stderr is a log file or a CI job's output would otherwise fill it with hundreds of
``[Stage N:===>`` fragments (one per update, carriage returns instead of new lines)."""

from __future__ import annotations

import sys

from jobstats.session import session_settings


def test_the_progress_bar_is_off_when_the_output_is_not_a_terminal() -> None:
    assert session_settings(None, submitted=False, terminal=False)["spark.ui.showConsoleProgress"] == "false"
    assert session_settings("spark://h:7077", submitted=True, terminal=False)["spark.ui.showConsoleProgress"] == "false"


def test_the_progress_bar_shows_on_a_terminal() -> None:
    assert session_settings(None, submitted=False, terminal=True)["spark.ui.showConsoleProgress"] == "true"
    assert session_settings("spark://h:7077", submitted=True, terminal=True)["spark.ui.showConsoleProgress"] == "true"


def test_the_session_shows_the_progress_bar_only_when_stderr_is_a_terminal(spark) -> None:  # type: ignore[no-untyped-def]
    # The tests' session was made by spark_session() under the same stderr as this test: captured by pytest (not
    # a terminal: "false"), or the terminal itself under `pytest -s`.
    expected = str(sys.stderr.isatty()).lower()
    assert spark.sparkContext.getConf().get("spark.ui.showConsoleProgress") == expected
