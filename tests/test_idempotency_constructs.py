"""``idempotency`` on LambdaJob, EcsJob and the bring-your-own binders: the stack's one table (on-demand, TTL,
point-in-time recovery, the job queue's KMS key), each consumer's grant confined to its own job type's keys, the
variables that turn the runtime on; cdk-nag AwsSolutions and cfn-lint clean; bad declarations refused at synth."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import Duration, RemovalPolicy, Validations
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk.assertions import Annotations, Match, Template
from cdk_helpers import ENV, lint_template, new_stack

from jobqueues import EcsJob, IdempotencyTable, JobQueue, JobQueueError, LambdaJob, deploy_time_availability_zones
from jobqueues.idempotency_table import ACTIONS, KEY_ACTIONS
from jobqueues.lambda_job import _without_redundant_role_dependency

ROOT = Path(__file__).resolve().parent.parent
HANDLERS = str(ROOT / "lambda_src" / "handlers")
REGISTRY_IMAGE = "public.ecr.aws/docker/library/python:3.14-slim"
TABLE = "SQSLEASE_IDEMPOTENCY_TABLE"
RETENTION = "SQSLEASE_IDEMPOTENCY_RETENTION_PERIOD"
TABLE_OPTION = "--idempotency-table"
RETENTION_OPTION = "--idempotency-retention-period"


def option(command: list[Any], name: str) -> Any:
    """The value an option is given in a worker's command (a reference is a dict)."""
    assert command.count(name) == 1, command
    return command[command.index(name) + 1]


class JobsStack(cdk.Stack):
    @property
    def availability_zones(self) -> list[str]:
        return deploy_time_availability_zones()


def lambda_job(stack: cdk.Stack, job_type: str, **props: Any) -> LambdaJob:
    code = lambda_.Code.from_asset(HANDLERS)
    return LambdaJob(stack, job_type, code=code, handler="thumbs.handle", timeout=Duration.seconds(30), **props)


def inline_function(stack: cdk.Stack, name: str) -> lambda_.Function:
    """A function of the user's: its own role (no managed policy) and log group."""
    role = iam.Role(stack, f"{name}Role", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
    log_group = logs.LogGroup(stack, f"{name}Logs", retention=logs.RetentionDays.ONE_WEEK)
    log_group.grant_write(role)
    function = lambda_.Function(
        stack,
        name,
        runtime=lambda_.Runtime.PYTHON_3_14,
        handler="app.handler",
        code=lambda_.Code.from_inline("def handler(e, c): pass"),
        timeout=Duration.seconds(30),
        role=role,
        log_group=log_group,
    )
    _without_redundant_role_dependency(function, role)  # cfn-lint W3005, as LambdaJob's own function
    return function


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Stack Jobs: a LambdaJob, an EcsJob and a JobQueue with a function of its own, idempotency=True each. Stack
    Secure: a LambdaJob with a KMS key, idempotency=True; a JobQueue whose own ECS service keeps its records in an
    IdempotencyTable of the user's, retained. cdk-nag on."""
    from cdk_nag import AwsSolutionsChecks

    out = tmp_path_factory.mktemp("cdk.out")
    app = cdk.App(outdir=str(out), context={"jobqueues:image": REGISTRY_IMAGE})
    jobs = JobsStack(app, "Jobs", env=ENV)
    orders = lambda_job(jobs, "Orders", idempotency=True, retention_period=Duration.days(2))
    invoices = EcsJob(jobs, "Invoices", handler="billing:handle", processing_p99=Duration.seconds(20), idempotency=True)
    emails = JobQueue(jobs, "Emails", lambda_timeout=Duration.seconds(30), idempotency=True)
    emails.add_lambda_consumer(inline_function(jobs, "EmailsFn"))

    secure = JobsStack(app, "Secure", env=ENV)
    key = kms.Key(secure, "Key", enable_key_rotation=True)
    payments = lambda_job(secure, "Payments", encryption_key=key, idempotency=True)
    own = IdempotencyTable(secure, "Ledger", removal_policy=RemovalPolicy.RETAIN)
    refunds = JobQueue(secure, "Refunds", processing_p99=Duration.seconds(20), lease_extension=True, idempotency=own)
    cluster = ecs.Cluster(secure, "Cluster", container_insights_v2=ecs.ContainerInsights.ENABLED)
    cluster.vpc.add_flow_log("All")
    task = ecs.FargateTaskDefinition(secure, "Task")
    task.add_container(
        "Worker",
        image=ecs.ContainerImage.from_registry(REGISTRY_IMAGE),
        command=refunds.worker_command("refunds:handle"),
        logging=ecs.LogDrivers.aws_logs(stream_prefix="refunds"),
    )
    refunds.add_ecs_consumer(ecs.FargateService(secure, "Service", cluster=cluster, task_definition=task))

    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    assembly = app.synth()  # raises on any unacknowledged cdk-nag finding
    return {
        "dir": Path(assembly.directory),
        "Jobs": assembly.get_stack_by_name("Jobs").template,
        "Secure": assembly.get_stack_by_name("Secure").template,
        "orders": orders,
        "invoices": invoices,
        "payments": payments,
        "own": own,
        "secure": secure,
        "jobs": jobs,
    }


def of_type(template: dict, kind: str) -> dict[str, dict]:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == kind}


