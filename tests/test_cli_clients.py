"""The commands' AWS clients (``jobqueues.cli.context.Aws``): botocore's data files are parsed once a process, and
each client still gets its own session of the profile, region and endpoint it was given."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError, ProfileNotFound
from botocore.loaders import JSONFileLoader

from jobqueues.cli.context import Aws
from jobqueues.emulator.server import LocalServer
from jobqueues.ops.errors import OpsError, aws_error

LOCAL = "http://localhost:4566"  # no request is sent


@pytest.fixture
def files_parsed(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Each of botocore's data files parsed from here on, by name, counted."""
    parsed: Counter[str] = Counter()
    original = JSONFileLoader.load_file

    def load_file(self: JSONFileLoader, file_path: str) -> Any:
        data = original(self, file_path)
        if data is not None:
            parsed[Path(file_path).name] += 1
        return data

    monkeypatch.setattr(JSONFileLoader, "load_file", load_file)
    return parsed


@pytest.fixture
def no_aws_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    config = tmp_path / "config"
    config.write_text("[profile team]\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    return config


def test_a_second_command_in_one_process_parses_no_botocore_file_again(files_parsed: Counter[str]) -> None:
    # GIVEN one command's clients made (what it parses depends on what this process parsed before)
    Aws(endpoint_url=LOCAL, region="us-east-1").client("cloudformation")
    Aws(endpoint_url=LOCAL, region="us-east-1").client("sqs")
    files_parsed.clear()
    # WHEN another command makes the same clients
    aws = Aws(endpoint_url=LOCAL, region="us-east-1")
    clients = aws.client("cloudformation"), aws.client("sqs")
    # THEN it parses none of botocore's files: the service models and endpoints are read once a process
    assert files_parsed == Counter()
    assert [c.meta.service_model.service_name for c in clients] == ["cloudformation", "sqs"]


def test_each_client_has_the_profile_region_and_endpoint_it_was_given(no_aws_config: Path) -> None:
    assert Aws(endpoint_url=LOCAL, profile="team").client("sqs").meta.region_name == "eu-west-1"
    assert Aws(endpoint_url=LOCAL, profile="team", region="ap-south-1").client("sqs").meta.region_name == "ap-south-1"
    # ... a local endpoint with no region or credentials configured gets the emulator's
    local = Aws(endpoint_url=LOCAL).client("sqs")
    assert (local.meta.region_name, local.meta.endpoint_url) == ("us-east-1", LOCAL)
    assert local._request_signer._credentials.access_key == "testing"


def test_an_unknown_profile_is_refused_when_a_client_is_made(no_aws_config: Path) -> None:
    with pytest.raises(ProfileNotFound):
        Aws(endpoint_url=LOCAL, profile="nobody").client("sqs")


def test_a_queue_that_does_not_exist_is_named_in_the_error(local_aws: LocalServer) -> None:
    # GIVEN a job type's queue that does not exist (deleted outside its stack, or adopted and never created)
    sqs = Aws(endpoint_url=local_aws.endpoint, region="us-east-1").client("sqs")
    url = f"{local_aws.endpoint}/123456789012/legacy-billing"
    # WHEN a command asks SQS for it, THEN its one line names the queue and what may have happened
    for call in (
        lambda: sqs.receive_message(QueueUrl=url),
        lambda: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"]),
        lambda: sqs.send_message(QueueUrl=url, MessageBody="hi"),
    ):
        with pytest.raises(ClientError) as raised:
            call()
        line = str(aws_error(raised.value))
        assert line.endswith(
            "failed: queue legacy-billing does not exist (deleted outside its stack? An adopted queue is created "
            "by its owner)"
        ), line
        assert type(aws_error(raised.value)) is OpsError  # status 1: the operation ran and failed
