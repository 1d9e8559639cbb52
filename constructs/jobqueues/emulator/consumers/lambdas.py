"""A Lambda job's function run locally through the event-source driver (:mod:`jobqueues.emulator.lambda_driver`),
with its deployed code and layer, its output shipped to the function's log group."""

from __future__ import annotations

import datetime
import logging
import os
import threading
import uuid
from pathlib import Path
from typing import IO, Any

from jobqueues.emulator.consumers.log_shipper import LogShipper
from jobqueues.emulator.deployed import DeployedStack
from jobqueues.emulator.lambda_driver.event_source import LambdaDriver
from jobqueues.emulator.lambda_driver.function import DriverError, load_function
from jobqueues.emulator.lambda_driver.runtime import Invocation, LocalRuntime
from jobqueues.emulator.server import Emulator
from jobqueues.ops.discovery import JobType, LambdaConsumer

logger = logging.getLogger("jobqueues.emulator.consumers")


def lambda_stream_name(now: datetime.datetime | None = None) -> str:
    """A log stream name as Lambda gives one: ``YYYY/MM/DD/[$LATEST]<32 hex>``."""
    now = now or datetime.datetime.now(datetime.UTC)
    return f"{now:%Y/%m/%d}/[$LATEST]{uuid.uuid4().hex}"


class LambdaConsumerRun:
    """One Lambda job type's function, polled and invoked locally until :meth:`stop`.

    :param emulator: the emulator itself (downloading the code and layers).
    :param endpoint: what the function and the poller talk to (the emulator, or the chaos proxy).
    :param workdir: where the code and layers are unpacked.
    :param local_env: local-only variables (``--env``), over everything else the function gets. Default: none.
    """

    def __init__(
        self,
        job: JobType,
        emulator: Emulator,
        endpoint: Emulator,
        shipper: LogShipper,
        workdir: Path,
        local_env: dict[str, str] | None = None,
    ) -> None:
        consumer = job.consumer
        if not isinstance(consumer, LambdaConsumer) or consumer.function_name is None:
            raise DriverError(f"{job.name} has no deployed Lambda function")
        stack = DeployedStack.load(emulator, consumer.stack or job.stack)  # the function's: maybe another stack
        logical_id = stack.logical_id(consumer.function_name)
        if logical_id is None:
            raise DriverError(f"{job.name}: function {consumer.function_name} is not in stack {stack.name}")
        self.job = job
        self.function = load_function(emulator, stack, logical_id, workdir)
        self.log_group = consumer.log_group or f"/aws/lambda/{self.function.name}"
        self.stream = lambda_stream_name()
        # One pipe for stdout and stderr, as Lambda sends both to the log stream; the shipper reads it.
        read_fd, write_fd = os.pipe()
        self._reader: IO[bytes] = os.fdopen(read_fd, "rb")
        self._writer: IO[Any] = os.fdopen(write_fd, "wb")
        local_name = f"{job.stack}/{job.job_type}/{self.stream.replace('/', '-')}.log"
        shipper.attach(self._reader, self.log_group, self.stream, local_name)
        self.runtime = LocalRuntime(
            self.function, endpoint, stdout=self._writer, stderr=self._writer, extra_env=local_env
        )
        self.driver = LambdaDriver(endpoint, self.function, self.runtime, on_invocation=self._record)
        #: The local copy of the function's output.
        self.log_file = shipper.local_path(local_name)
        #: The latest function error (``Type: message``), until :meth:`take_error` reports it.
        self._errors: list[str] = []
        self._lock = threading.Lock()
        self._cloudwatch = emulator.client("cloudwatch")  # the emulator itself, never the chaos proxy

    def _record(self, records: list[dict[str, Any]], invocation: Invocation, deleted: list[str]) -> None:
        """After each invocation: keep its error for the runner, and publish Lambda's ``Invocations`` and
        ``Errors`` metrics to the emulator's CloudWatch, as Lambda does, for ``jobqueues status``."""
        failed = invocation.error is not None
        if invocation.error is not None:
            error = f"{invocation.error.get('errorType')}: {invocation.error.get('errorMessage')}"
            with self._lock:
                self._errors.append(error)
        dimensions = [{"Name": "FunctionName", "Value": self.function.name}]
        try:
            self._cloudwatch.put_metric_data(
                Namespace="AWS/Lambda",
                MetricData=[
                    {"MetricName": name, "Value": value, "Unit": "Count", "Dimensions": dimensions}
                    for name, value in (("Invocations", 1.0), ("Errors", float(failed)))
                ],
            )
        except Exception as failure:  # a metric lost must not stop the poller: the log line says so
            logger.warning("PutMetricData for %s failed: %s", self.function.name, failure)

    @property
    def errors(self) -> int:
        """Invocations that failed (the function raised, timed out, or could not import its code)."""
        return self.driver.stats.function_errors

    def take_errors(self) -> list[str]:
        """The function errors since the last call (``Type: message``), oldest first."""
        with self._lock:
            taken, self._errors = self._errors, []
        return taken

    @property
    def invocations(self) -> int:
        return self.driver.stats.invocations

    @property
    def busy(self) -> bool:
        """An environment is up (it started on the first batch and stays warm)."""
        process = self.runtime.process
        return process is not None and process.poll() is None

    def start(self) -> None:
        self.driver.start()

    def stop(self) -> str | None:
        """Stop polling (a gathered batch is still invoked), end the environment; the driver's failure, if any."""
        try:
            self.driver.stop()
            failure = None
        except DriverError as error:
            failure = f"{error}: {error.__cause__}"
        self._writer.close()  # the shipper's reader sees end of file once the environment exited too
        return failure