def dynamodb_statements(template: dict) -> list[dict]:
    """Every IAM statement that names a DynamoDB action, with the policy's roles."""
    found = []
    for policy in of_type(template, "AWS::IAM::Policy").values():
        for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if any(a.startswith("dynamodb:") for a in actions):
                found.append({**statement, "Roles": policy["Properties"]["Roles"]})
    return found


def leading_keys(statement: dict) -> list[str]:
    return statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]  # type: ignore[no-any-return]


def test_true_makes_one_table_per_stack_for_all_its_job_types(synthesized: dict) -> None:
    # GIVEN three job types with idempotency=True in stack Jobs (a LambdaJob, an EcsJob, a brought function)
    # THEN the stack has one table: partition key pk (string), on-demand, TTL on ttl, PITR, AWS-managed encryption
    (table,) = of_type(synthesized["Jobs"], "AWS::DynamoDB::Table").values()
    props = table["Properties"]
    assert props["KeySchema"] == [{"AttributeName": "pk", "KeyType": "HASH"}]
    assert props["AttributeDefinitions"] == [{"AttributeName": "pk", "AttributeType": "S"}]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["TimeToLiveSpecification"] == {"AttributeName": "ttl", "Enabled": True}
    assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert props["SSESpecification"] == {"SSEEnabled": True}  # the AWS managed key: SSEType KMS, no key id
    assert (table["DeletionPolicy"], table["UpdateReplacePolicy"]) == ("Delete", "Delete")


