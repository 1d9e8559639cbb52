"""LeaseSettings from the command line and the environment: one source (the dataclass fields), CLI wins."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import subprocess
import sys

import pytest

from sqslease.settings import FailurePolicy, LeaseSettings


def test_every_field_is_a_kebab_case_option() -> None:
    parser = argparse.ArgumentParser()
    LeaseSettings.add_arguments(parser)
    options = {o for action in parser._actions for o in action.option_strings} - {"-h", "--help"}
    assert options == {"--" + f.name.replace("_", "-") for f in dataclasses.fields(LeaseSettings)}


def test_the_command_line_wins_over_the_environment() -> None:
    settings = LeaseSettings.from_args(
        ["--visibility-timeout", "45", "--heartbeat", "false", "--non-retryable", "a.b:C,d:E"],
        environ={"SQSLEASE_VISIBILITY_TIMEOUT": "30", "SQSLEASE_JOB_TYPE": "Thumbnails"},
    )
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
    assert LeaseSettings.from_args(settings.to_args(), environ={}) == settings
    assert LeaseSettings.from_env(settings.to_env()) == settings


def test_bad_options_name_the_option() -> None:
    with pytest.raises(ValueError, match="--visibility-timeout='soon'"):
        LeaseSettings.from_args(["--visibility-timeout", "soon"], environ={})


def test_the_worker_reads_lease_settings_from_its_command_line() -> None:
    # Rejected by LeaseSettings itself: the option reached it.
    result = subprocess.run(
        [sys.executable, "-m", "sqslease.worker", "--queue-url", "http://x/q", "--handler", "json:loads",
         "--visibility-timeout", "5", "--extension-threshold", "5"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 2 and "extension_threshold (5 s) must be below visibility_timeout" in result.stderr


def test_the_worker_help_names_each_option_s_values() -> None:
    from sqslease.worker_cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    text = out.getvalue()
    assert "TUPLE[" not in text and "--non-retryable PATH[,PATH...]" in text, text
    assert "{lapse,visible_now,backoff}" in text, text
