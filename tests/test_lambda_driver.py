"""The event source mapping stand-in (``jobqueues.emulator.lambda_driver``) and the generic Lambda entry point.

The function, layer and mapping are created with boto3 in the session's moto_server (no CloudFormation):
the driver reads them through the same APIs it uses after a deploy, downloads the code and the layer from
S3, and runs the handler in a fresh interpreter.
"""

from __future__ import annotations

import hashlib
import io
import json
import signal
import threading
import time
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pytest
from support.emf import emf_lines
from support.moto_queues import counts
from support.waiting import wait_for

from jobqueues.emulator.chaos import Fault, FaultProxy
from jobqueues.emulator.deploy import PROJECT_DIR
from jobqueues.emulator.deployed import DeployedStack
from jobqueues.emulator.lambda_driver.event_source import LambdaDriver, lambda_record, records_to_delete
from jobqueues.emulator.lambda_driver.function import DriverError, load_function
from jobqueues.emulator.lambda_driver.runtime import Invocation, LocalRuntime, exit_error
from jobqueues.emulator.lambda_driver.sqs_faults import POLL_RETRY_MAX_S, poll_retry_delay_s
from jobqueues.emulator.server import Emulator, LocalServer
from sqslease.config import ConsumerConfig
from sqslease.lambda_entry import EntryConfigurationError, build_handler
from sqslease.rules import HUNG_EXIT_CODE
from sqslease.settings import FailurePolicy, LeaseSettings

pytestmark = pytest.mark.waits  # mostly waits in real time: started early, beside others' work (tests/conftest.py)

HANDLER_CODE = """
import json, os, sys, time
import layer_mod

def handler(event, context):
    bodies = [r["body"] for r in event["Records"]]
    print(json.dumps({
        "records": event["Records"],
        "remaining_ms": context.get_remaining_time_in_millis(),
        "function_name": context.function_name,
        "request_id": context.aws_request_id,
        "greeting": os.environ.get("GREETING"),
        "layer": layer_mod.VALUE,
        "layer_file": layer_mod.__file__,
        "sys_path": sys.path,
        "pythonpath": os.environ["PYTHONPATH"],
    }), flush=True)
    if "crash" in bodies:
        raise RuntimeError("boom")
    if "slow" in bodies:
        time.sleep(600)  # never returns in time: the driver kills it at the function's timeout
    if "late" in bodies:
        time.sleep(2.5)  # returns after a 1 s function's timeout: too late, it is killed at the timeout
    return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in event["Records"] if r["body"] == "bad"]}
"""