def test_each_consumer_may_use_the_four_actions_on_its_own_keys_only(synthesized: dict) -> None:
    # GIVEN stack Jobs' three consumers
    statements = dynamodb_statements(synthesized["Jobs"])
    # THEN each has one statement: the four actions, on the table, its own job type's prefix and nothing else
    assert sorted(leading_keys(s)[0] for s in statements) == ["Emails#*", "Invoices#*", "Orders#*"]
    (table_id,) = of_type(synthesized["Jobs"], "AWS::DynamoDB::Table")
    for statement in statements:
        assert sorted(statement["Action"]) == sorted(ACTIONS)
        assert statement["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}
        assert len(leading_keys(statement)) == 1
        assert set(statement["Condition"]) == {"ForAllValues:StringLike"}
    # ... and no consumer's role holds another's prefix: Orders' role has Orders#* only
    roles = {leading_keys(s)[0]: json.dumps(s["Roles"]) for s in statements}
    assert len(set(roles.values())) == 3


def test_a_consumer_of_one_job_type_cannot_touch_anothers_keys(synthesized: dict) -> None:
    # GIVEN the Orders consumer's condition, evaluated as IAM does for ForAllValues:StringLike on LeadingKeys
    from fnmatch import fnmatchcase

    (orders,) = [s for s in dynamodb_statements(synthesized["Jobs"]) if leading_keys(s) == ["Orders#*"]]

    def allowed(partition_key: str) -> bool:  # one item's request: its one leading key must match a pattern
        return any(fnmatchcase(partition_key, pattern) for pattern in leading_keys(orders))

    # THEN its own records are allowed, Invoices' and a prefix-sharing job type's ("OrdersArchive") are not
    assert allowed("Orders#msg-1") and allowed("Orders#order-42")
    assert not allowed("Invoices#msg-1") and not allowed("OrdersArchive#msg-1") and not allowed("Orders")


def test_the_consumers_get_the_table_and_the_retention(synthesized: dict) -> None:
    template = synthesized["Jobs"]
    (table_id,) = of_type(template, "AWS::DynamoDB::Table")
    functions = {
        r["Properties"]["Environment"]["Variables"]["SQSLEASE_JOB_TYPE"]: r["Properties"]["Environment"]["Variables"]
        for r in of_type(template, "AWS::Lambda::Function").values()
        if "SQSLEASE_JOB_TYPE" in r["Properties"].get("Environment", {}).get("Variables", {})
    }
    # THEN the LambdaJob and the brought function read the table; COMPLETED records outlive both queues: the DLQ's
    # 14 days is the longer retention
    for job_type in ("Orders", "Emails"):
        assert functions[job_type][TABLE] == {"Ref": table_id}
        assert functions[job_type][RETENTION] == "1209600"
    # ... and the ECS worker has them as options of its command, with everything else it is told (no variables)
    (definition,) = of_type(template, "AWS::ECS::TaskDefinition").values()
    (container,) = definition["Properties"]["ContainerDefinitions"]
    assert option(container["Command"], TABLE_OPTION) == {"Ref": table_id}
    assert option(container["Command"], RETENTION_OPTION) == "1209600"
    assert "Environment" not in container


def test_a_job_queues_kms_key_encrypts_its_table_and_the_consumer_may_use_it(synthesized: dict) -> None:
    template = synthesized["Secure"]
    tables = of_type(template, "AWS::DynamoDB::Table")
    (key_id,) = of_type(template, "AWS::KMS::Key")
    # THEN Payments' table (the stack's, for its key) is encrypted with the queue's key
    (encrypted,) = [t for t in tables.values() if "KMSMasterKeyId" in t["Properties"]["SSESpecification"]]
    assert encrypted["Properties"]["SSESpecification"] == {
        "KMSMasterKeyId": {"Fn::GetAtt": [key_id, "Arn"]},
        "SSEEnabled": True,
        "SSEType": "KMS",
    }
    # ... and its consumer may use the key for DynamoDB, without wildcards
    payments_role = synthesized["secure"].resolve(synthesized["payments"].function.role.role_name)
    key_actions: set[str] = set()
    for policy in of_type(template, "AWS::IAM::Policy").values():
        if payments_role in policy["Properties"]["Roles"]:
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                if statement["Resource"] == {"Fn::GetAtt": [key_id, "Arn"]}:
                    key_actions.update(statement["Action"])
    assert set(KEY_ACTIONS) <= key_actions
    assert not any("*" in action for action in key_actions)


def test_a_table_of_ones_own_is_used_as_given_and_its_removal_policy_kept(synthesized: dict) -> None:
    template = synthesized["Secure"]
    own_id = synthesized["secure"].get_logical_id(synthesized["own"].table.node.default_child)
    own = template["Resources"][own_id]
    assert (own["DeletionPolicy"], own["UpdateReplacePolicy"]) == ("Retain", "Retain")
    # THEN the brought ECS service's worker command names the table, and its task role has the grant on Refunds#*
    (definition,) = of_type(template, "AWS::ECS::TaskDefinition").values()
    (container,) = definition["Properties"]["ContainerDefinitions"]
    assert option(container["Command"], TABLE_OPTION) == {"Ref": own_id}
    (refunds,) = [s for s in dynamodb_statements(template) if leading_keys(s) == ["Refunds#*"]]
    assert refunds["Resource"] == {"Fn::GetAtt": [own_id, "Arn"]}


@pytest.mark.parametrize("stack", ["Jobs", "Secure"])
def test_the_templates_are_cfn_lint_clean(synthesized: dict, stack: str) -> None:
    template_file = synthesized["dir"] / f"{stack}.template.json"
    findings = [f"{m.rule.id} {m.message}" for m in lint_template(template_file)]
    assert findings == []


# --- bad declarations ----------------------------------------------------------------------------------------------
def test_a_job_type_with_the_key_separator_is_refused_by_the_naming_rule() -> None:
    # a job type with '#' could reach another's keys ('A#B#x' matches 'A#*'): names never have one
    with pytest.raises(JobQueueError, match=r"job type 'Orders#EU' may only contain letters, digits, '-' and '_'"):
        JobQueue(new_stack(), "Orders#EU", processing_p99=Duration.seconds(3), idempotency=True)


@pytest.mark.parametrize(("value", "kind"), [("yes", "a str"), (1, "an int"), ({"table": "ids"}, "a dict")])
def test_a_value_that_is_no_bool_and_no_table_is_refused(value: object, kind: str) -> None:
    with pytest.raises(JobQueueError) as raised:
        lambda_job(new_stack(), "Orders", idempotency=value)
    message = str(raised.value)
    assert message.startswith("LambdaJob Test/Orders cannot be deployed:")
    assert f"idempotency={value!r} is {kind}, not a bool or a table: pass True (the stack's table)" in message


def test_a_table_with_another_key_schema_is_refused() -> None:
    stack = new_stack()
    table = dynamodb.Table(
        stack,
        "Orders",
        partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.NUMBER),
        sort_key=dynamodb.Attribute(name="at", type=dynamodb.AttributeType.STRING),
    )
    with pytest.raises(JobQueueError) as raised:
        EcsJob(stack, "Billing", handler="billing:handle", processing_p99=Duration.seconds(3), idempotency=table)
    message = str(raised.value)
    assert "idempotency=Test/Orders: its partition key is 'id' (NUMBER), the records' is 'pk' (STRING)" in message
    assert "it has TTL off" in message
    assert "idempotency=Test/Orders: it has a sort key 'at'" in message
    assert "or a table with partition key 'pk' of type STRING and no sort key" in message


