"""One consumer configuration, ``sqslease.config.ConsumerConfig``: everything a consumer is told, each setting one
field with one variable and one option, and any valid configuration survives its round trips unchanged:
``to_env`` -> ``from_env`` (a Lambda function's channel) and ``to_args`` -> the worker's own parser (an ECS
worker's: ``sqslease.worker.cli.read_config``, what ``python -m sqslease.worker`` runs).

The property tests draw configurations with Hypothesis under a derandomized profile (the same examples on every
run, no example database), bounded to a few seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import math

import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from sqslease.config import ENV_PREFIX, SETTINGS, ConsumerConfig, named, options, variables
from sqslease.idempotency_settings import IdempotencySettings
from sqslease.rules import SQS_MAX_RETENTION_S, SQS_MAX_VISIBILITY_TIMEOUT_S
from sqslease.settings import FailurePolicy, LeaseSettings
from sqslease.worker.cli import command_line, read_config

#: Derandomized: a run draws the same examples as the last, so a pass cannot turn into a failure by chance.
ROUND_TRIPS = settings(
    derandomize=True,
    database=None,
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# "--" alone cannot be told as an option (refused: test_a_value_an_option_cannot_carry_is_refused)
texts = st.text(min_size=1, max_size=20).filter(lambda text: text != "--")
#: Import paths, package.module:name (what hooks, non_retryable and the handler and key function are).
paths = st.builds(
    "{}:{}".format,
    st.sampled_from(["app", "app.hooks", "orders.keys", "media.transcode_v2"]),
    st.sampled_from(["Timing", "order_id", "handle", "ProviderHooks"]),
)


def seconds(low: float, high: float) -> st.SearchStrategy[float]:
    """Durations: whole seconds (what a template writes) as often as any float between."""
    floats = st.floats(low, high)
    if math.ceil(low) > math.floor(high):
        return floats
    return st.one_of(st.integers(math.ceil(low), math.floor(high)).map(float), floats)


@st.composite
def lease_settings(draw: st.DrawFn) -> LeaseSettings:
    """Valid lease settings: the timing ones drawn within the rules they must keep (sqslease.rules)."""
    heartbeat = draw(st.booleans())
    vt = draw(seconds(2, SQS_MAX_VISIBILITY_TIMEOUT_S))
    threshold = draw(seconds(0, vt / 2))
    interval = draw(seconds(0.01, (vt - threshold) / 2))
    backoff_base = draw(seconds(0.1, 60))
    longest = SQS_MAX_VISIBILITY_TIMEOUT_S - 60 - vt  # max_total_lease's default covers it and the lease
    processing = draw(st.none() | seconds(0.01, longest)) if longest >= 0.01 else None
    values = {
        "visibility_timeout": vt,
        "extension_threshold": threshold,
        "heartbeat_interval": interval,
        "heartbeat": heartbeat,
        "pull_forward": draw(seconds(0, 60)),
        "max_requests_in_flight": draw(st.integers(1, 64)),
        "request_timeout": draw(st.none() | seconds(0.01, 10)),
        "receive_visibility_timeout": draw(st.none() | seconds(1, vt)),
        "failure_policy": draw(st.sampled_from(FailurePolicy)),
        "backoff_base": backoff_base,
        "backoff_max": draw(seconds(backoff_base, SQS_MAX_VISIBILITY_TIMEOUT_S)),
        "non_retryable": tuple(draw(st.lists(paths, max_size=3))),
        "dead_letter_queue_url": draw(st.none() | texts),
        "max_receive_count": draw(st.none() | st.integers(1, 1000)),
        "receive_count_warning": draw(st.integers(0, 100)),
        "wait_time": draw(st.integers(0, 20)),
        "max_in_flight": draw(st.integers(1, 200_000)),
        "queue_in_flight_limit": draw(st.integers(1, 120_000)),
        "shutdown_grace": draw(seconds(0, 120)),
        "deadline_margin": draw(seconds(0, 60)),
        "max_batching_window": draw(seconds(0, 300)),
        "job_type": draw(texts),
        "stack": draw(st.none() | texts),
        "task_protection_minutes": draw(st.integers(1, 2880)),
        "max_processing_time": processing,
        "hooks": tuple(draw(st.lists(paths, max_size=3))),
        "idempotency_key": draw(st.none() | paths),
        "delete_payloads": draw(st.booleans()),
    }
    try:
        return LeaseSettings(**values)  # type: ignore[arg-type]
    except ValueError:
        reject()


idempotency_settings = st.builds(
    IdempotencySettings,
    table=st.none() | texts,
    retention_period=seconds(60, SQS_MAX_RETENTION_S),
    ttl_margin=seconds(0, 10_000_000),
    max_result_bytes=st.integers(0, 262_144),
)
configs = st.builds(
    ConsumerConfig,
    queue_url=st.none() | texts,
    handler=st.none() | paths,
    concurrency=st.integers(1, 1_000),
    log_level=st.sampled_from([*logging.getLevelNamesMapping(), "debug", "warning"]),
    lease=lease_settings(),
    idempotency=idempotency_settings,
)


def test_every_field_is_a_setting_with_one_variable_and_one_option() -> None:
    # The config's own fields, each lease field under its name, each idempotency field under idempotency_<field>
    import dataclasses

    own = [f.name for f in dataclasses.fields(ConsumerConfig) if f.name not in ("lease", "idempotency")]
    lease = [f.name for f in dataclasses.fields(LeaseSettings)]
    idempotency = [f"idempotency_{f.name}" for f in dataclasses.fields(IdempotencySettings)]
    assert list(SETTINGS) == [*own, *lease, *idempotency]
    assert SETTINGS["visibility_timeout"].variable == "SQSLEASE_VISIBILITY_TIMEOUT"
    assert SETTINGS["visibility_timeout"].option == "--visibility-timeout"
    assert SETTINGS["idempotency_table"].variable == "SQSLEASE_IDEMPOTENCY_TABLE"
    assert SETTINGS["idempotency_key"].variable == "SQSLEASE_IDEMPOTENCY_KEY"  # a lease field: no clash
    assert len({s.variable for s in SETTINGS.values()}) == len({s.option for s in SETTINGS.values()}) == len(SETTINGS)


def test_the_worker_s_parser_is_built_from_the_config_with_units_and_defaults() -> None:
    parser = command_line()
    found = {o for action in parser._actions for o in action.option_strings} - {"-h", "--help"}
    assert found == {s.option for s in SETTINGS.values()}
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        parser.parse_args(["--help"])
    text = " ".join(out.getvalue().split())
    assert "--visibility-timeout FLOAT lease length asked for on receive and on each extension, in seconds." in text
    assert "Default 30. Env SQSLEASE_VISIBILITY_TIMEOUT." in text
    assert "--concurrency INT handlers running at once in one worker, at least 1. Default 4." in text
    assert "--idempotency-retention-period FLOAT" in text and "Default 345,600 (4 days" in text
    assert "Default 108,000 (90 % of the 120,000 quota)" in text  # a % in a help text is argparse's format character


@ROUND_TRIPS
@given(configs)
def test_any_valid_configuration_survives_its_variables(config: ConsumerConfig) -> None:
    assert ConsumerConfig.from_env(config.to_env()) == config


@ROUND_TRIPS
@given(configs)
def test_any_valid_configuration_survives_the_worker_s_own_parser(config: ConsumerConfig) -> None:
    assert read_config(config.to_args(), environ={}) == config


@ROUND_TRIPS
@given(configs, configs)
def test_an_option_wins_over_its_variable(told: ConsumerConfig, other: ConsumerConfig) -> None:
    # GIVEN the variables of another configuration, for every setting the options give
    given = told.to_env()
    environ = {name: value for name, value in other.to_env().items() if name in given}
    # WHEN the worker reads both THEN it runs with its options
    assert read_config(told.to_args(), environ=environ) == told


@pytest.mark.parametrize(
    "config",
    [
        # A value that begins with "-" is written --name=value: a parser would take it for an option
        ConsumerConfig(lease=LeaseSettings(job_type="-nightly")),
        ConsumerConfig(lease=LeaseSettings(pull_forward=-1.5)),
        ConsumerConfig(lease=LeaseSettings(hooks=("a.b:C", "d:E"))),
        ConsumerConfig(lease=LeaseSettings(visibility_timeout=600.0)),
        ConsumerConfig(queue_url="--queue-url", handler="a:b"),
    ],
)
def test_edge_values_survive(config: ConsumerConfig) -> None:
    assert read_config(config.to_args(), environ={}) == config
    assert ConsumerConfig.from_env(config.to_env()) == config


def test_a_value_the_text_cannot_carry_is_refused_naming_the_setting() -> None:
    # An item with a comma would come back as two, an empty text as not given, NaN as another NaN.
    with pytest.raises(ValueError, match=r"hooks has items \['a:b,c'\]"):
        ConsumerConfig(lease=LeaseSettings(hooks=("a:b,c",)))
    with pytest.raises(ValueError, match="job_type is empty"):
        ConsumerConfig(lease=LeaseSettings(job_type=""))
    with pytest.raises(ValueError, match="backoff_max is inf: give a finite number"):
        ConsumerConfig(lease=LeaseSettings(backoff_max=math.inf))
    with pytest.raises(ValueError, match="concurrency must be at least 1"):
        ConsumerConfig(concurrency=0)


def test_the_text_of_a_setting_is_what_a_template_shows() -> None:
    config = ConsumerConfig(
        queue_url="https://sqs.us-east-1.amazonaws.com/1/q",
        lease=LeaseSettings(visibility_timeout=600.0, heartbeat=False, failure_policy=FailurePolicy.LAPSE),
    )
    assert config.values(["visibility_timeout", "heartbeat", "failure_policy", "stack"]) == {
        "visibility_timeout": "600",
        "heartbeat": "false",
        "failure_policy": "lapse",
    }  # stack: None, not written
    assert variables({"queue_url": "u"}) == {ENV_PREFIX + "QUEUE_URL": "u"}
    assert options({"job_type": "-x", "heartbeat": "true"}) == ["--job-type=-x", "--heartbeat", "true"]
    with pytest.raises(ValueError, match="no sqslease setting visibility"):
        config.values(["visibility"])


def test_a_bad_value_names_where_it_came_from() -> None:
    with pytest.raises(ValueError, match="SQSLEASE_IDEMPOTENCY_TTL_MARGIN='soon' is not a valid float"):
        ConsumerConfig.from_env({"SQSLEASE_IDEMPOTENCY_TTL_MARGIN": "soon"})
    with pytest.raises(ValueError, match="--heartbeat='often' is not a valid bool: give true or false"):
        ConsumerConfig.from_args(["--heartbeat", "often"], environ={})
    with pytest.raises(ValueError, match="unrecognized arguments: --visibility 3"):  # no abbreviation
        ConsumerConfig.from_args(["--visibility", "3"], environ={})


def test_a_refused_setting_is_named_with_its_option_and_variable() -> None:
    with pytest.raises(ValueError) as lease:
        ConsumerConfig.from_args(["--visibility-timeout", "5", "--extension-threshold", "5"], environ={})
    assert named(str(lease.value)).endswith(
        "(set with --visibility-timeout or SQSLEASE_VISIBILITY_TIMEOUT, "
        "--extension-threshold or SQSLEASE_EXTENSION_THRESHOLD)"
    )
    with pytest.raises(ValueError) as idempotency:
        ConsumerConfig.from_env({"SQSLEASE_IDEMPOTENCY_RETENTION_PERIOD": "5"})
    assert named(str(idempotency.value)).endswith(
        "(set with --idempotency-retention-period or SQSLEASE_IDEMPOTENCY_RETENTION_PERIOD)"
    )
    # a lease problem that says "handler" names no --handler: the lease's own fields only
    message = "invalid sqslease settings: max_total_lease (8 s) must cover ... while the handler may still run"
    assert "--handler" not in named(message) and "--max-total-lease" in named(message)


def test_the_worker_reads_every_setting_from_its_options_over_its_variables() -> None:
    config = read_config(
        ["--queue-url", "http://x/q", "--visibility-timeout", "45", "--idempotency-table", "Ids"],
        environ={"SQSLEASE_VISIBILITY_TIMEOUT": "30", "SQSLEASE_CONCURRENCY": "7", "SQSLEASE_HANDLER": "a:b"},
    )
    assert (config.queue_url, config.handler, config.concurrency) == ("http://x/q", "a:b", 7)
    assert config.lease.visibility_timeout == 45 and config.idempotency.table == "Ids"
    assert isinstance(command_line(), argparse.ArgumentParser)


def test_one_part_of_the_environment_is_read_alone() -> None:
    # The worker's idempotency store is built from the idempotency variables only (sqslease.idempotency_gate):
    # a lease variable its options overrode is not parsed again there.
    environ = {"SQSLEASE_VISIBILITY_TIMEOUT": "soon", "SQSLEASE_IDEMPOTENCY_TABLE": "Ids"}
    assert ConsumerConfig.from_env(environ, part="idempotency").idempotency.table == "Ids"
    assert read_config(["--visibility-timeout", "30"], environ=environ).lease.visibility_timeout == 30
    with pytest.raises(ValueError, match="SQSLEASE_VISIBILITY_TIMEOUT='soon' is not a valid float"):
        ConsumerConfig.from_env(environ)


def test_a_value_an_option_cannot_carry_is_refused() -> None:
    # argparse reads "--stack=--" as the end of the options: the value would come back as []
    with pytest.raises(ValueError, match="stack='--' cannot be passed as the option --stack"):
        ConsumerConfig(lease=LeaseSettings(stack="--")).to_args()