def _zip(files: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return buffer.getvalue()


class Deployed:
    """A function with a layer and an SQS mapping, made with boto3, and the stack view the driver reads."""

    def __init__(
        self,
        server: LocalServer,
        batch_size: int = 10,
        window: int = 0,
        timeout: int = 10,
        vt: int = 2,
        code: str = HANDLER_CODE,
        filters: list[str] | None = None,
        environment: dict[str, str] | None = None,
    ) -> None:
        self.server = server
        suffix = uuid.uuid4().hex[:8]
        s3, lam, sqs, iam = (server.client(s) for s in ("s3", "lambda", "sqs", "iam"))
        self.bucket = f"assets-{suffix}"
        s3.create_bucket(Bucket=self.bucket)
        s3.put_object(Bucket=self.bucket, Key="code.zip", Body=_zip({"index.py": code}))
        s3.put_object(Bucket=self.bucket, Key="layer.zip", Body=_zip({"python/layer_mod.py": "VALUE = 'from-layer'\n"}))
        role = iam.create_role(
            RoleName=f"fn-{suffix}",
            AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
        )["Role"]["Arn"]
        layer_arn = lam.publish_layer_version(
            LayerName=f"layer-{suffix}", Content={"S3Bucket": self.bucket, "S3Key": "layer.zip"}
        )["LayerVersionArn"]
        self.function_name = f"fn-{suffix}"
        lam.create_function(
            FunctionName=self.function_name,
            Runtime="python3.12",
            Role=role,
            Handler="index.handler",
            Code={"S3Bucket": self.bucket, "S3Key": "code.zip"},
            Timeout=timeout,
            Environment={"Variables": {"GREETING": "hello", **(environment or {})}},
        )
        self.queue_url = sqs.create_queue(QueueName=f"q-{suffix}", Attributes={"VisibilityTimeout": str(vt)})[
            "QueueUrl"
        ]
        arn = sqs.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        self.queue_arn = arn
        lam.create_event_source_mapping(
            EventSourceArn=arn,
            FunctionName=self.function_name,
            BatchSize=batch_size,
            MaximumBatchingWindowInSeconds=window,
            FunctionResponseTypes=["ReportBatchItemFailures"],
            **({"FilterCriteria": {"Filters": [{"Pattern": p} for p in filters]}} if filters else {}),
        )
        code = {"S3Bucket": self.bucket, "S3Key": "code.zip"}
        layer = {"S3Bucket": self.bucket, "S3Key": "layer.zip"}
        self.stack = DeployedStack(
            name="DriverTest",
            account="123456789012",
            region="us-east-1",
            template={
                "Resources": {
                    "Fn": {"Type": "AWS::Lambda::Function", "Properties": {"Code": code, "Layers": [{"Ref": "Lay"}]}},
                    "Lay": {"Type": "AWS::Lambda::LayerVersion", "Properties": {"Content": layer}},
                }
            },
            physical_ids={"Fn": self.function_name, "Lay": layer_arn},
        )

    def driver(self, tmp_path: Path, endpoint: str | None = None, **kwargs: Any) -> tuple[LambdaDriver, Path]:
        """The driver of the function, its code downloaded from the emulator; the function and the poller talk to
        ``endpoint`` (default: the emulator itself)."""
        function = load_function(Emulator(self.server.endpoint), self.stack, "Fn", tmp_path / "fn")
        emulator = Emulator(endpoint or self.server.endpoint)
        stdout = tmp_path / "stdout.log"
        runtime = LocalRuntime(function, emulator, stdout.open("ab"), (tmp_path / "stderr.log").open("ab"))
        return LambdaDriver(emulator, function, runtime, idle_wait_s=1, **kwargs), stdout

    def send(self, *bodies: str) -> None:
        sqs = self.server.client("sqs")
        for body in bodies:
            sqs.send_message(
                QueueUrl=self.queue_url,
                MessageBody=body,
                MessageAttributes={"kind": {"DataType": "String", "StringValue": "test"}},
            )


def _receive_until(server: LocalServer, url: str, bodies: set[str], timeout_s: float = 15) -> list[dict[str, Any]]:
    """Receive (hiding for 60 s) until every body in ``bodies`` was seen, or the timeout; return all received."""
    sqs = server.client("sqs")
    found: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not bodies <= {m["Body"] for m in found}:
        found += sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, VisibilityTimeout=60).get("Messages", [])
        time.sleep(0.1)
    return found


def queue_depth(server: LocalServer, url: str) -> int:
    """Visible plus in-flight messages of ``url``."""
    names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    attributes = server.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
    return sum(int(value) for value in attributes.values())


def _printed(stdout: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.read_text().splitlines() if line.startswith("{")]