def test_a_table_v2_and_a_ttl_on_another_attribute_are_checked_too() -> None:
    # GIVEN a TableV2 (what the CDK now recommends) keyed wrongly, and a Table keyed right whose TTL is elsewhere
    stack = new_stack()
    v2 = dynamodb.TableV2(
        stack,
        "Ledger",
        partition_key=dynamodb.Attribute(name="id", type=dynamodb.AttributeType.NUMBER),
        sort_key=dynamodb.Attribute(name="at", type=dynamodb.AttributeType.STRING),
        time_to_live_attribute="ttl",
    )
    expires = dynamodb.Table(
        stack,
        "Expires",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        time_to_live_attribute="expires",
    )
    # WHEN each is a job type's idempotency table; THEN each is refused with the fix
    with pytest.raises(JobQueueError) as raised:
        EcsJob(stack, "Billing", handler="billing:handle", processing_p99=Duration.seconds(3), idempotency=v2)
    assert "idempotency=Test/Ledger: its partition key is 'id' (NUMBER), the records' is 'pk' (STRING)" in str(
        raised.value
    )
    assert "it has a sort key 'at'" in str(raised.value) and "TTL" not in str(raised.value)
    with pytest.raises(JobQueueError, match=r"it has TTL on 'expires'.*time_to_live_attribute='ttl'"):
        JobQueue(stack, "Audit", processing_p99=Duration.seconds(3), idempotency=expires)
    # ... and a table keyed and expiring as the records are is taken as given
    right = dynamodb.Table(
        stack,
        "Right",
        partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
        time_to_live_attribute="ttl",
    )
    JobQueue(stack, "Refunds", processing_p99=Duration.seconds(3), idempotency=right)


