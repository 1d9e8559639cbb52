"""A declared job queue's marker is written in its template's own ``Metadata`` (``jobqueues:markers``, by the
source queue's logical id, once a stack: ``jobqueues.marker``), where cfn-lint accepts what it holds (a number that is
no integer as its decimal text), and every reader reads it as the same values as on a resource, where an earlier
jobqueues wrote it (``jobqueues.marker_format.resource_metadata``). A stack that would lose the markers is refused at
synth."""

from __future__ import annotations

import json
from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk import Duration
from cdk_helpers import ENV, cfn_lint_findings

from jobqueues import JobQueue
from jobqueues.marker import _queue_part
from jobqueues.marker_format import QUEUE_MARKER, RESOURCE_MARKERS, SECONDS_FIELDS, resource_metadata, template_marker
from jobqueues.ops.discovery import StackTemplate, discover_templates
from jobqueues.ops.errors import OpsError


def test_a_queue_marker_is_read_from_the_template_metadata_or_its_resource() -> None:
    # GIVEN one job queue's marker as this jobqueues writes it (the template's own metadata, by the source queue's
    # logical id), as an earlier one wrote it (on the source queue), and by a logical id the resource no longer has
    # (renamed after the job queue was built); its p99 of 0.383 s a number on the resource, decimal text in the
    # template's metadata
    marker = {"version": 1, "job_type": "Encode", "path": "Jobs/Encode", "queue": {"logical_id": "Q"}}
    marker["processing_p99_s"] = 0.383
    queue = {"Type": "AWS::SQS::Queue", "Properties": {"RedrivePolicy": {"maxReceiveCount": 4}}}
    written = {
        "Metadata": {RESOURCE_MARKERS: {"Q": {QUEUE_MARKER: template_marker(marker)}}},
        "Resources": {"Q": queue},
    }
    earlier = {"Resources": {"Q": {**queue, "Metadata": {QUEUE_MARKER: marker}}}}
    renamed = {
        "Metadata": {RESOURCE_MARKERS: {"Old": {QUEUE_MARKER: template_marker(marker)}}},
        "Resources": {"Q": queue},
    }
    # WHEN discovery reads each
    found = [discover_templates([StackTemplate("Jobs", t)]).job_types for t in (written, earlier, renamed)]
    # THEN each is the same job type, its redrive read from the queue its marker names
    assert found[0] == found[1] == found[2] and [(j.job_type, j.max_receive_count) for j in found[0]] == [("Encode", 4)]
    assert found[0][0].processing_p99_s == 0.383 and written["Metadata"][RESOURCE_MARKERS]["Q"][QUEUE_MARKER] != marker
    assert resource_metadata(written) == resource_metadata(earlier)


def test_a_declared_number_that_is_no_integer_passes_cfn_lint_and_reads_back_exactly(tmp_path: Path) -> None:
    # GIVEN job queues declaring numbers that are no integers (the README's p99 of 383 ms)
    app = cdk.App(outdir=str(tmp_path))
    stack = cdk.Stack(app, "Jobs", env=ENV)
    JobQueue(stack, "EmailSend", processing_p99=Duration.millis(383))
    JobQueue(
        stack,
        "Encode",
        processing_p99=Duration.millis(1001),
        max_processing_time=Duration.millis(123457),
        lease_extension=True,
    )
    # WHEN it is synthesized
    assembly = app.synth()
    # THEN cfn-lint, as on every docs example, finds nothing (E4002 refuses a number that is no integer in a
    # template's own Metadata) ...
    assert cfn_lint_findings(Path(assembly.directory)) == []
    # ... and every reader reads the same floats back, to the last digit: discovery, and the metadata the emulator's
    # demo reads, from the template as synthesized and as CloudFormation returns it (JSON text)
    template = assembly.get_stack_by_name("Jobs").template
    for read in (template, json.loads(json.dumps(template))):
        by_type = {j.job_type: j for j in discover_templates([StackTemplate("Jobs", read)]).job_types}
        assert [by_type["EmailSend"].processing_p99_s, by_type["Encode"].processing_p99_s] == [0.383, 1.001]
        assert by_type["Encode"].max_processing_time_s == 123.457
        p99s = [m[QUEUE_MARKER]["processing_p99_s"] for m in resource_metadata(read).values() if QUEUE_MARKER in m]
        assert sorted(p99s) == [0.383, 1.001] and all(type(p) is float for p in p99s)


class EveryNumberHalfASecond:
    """A job queue that declares every number a queue marker holds as 0.5 s."""

    job_type, fifo, fair, lease_extension = "Encode", False, False, True

    def __getattr__(self, name: str) -> float:
        assert name.endswith("_seconds"), name
        return 0.5


def test_every_number_of_a_queue_marker_is_written_as_decimal_text_in_the_template_and_read_back() -> None:
    # GIVEN the queue marker of a job queue declaring every number as 0.5 s
    marker = _queue_part(EveryNumberHalfASecond(), "Jobs/Encode", {"logical_id": "Q"}, None)  # type: ignore[arg-type]
    numbers = {k for k, v in marker.items() if isinstance(v, float)}
    # WHEN it is written in the template's own metadata THEN no number that is no integer is left (a field added to
    # the marker without adding it to SECONDS_FIELDS fails here, before cfn-lint fails a user's template) ...
    written = template_marker(marker)
    assert numbers == set(SECONDS_FIELDS) and [k for k, v in written.items() if isinstance(v, float)] == []
    # ... and it reads back as the marker on a resource does
    template = {"Metadata": {RESOURCE_MARKERS: {"Q": {QUEUE_MARKER: written}}}}
    assert resource_metadata(template)["Q"][QUEUE_MARKER] == marker


def test_a_number_in_the_template_s_markers_that_is_no_decimal_text_is_refused_naming_it() -> None:
    template = {"Metadata": {RESOURCE_MARKERS: {"Q": {QUEUE_MARKER: {"version": 1, "processing_p99_s": "fast"}}}}}
    with pytest.raises(ValueError, match=r"^marker field processing_p99_s: 'fast' is no number of seconds$"):
        resource_metadata(template)
    # the command says so in one line (an OpsError), naming the stack
    with pytest.raises(OpsError, match=r"^stack Jobs: marker field processing_p99_s: 'fast' is no number of seconds$"):
        discover_templates([StackTemplate("Jobs", template)])


def test_template_metadata_replaced_after_the_job_types_is_refused_at_synth_with_the_fix() -> None:
    # GIVEN a stack whose template metadata is set wholesale after a job queue was declared
    app = cdk.App()
    stack = cdk.Stack(app, "Jobs", env=ENV)
    JobQueue(stack, "Emails", lambda_timeout=Duration.seconds(30))
    stack.template_options.metadata = {"AWS::CloudFormation::Interface": {"ParameterGroups": []}}
    # WHEN it is synthesized THEN it is refused, naming what was lost and the fix: the command could not find the job
    # type in the deployed template
    with pytest.raises(RuntimeError, match=r"template_options\.metadata was replaced.*stack\.add_metadata"):
        app.synth()


def test_template_metadata_added_to_keeps_the_markers() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Jobs", env=ENV)
    JobQueue(stack, "Emails", lambda_timeout=Duration.seconds(30))
    stack.add_metadata("AWS::CloudFormation::Interface", {"ParameterGroups": []})
    template = app.synth().get_stack_by_name("Jobs").template
    assert {"AWS::CloudFormation::Interface", RESOURCE_MARKERS} <= set(template["Metadata"])