def test_partial_batch_failure_deletes_only_unnamed_records(local_aws: LocalServer, tmp_path: Path) -> None:
    deployed = Deployed(local_aws, batch_size=3)
    deployed.send("ok-1", "bad", "ok-2", "later")
    driver, stdout = deployed.driver(tmp_path)
    try:
        records, invocation, deleted = driver.invoke(driver.gather())
        assert invocation.error is None and invocation.cold_start
        assert len(records) == 3  # the mapping's batch size
        bad = [r["messageId"] for r in records if r["body"] == "bad"]
        assert sorted(deleted) == sorted(r["messageId"] for r in records if r["body"] != "bad")
        (printed,) = _printed(stdout)
        # The fresh interpreter ran the downloaded code with the layer, the environment and a live context.
        assert printed["greeting"] == "hello" and printed["layer"] == "from-layer"
        assert printed["layer_file"].startswith(str(tmp_path / "fn" / "opt"))
        assert printed["function_name"] == deployed.function_name and printed["request_id"] == invocation.request_id
        assert 0 < printed["remaining_ms"] <= 10_000
        # Only the code and the layer: the project that runs the bootstrap (python -m) is not on the function's path.
        assert str(PROJECT_DIR) not in printed["sys_path"] and str(PROJECT_DIR) not in printed["pythonpath"].split(":")
        assert printed["pythonpath"].split(":")[0] == str(tmp_path / "fn" / "task")
        record = printed["records"][0]
        assert record["eventSource"] == "aws:sqs" and record["eventSourceARN"] == deployed.queue_arn
        assert record["awsRegion"] == "us-east-1"
        assert record["md5OfBody"] == hashlib.md5(record["body"].encode()).hexdigest()
        assert record["attributes"]["ApproximateReceiveCount"] == "1" and "SentTimestamp" in record["attributes"]
        assert record["messageAttributes"]["kind"]["stringValue"] == "test"

        # Only the failed record comes back after the visibility timeout (plus the one not yet received).
        again = _receive_until(local_aws, deployed.queue_url, {"bad", "later"})
        assert sorted(m["Body"] for m in again) == ["bad", "later"]
        assert [m["MessageId"] for m in again if m["Body"] == "bad"] == bad
        second = driver.invoke([])  # an empty batch still invokes once, warm
        assert second[1].cold_start is False
    finally:
        driver.runtime.stop()