def test_an_imported_table_is_taken_unchecked_and_granted() -> None:
    stack = new_stack()
    table = dynamodb.Table.from_table_name(stack, "Shared", "shared-idempotency")
    queue = JobQueue(stack, "Orders", lambda_timeout=Duration.seconds(30), idempotency=table)
    queue.add_lambda_consumer(inline_function(stack, "Fn"))
    template = Template.from_stack(stack).to_json()
    (statement,) = dynamodb_statements(template)
    assert leading_keys(statement) == ["Orders#*"]
    assert queue.consumer_contract().environment()[TABLE] == "shared-idempotency"


def test_a_bad_removal_policy_of_an_own_table_is_refused() -> None:
    with pytest.raises(JobQueueError, match=r"IdempotencyTable Test/Ids cannot be deployed:\n  - removal_policy="):
        IdempotencyTable(new_stack(), "Ids", removal_policy="retain")  # type: ignore[arg-type]


def test_a_brought_ecs_service_without_a_default_container_is_refused() -> None:
    stack = new_stack()
    queue = JobQueue(stack, "Render", processing_p99=Duration.seconds(30), lease_extension=True, idempotency=True)
    cluster = ecs.Cluster(stack, "Cluster", vpc=cdk.aws_ec2.Vpc(stack, "Vpc", availability_zones=["us-east-1a"]))
    task = ecs.FargateTaskDefinition(stack, "Task")
    task.add_container("Sidecar", image=ecs.ContainerImage.from_registry(REGISTRY_IMAGE), essential=False)
    service = ecs.FargateService(stack, "Service", cluster=cluster, task_definition=task)
    with pytest.raises(JobQueueError, match=r"go to the task definition's default container, and Test/Task has none"):
        queue.add_ecs_consumer(service)


# --- the plan path -------------------------------------------------------------------------------------------------
def test_the_plan_carries_idempotency_and_the_queue_builds_the_stacks_table_from_it() -> None:
    from jobqueues import QueueDeclaration, plan_job_queue

    # GIVEN a plan of a declaration with idempotency, made apart from any construct
    plan = plan_job_queue(QueueDeclaration(job_type="Orders", processing_p99=3, idempotency=True))
    assert plan.idempotency is True and plan.errors == []
    # WHEN a JobQueue is built from it
    stack = new_stack()
    queue = JobQueue(stack, "Orders", plan=plan)
    # THEN it has the stack's table, and its contract the runtime's settings: retention the DLQ's 14 days
    assert queue.idempotency_table is not None
    assert stack.node.find_child("IdempotencyTable").node.find_child("Table").node.default_child is not None
    settings = queue.consumer_contract().idempotency
    assert settings is not None and settings.retention_period == 1_209_600
    assert plan_job_queue(QueueDeclaration(job_type="Orders", processing_p99=3)).idempotency is None


def test_a_table_without_the_queues_kms_key_is_a_warning_naming_the_fix() -> None:
    # GIVEN a job queue encrypted with its own key, and a table of one's own without it
    stack = new_stack()
    key = kms.Key(stack, "Key", enable_key_rotation=True)
    own = IdempotencyTable(stack, "Ids")
    # WHEN the job queue takes that table
    JobQueue(stack, "Payments", processing_p99=Duration.seconds(3), encryption_key=key, idempotency=own)
    # THEN a warning says its records are not under the queue's key, and how to put them there
    warnings = Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("idempotency-table-key"))
    assert len(warnings) == 1 and "encryption_key=<the queue's key>" in warnings[0].entry.data
    # ... and a table with the key, or the stack's own (idempotency=True), gives none
    keyed = IdempotencyTable(stack, "Keyed", encryption_key=key)
    JobQueue(stack, "Refunds", processing_p99=Duration.seconds(3), encryption_key=key, idempotency=keyed)
    JobQueue(stack, "Chargebacks", processing_p99=Duration.seconds(3), encryption_key=key, idempotency=True)
    assert len(Annotations.from_stack(stack).find_warning("*", Match.string_like_regexp("idempotency-table-key"))) == 1
