"""LeaseSettings from the command line and the environment, through the consumer's configuration
(``sqslease.config.ConsumerConfig``): one source (the dataclass fields), CLI wins."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import subprocess
import sys

import pytest

from sqslease.config import ConsumerConfig
from sqslease.settings import FailurePolicy, LeaseSettings


def test_every_field_is_a_kebab_case_option() -> None:
    parser = argparse.ArgumentParser()
    ConsumerConfig.add_arguments(parser)
    options = {o for action in parser._actions for o in action.option_strings} - {"-h", "--help"}
    assert {"--" + f.name.replace("_", "-") for f in dataclasses.fields(LeaseSettings)} <= options


def test_the_command_line_wins_over_the_environment() -> None:
    settings = ConsumerConfig.from_args(
        ["--visibility-timeout", "45", "--heartbeat", "false", "--non-retryable", "a.b:C,d:E"],
        environ={"SQSLEASE_VISIBILITY_TIMEOUT": "30", "SQSLEASE_JOB_TYPE": "Thumbnails"},
    ).lease
    assert settings.visibility_timeout == 45 and settings.heartbeat is False
    assert settings.job_type == "Thumbnails" and settings.non_retryable == ("a.b:C", "d:E")


def test_to_args_and_to_env_are_inverses() -> None:
    settings = LeaseSettings(
        visibility_timeout=300,
        extension_threshold=5,
        failure_policy=FailurePolicy.VISIBLE_NOW,
        request_timeout=1.5,
        non_retryable=("x:Y",),
        dead_letter_queue_url="https://sqs.us-east-1.amazonaws.com/1/dlq",
    )
    config = ConsumerConfig(lease=settings)
    assert ConsumerConfig.from_args(config.to_args(), environ={}).lease == settings
    assert ConsumerConfig.from_env(config.to_env()).lease == settings


def test_bad_options_name_the_option() -> None:
    with pytest.raises(ValueError, match="--visibility-timeout='soon'"):
        ConsumerConfig.from_args(["--visibility-timeout", "soon"], environ={})


def test_the_worker_reads_lease_settings_from_its_command_line() -> None:
    # Rejected by LeaseSettings itself: the option reached it.
    result = subprocess.run(
        [sys.executable, "-m", "sqslease.worker", "--queue-url", "http://x/q", "--handler", "json:loads",
         "--visibility-timeout", "5", "--extension-threshold", "5"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 2 and "extension_threshold (5 s) must be below visibility_timeout" in result.stderr


def test_the_worker_help_names_each_option_s_values() -> None:
    from sqslease.worker.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    text = out.getvalue()
    assert "TUPLE[" not in text and "--non-retryable PATH[,PATH...]" in text, text
    assert "{lapse,visible_now,backoff}" in text, text


def test_a_max_total_lease_that_cannot_cover_max_processing_time_and_the_lease_is_refused() -> None:
    # GIVEN the settings of the report: a 10 s lease, 8 s per message, and the lease capped at 8 s from its receive
    # WHEN they are read THEN they are refused, naming both values and the fix
    with pytest.raises(ValueError) as refused:
        LeaseSettings(visibility_timeout=10, max_processing_time=8, max_total_lease=8)
    named = "max_total_lease (8 s) must cover max_processing_time (8 s) plus visibility_timeout (10 s)"
    assert named in str(refused.value)
    assert "raise max_total_lease to at least 18 s (at most 12 h) or leave it at its default" in str(refused.value)
    # AND a max_processing_time the 12 h cap cannot cover with its lease is refused with the other fix
    with pytest.raises(ValueError, match="lower max_processing_time"):
        LeaseSettings(visibility_timeout=60, max_processing_time=43_200)
    # AND a cap that covers both is accepted, as is any cap without max_processing_time or without the heartbeat
    assert LeaseSettings(visibility_timeout=10, max_processing_time=8, max_total_lease=18).max_total_lease == 18
    assert LeaseSettings(visibility_timeout=10, max_total_lease=8).max_processing_time is None
    assert not LeaseSettings(visibility_timeout=10, max_processing_time=8, max_total_lease=8, heartbeat=False).heartbeat