def test_the_poller_survives_sqs_faults_as_lambda_s_pollers_do(
    local_aws: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # GIVEN a mapping whose first two receives and first delete answer InternalError (500) through the fault proxy,
    # each surfacing to the poller (one attempt per request: no SDK retry hides it)
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    deployed = Deployed(local_aws)
    faults = {"ReceiveMessage": 2, "DeleteMessageBatch": 1}
    lock = threading.Lock()

    def rule(operation: str, body: bytes) -> Fault | None:
        with lock:
            if faults.get(operation, 0) > 0:
                faults[operation] -= 1
                return Fault("error500")
        return None

    with (
        FaultProxy(local_aws.endpoint, rule) as proxy,
        caplog.at_level("INFO", logger="jobqueues.emulator.lambda_driver"),
    ):
        driver, stdout = deployed.driver(tmp_path, endpoint=proxy.endpoint)
        deployed.send("job-1")
        # WHEN the poller runs
        driver.start()
        try:
            # THEN it retries past the faults: the record runs, its lost delete brings it back once (as on Lambda),
            # and the second delete takes it out of the queue
            assert wait_for(
                lambda: driver.stats.invocations == 2 and queue_depth(local_aws, deployed.queue_url) == 0, 60
            )
            assert driver.failure is None and driver.alive
            assert (driver.stats.sqs_errors, driver.stats.deleted) == (3, 1)
        finally:
            driver.stop()
    assert [r["body"] for p in _printed(stdout) for r in p["records"]] == ["job-1", "job-1"]
    assert faults == {"ReceiveMessage": 0, "DeleteMessageBatch": 0}
    # ... each fault one line, no traceback
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 3 and not any(r.exc_info for r in warnings)
    assert all("InternalError" in r.getMessage() and "\n" not in r.getMessage() for r in warnings)
    assert "retrying in 0.1 s" in warnings[0].getMessage() and "retrying in 0.2 s" in warnings[1].getMessage()


def test_the_poller_starts_through_sqs_faults_on_its_queue_s_lookup(
    local_aws: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a mapping whose queue lookups (GetQueueUrl) answer InternalError twice through the fault proxy, as
    # `local up --chaos` may fault them, one attempt per request
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    deployed = Deployed(local_aws)
    faults = {"GetQueueUrl": 2}
    lock = threading.Lock()

    def rule(operation: str, body: bytes) -> Fault | None:
        with lock:
            if faults.get(operation, 0) > 0:
                faults[operation] -= 1
                return Fault("error500")
        return None

    with FaultProxy(local_aws.endpoint, rule) as proxy:
        # WHEN the driver is made and started
        driver, stdout = deployed.driver(tmp_path, endpoint=proxy.endpoint)
        deployed.send("job-1")
        driver.start()
        try:
            # THEN the lookups are retried as its receives are (with backoff), and the record runs
            assert wait_for(lambda: driver.stats.invocations == 1, 60)
            assert driver.failure is None and driver.alive and driver.stats.sqs_errors == 2
        finally:
            driver.stop()
    assert faults == {"GetQueueUrl": 0}
    assert [r["body"] for p in _printed(stdout) for r in p["records"]] == ["job-1"]


def test_the_poller_backs_off_exponentially_to_a_bound() -> None:
    assert [poll_retry_delay_s(n) for n in (1, 2, 3, 4)] == [0.1, 0.2, 0.4, 0.8]
    assert poll_retry_delay_s(30) == poll_retry_delay_s(9) == POLL_RETRY_MAX_S


def test_function_error_deletes_nothing(local_aws: LocalServer, tmp_path: Path) -> None:
    deployed = Deployed(local_aws)
    deployed.send("ok", "crash")
    driver, _ = deployed.driver(tmp_path)
    try:
        _, invocation, deleted = driver.invoke(driver.gather())
    finally:
        driver.runtime.stop()
    assert invocation.error is not None and invocation.error["errorType"] == "RuntimeError"
    assert deleted == [] and driver.stats.function_errors == 1
    again = _receive_until(local_aws, deployed.queue_url, {"crash", "ok"})
    assert sorted(m["Body"] for m in again) == ["crash", "ok"]
    # the function's log says why, as Lambda's runtime logs an unhandled error
    logged = (tmp_path / "stderr.log").read_text()
    assert "[ERROR] RuntimeError: boom" in logged and 'raise RuntimeError("boom")' in logged


def test_code_that_fails_to_import_fails_each_invocation_and_says_why(local_aws: LocalServer, tmp_path: Path) -> None:
    # GIVEN a function whose module imports a package its code and layers do not hold
    deployed = Deployed(local_aws, code="import not_in_the_package\n\ndef handler(event, context):\n    return {}\n")
    deployed.send("job")
    driver, _ = deployed.driver(tmp_path)
    try:
        # WHEN it is invoked, twice
        _, first, deleted = driver.invoke(driver.gather())
        _, second, _ = driver.invoke([])
    finally:
        driver.runtime.stop()
    # THEN each invocation fails, as in Lambda, nothing is deleted, and the log names the missing module
    assert first.error is not None and first.error["errorType"] == "Runtime.InitError"
    assert "No module named 'not_in_the_package'" in first.error["errorMessage"]
    assert second.error is not None and deleted == [] and driver.stats.function_errors == 2
    logged = (tmp_path / "stderr.log").read_text()
    assert "[ERROR] Runtime.ImportModuleError: Unable to import module 'index': No module named" in logged
    assert [m["Body"] for m in _receive_until(local_aws, deployed.queue_url, {"job"})] == ["job"]


def test_the_bootstrap_is_found_without_help_where_the_emulator_is_installed(tmp_path: Path) -> None:
    from jobqueues.emulator.lambda_driver import bootstrap
    from jobqueues.emulator.lambda_driver.runtime import bootstrap_path

    site = tmp_path / "site-packages"
    # a checkout: on PYTHONPATH for ``python -m``, then taken off by the bootstrap
    assert bootstrap_path(tmp_path / "checkout", "/task", [str(site)]) == {
        "PYTHONPATH": f"/task:{tmp_path / 'checkout'}",
        bootstrap.BOOTSTRAP_PATH_ENV: str(tmp_path / "checkout"),
    }
    # installed: site-packages, where boto3 is too, stays (tests/test_packaging.py runs it)
    assert bootstrap_path(site, "/task", [str(site)]) == {"PYTHONPATH": "/task"}


def test_timeout_kills_the_environment_and_fails_the_batch(local_aws: LocalServer, tmp_path: Path) -> None:
    deployed = Deployed(local_aws, timeout=1)
    deployed.send("slow")
    driver, _ = deployed.driver(tmp_path)
    try:
        _, invocation, deleted = driver.invoke(driver.gather())
        assert invocation.error is not None and "timed out" in invocation.error["errorMessage"]
        assert deleted == [] and driver.runtime.process is None
        _, next_invocation, _ = driver.invoke([])
        assert next_invocation.cold_start and driver.runtime.cold_starts == 2
    finally:
        driver.runtime.stop()


def test_a_timeout_kills_the_environment_at_once(local_aws: LocalServer, tmp_path: Path) -> None:
    # GIVEN a 1 s function whose handler returns after 2.5 s
    deployed = Deployed(local_aws, timeout=1)
    deployed.send("late")
    driver, _ = deployed.driver(tmp_path)
    try:
        messages = driver.gather()
        driver.runtime.start()
        environment = driver.runtime.process
        assert environment is not None
        # WHEN its invocation times out
        _, invocation, _ = driver.invoke(messages)
        # THEN the environment was killed as the invocation failed, as Lambda does: not left to return and exit
        assert invocation.error is not None and "timed out" in invocation.error["errorMessage"]
        assert environment.returncode == -signal.SIGKILL
    finally:
        driver.runtime.stop()


def test_batching_window_gathers_messages_that_arrive_later(local_aws: LocalServer, tmp_path: Path) -> None:
    # The queue's visibility timeout outlasts the window, as it must (else a gathered message comes back).
    deployed = Deployed(local_aws, batch_size=10, window=3, vt=30)
    deployed.send("first")
    driver, _ = deployed.driver(tmp_path)
    receive = driver.sqs.receive_message

    def receive_then_send_another(**request: Any) -> Any:
        answer = receive(**request)
        if any(m["Body"] == "first" for m in answer.get("Messages", [])):
            deployed.send("second")  # arrives once the window opened with the first
        return answer

    driver.sqs.receive_message = receive_then_send_another
    try:
        messages = driver.gather()
    finally:
        driver.runtime.stop()
    assert sorted(m["Body"] for m in messages) == ["first", "second"]


def test_code_that_differs_from_the_deployed_digest_is_refused(local_aws: LocalServer, tmp_path: Path) -> None:
    deployed = Deployed(local_aws)
    local_aws.client("s3").put_object(Bucket=deployed.bucket, Key="code.zip", Body=_zip({"index.py": "x = 1\n"}))
    with pytest.raises(DriverError, match="differs from the deployed"):
        load_function(Emulator(local_aws.endpoint), deployed.stack, "Fn", tmp_path / "fn")


def test_an_exited_runtime_is_reported_in_lambdas_words() -> None:
    assert exit_error(3)["errorType"] == "Runtime.ExitError"
    assert exit_error(3)["errorMessage"] == "Runtime exited with error: exit status 3"
    assert exit_error(-9)["errorMessage"] == "Runtime exited with error: signal: killed"


def test_records_to_delete_follows_lambdas_rules() -> None:
    records = [{"messageId": i} for i in ("a", "b", "c")]
    ok = Invocation("r", result={"batchItemFailures": [{"itemIdentifier": "b"}]})
    assert records_to_delete(records, ok, report_failures=True) == ["a", "c"]
    assert records_to_delete(records, ok, report_failures=False) == ["a", "b", "c"]
    for result in (None, {}, {"batchItemFailures": None}, {"batchItemFailures": []}):
        assert records_to_delete(records, Invocation("r", result=result), True) == ["a", "b", "c"]
    for bad in ([{"itemIdentifier": "zzz"}], [{"itemIdentifier": ""}], [{}], ["b"]):
        assert records_to_delete(records, Invocation("r", result={"batchItemFailures": bad}), True) == []
    assert records_to_delete(records, Invocation("r", error={"errorType": "X"}), True) == []


def test_lambda_record_has_lambdas_shape() -> None:
    message = {
        "MessageId": "m1",
        "ReceiptHandle": "rh",
        "Body": "hi",
        "MD5OfBody": "md5",
        "Attributes": {"ApproximateReceiveCount": "2", "SentTimestamp": "1", "MessageGroupId": "g", "Other": "x"},
        "MessageAttributes": {"bin": {"DataType": "Binary", "BinaryValue": b"\x00\x01"}},
    }
    record = lambda_record(message, "arn:aws:sqs:us-east-1:123456789012:q", "us-east-1")
    assert record["attributes"] == {"ApproximateReceiveCount": "2", "SentTimestamp": "1", "MessageGroupId": "g"}
    assert record["messageAttributes"]["bin"] == {
        "stringValue": None,
        "binaryValue": "AAE=",
        "stringListValues": [],
        "binaryListValues": [],
        "dataType": "Binary",
    }
    assert (record["messageId"], record["receiptHandle"], record["body"]) == ("m1", "rh", "hi")


def test_lambda_entry_names_a_missing_or_bad_handler() -> None:
    with pytest.raises(EntryConfigurationError, match="SQSLEASE_HANDLER is not set"):
        build_handler({})
    with pytest.raises(EntryConfigurationError, match="cannot import"):
        build_handler({"SQSLEASE_HANDLER": "no_such_module.handle"})
    with pytest.raises(EntryConfigurationError, match="not callable"):
        build_handler({"SQSLEASE_HANDLER": "sqslease.config.ENV_PREFIX"})
    assert callable(build_handler({"SQSLEASE_HANDLER": "json.loads", "SQSLEASE_VISIBILITY_TIMEOUT": "30"}))


# -- FilterCriteria: Lambda's event filtering ---------------------------------------------------------------------
def test_filter_patterns_match_as_lambda_s_do() -> None:
    from jobqueues.emulator.lambda_driver.filters import matches, parse_filters

    def keeps(pattern: dict[str, Any], body: Any) -> bool:
        text = body if isinstance(body, str) else json.dumps(body)
        return matches(parse_filters([json.dumps(pattern)]), text)

    assert keeps({"body": {"kind": ["thumb"]}}, {"kind": "thumb"})
    assert not keeps({"body": {"kind": ["thumb"]}}, {"kind": "video"})
    assert not keeps({"body": {"kind": ["thumb"]}}, {"other": "thumb"})  # absent: no match
    assert keeps({"body": {"tags": ["a"]}}, {"tags": ["b", "a"]})  # an array matches on any element
    assert keeps({"body": {"size": [300]}}, {"size": 300.0}) and not keeps({"body": {"size": ["300"]}}, {"size": 300})
    assert keeps({"body": {"path": [{"prefix": "img/"}]}}, {"path": "img/a.png"})
    assert not keeps({"body": {"path": [{"prefix": "img/"}]}}, {"path": "doc/a.png"})
    assert keeps({"body": {"n": [{"numeric": [">", 0, "<=", 10]}]}}, {"n": 10})
    assert not keeps({"body": {"n": [{"numeric": [">", 0, "<=", 10]}]}}, {"n": 11})
    assert not keeps({"body": {"n": [{"numeric": [">", 0]}]}}, {"n": "5"})  # a string is no number
    assert keeps({"body": {"retry": [{"exists": False}]}}, {"kind": "x"})
    assert not keeps({"body": {"retry": [{"exists": True}]}}, {"kind": "x"})
    assert keeps({"body": {"kind": [{"anything-but": ["a", "b"]}]}}, {"kind": "c"})
    assert not keeps({"body": {"kind": [{"anything-but": "a"}]}}, {"kind": "a"})
    assert not keeps({"body": {"kind": [{"anything-but": "a"}]}}, {})  # anything-but needs the field
    assert keeps({"body": {"meta": {"tier": ["gold"]}}}, {"meta": {"tier": "gold"}})
    # The body's format must be the pattern's: a JSON pattern never matches plain text, and the other way round.
    assert not keeps({"body": {"kind": ["thumb"]}}, "kind=thumb")
    assert keeps({"body": [{"prefix": "Result: "}]}, "Result: ok") and not keeps({"body": ["x"]}, {"x": 1})
    # Any of several patterns; none at all keeps everything.
    both = parse_filters([json.dumps({"body": {"k": ["a"]}}), json.dumps({"body": {"k": ["b"]}})])
    assert matches(both, '{"k": "b"}') and not matches(both, '{"k": "c"}') and matches((), "anything")


@pytest.mark.parametrize(
    "pattern", ['{"body": {"ip": [{"cidr": "10.0.0.0/8"}]}}', '{"body": {"$or": []}}', '{"attributes": {}}', "[1]"]
)
def test_a_filter_the_driver_cannot_apply_is_refused_not_guessed(pattern: str) -> None:
    from jobqueues.emulator.lambda_driver.filters import UnsupportedFilter, parse_filters

    with pytest.raises(UnsupportedFilter):
        parse_filters([pattern])


def test_records_that_match_no_filter_are_deleted_unprocessed(local_aws: LocalServer, tmp_path: Path) -> None:
    # GIVEN a mapping that keeps {"kind": "thumb"} only
    deployed = Deployed(local_aws, filters=[json.dumps({"body": {"kind": ["thumb"]}})])
    driver, stdout = deployed.driver(tmp_path)
    # WHEN a matching, a non-matching and a plain-text message arrive
    deployed.send(json.dumps({"kind": "thumb", "n": 1}), json.dumps({"kind": "video"}), "not json")
    driver.poll_once()
    # THEN only the match runs, and the queue is empty: the others were deleted without running
    (run,) = [json.loads(line) for line in stdout.read_text().splitlines() if line.startswith("{")]
    assert [json.loads(r["body"]) for r in run["records"]] == [{"kind": "thumb", "n": 1}]
    assert driver.stats.filtered_out == 2 and driver.stats.deleted == 1
    attributes = local_aws.client("sqs").get_queue_attributes(QueueUrl=deployed.queue_url, AttributeNames=["All"])
    assert attributes["Attributes"]["ApproximateNumberOfMessages"] == "0"
    assert attributes["Attributes"]["ApproximateNumberOfMessagesNotVisible"] == "0"


#: A function running sqslease whose handler never ends on the first delivery of "hang" (it notes a tick every
#: 50 ms), and notes each start and end with the receive count, its process id and the time.
HUNG_HANDLER_CODE = """
import os, time
from sqslease.lambda_adapter import sqs_batch_handler

def note(line):
    with open(os.environ["LEDGER"], "a") as ledger:
        ledger.write(f"{line} {time.time():.3f}\\n")

@sqs_batch_handler
def handler(body, message):
    run = f"{body} {message.receive_count} {os.getpid()}"
    note("start " + run)
    while body == "hang" and message.receive_count == 1:
        note("tick " + run)
        time.sleep(0.05)
    note("end " + run)
"""


def test_a_hung_record_ends_its_environment_before_its_redelivery_runs(local_aws: LocalServer, tmp_path: Path) -> None:
    # GIVEN that function with a 1 s max_processing_time and 6 s leases, and the records "ok" and "hang"
    ledger = tmp_path / "ledger.txt"
    settings = LeaseSettings(
        visibility_timeout=6,
        extension_threshold=2,
        heartbeat_interval=0.5,
        max_processing_time=1,
        failure_policy=FailurePolicy.VISIBLE_NOW,
    )
    environment = {**ConsumerConfig(lease=settings).to_env(), "LEDGER": str(ledger)}
    deployed = Deployed(local_aws, vt=6, code=HUNG_HANDLER_CODE, environment=environment)
    deployed.send("ok", "hang")
    invocations: list[tuple[list[dict[str, Any]], Invocation, list[str]]] = []
    driver, _ = deployed.driver(tmp_path, on_invocation=lambda *outcome: invocations.append(outcome))
    # WHEN the event source runs it until the redelivery of "hang" has run and the queue is empty
    with driver:
        assert wait_for(lambda: ledger.exists() and "\nend hang 2 " in ledger.read_text(), timeout_s=60)
        assert wait_for(lambda: counts(local_aws, deployed.queue_url) == (0, 0), timeout_s=30)
    lines = [line.split() for line in ledger.read_text().splitlines()]
    # THEN the invocation that timed "hang" out ended its environment (exit status 3), as Lambda reports it
    records, invocation, deleted = invocations[0]
    assert sorted(r["body"] for r in records) == ["hang", "ok"]
    assert invocation.error is not None and invocation.error["errorType"] == "Runtime.ExitError"
    assert invocation.error["errorMessage"] == "Runtime exited with error: exit status 3"
    # ... having deleted "ok" itself (Lambda deletes nothing of a failed invocation): it ran once, never again
    assert deleted == []
    assert [line[:3] for line in lines if line[1] == "ok"] == [["start", "ok", "1"], ["end", "ok", "1"]]
    # ... and "hang" came back after its lease, in a new environment (cold start, another process)
    starts = [(line[2], line[3]) for line in lines if line[:2] == ["start", "hang"]]
    assert [count for count, _ in starts] == ["1", "2"] and starts[0][1] != starts[1][1]
    assert invocations[-1][1].cold_start and invocations[-1][1].error is None
    # ... where no tick of the hung run came after the redelivery started: never two live handlers of "hang"
    redelivered = next(i for i, line in enumerate(lines) if line[:3] == ["start", "hang", "2"])
    ticks = [i for i, line in enumerate(lines) if line[:3] == ["tick", "hang", "1"]]  # the hung run's
    assert ticks and max(ticks) < redelivered


def test_a_hung_record_without_max_processing_time_leaves_its_trace_and_ends_its_environment(
    local_aws: LocalServer, tmp_path: Path
) -> None:
    # GIVEN that function as a LambdaJob without max_processing_time or lease extension deploys it: a 4 s timeout
    # (deadline margin 1 s, hang point 0.5 s before the end), the queue's 6 s lease, the records "ok" and "hang"
    ledger = tmp_path / "ledger.txt"
    settings = LeaseSettings(visibility_timeout=6, heartbeat=False, failure_policy=FailurePolicy.VISIBLE_NOW)
    environment = {**ConsumerConfig(lease=settings).to_env(), "LEDGER": str(ledger)}
    deployed = Deployed(local_aws, timeout=4, vt=6, code=HUNG_HANDLER_CODE, environment=environment)
    deployed.send("ok", "hang")
    invocations: list[tuple[list[dict[str, Any]], Invocation, list[str]]] = []
    driver, stdout = deployed.driver(tmp_path, on_invocation=lambda *outcome: invocations.append(outcome))
    # WHEN the event source runs it until the redelivery of "hang" has run and the queue is empty
    with driver:
        assert wait_for(lambda: ledger.exists() and "\nend hang 2 " in ledger.read_text(), timeout_s=60)
        assert wait_for(lambda: counts(local_aws, deployed.queue_url) == (0, 0), timeout_s=30)
    lines = [line.split() for line in ledger.read_text().splitlines()]
    # THEN the first invocation timed "hang" out before the function's timeout and ended its environment with
    # exit status 3, as Lambda reports it, not with Lambda's timeout
    records, invocation, _ = invocations[0]
    assert sorted(r["body"] for r in records) == ["hang", "ok"]
    assert invocation.error == exit_error(HUNG_EXIT_CODE)
    hang_id = next(r["messageId"] for r in records if r["body"] == "hang")
    # ... leaving its trace: the EMF line timed_out in the function's stdout, and in its stderr the (CRITICAL) line
    # that names it as it ends the environment
    first_lines = [line for line in emf_lines(stdout.read_text()) if line["ReceiveCount"] == 1]
    assert {line["MessageId"]: line["Outcome"] for line in first_lines}[hang_id] == "timed_out"
    logged = (tmp_path / "stderr.log").read_text().splitlines()
    assert any(hang_id in line and "ending this execution environment" in line for line in logged)
    # ... having deleted "ok" itself (Lambda deletes nothing of a failed invocation): it ran once, never again
    assert [line[:3] for line in lines if line[1] == "ok"] == [["start", "ok", "1"], ["end", "ok", "1"]]
    # ... and "hang" came back after its lease in a new environment, where no tick of the hung run came after the
    # redelivery started: never two live handlers of "hang"
    starts = [(line[2], line[3]) for line in lines if line[:2] == ["start", "hang"]]
    assert [count for count, _ in starts] == ["1", "2"] and starts[0][1] != starts[1][1]
    redelivered = next(i for i, line in enumerate(lines) if line[:3] == ["start", "hang", "2"])
    ticks = [i for i, line in enumerate(lines) if line[:3] == ["tick", "hang", "1"]]
    assert ticks and max(ticks) < redelivered
