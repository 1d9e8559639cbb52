"""Compare deployed resources with their templates, property by property, where moto keeps the data.

:func:`check_resource` reads a resource back with boto3 and returns one line per property whose
value differs from the template's. Template values with intrinsics are resolved against the
stack's physical ids by :mod:`jobqueues.ops.intrinsics` (``Ref``, ``Fn::Join``, ``Fn::Sub``, a queue's
``Fn::GetAtt``, pseudo parameters); a value it cannot compute is not compared, except a queue's
``KmsMasterKeyId`` (a key's ARN, compared by the key's physical id). :data:`NOT_VERIFIABLE` says, per type,
what the emulator cannot show: properties moto drops and behaviour it does not emulate.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from jobqueues.emulator.deployed import DeployedStack
from jobqueues.emulator.server import LocalServer
from jobqueues.ops import intrinsics

#: What the post-deploy check cannot verify locally, per resource type (printed after a deploy).
NOT_VERIFIABLE: dict[str, str] = {
    "AWS::SQS::Queue": (
        "a stack deletion keeps Retain and RetainExceptOnCreate queues, but UpdateReplacePolicy is not emulated, "
        "and a new queue named like a retained one is not refused as CloudFormation does (AlreadyExists)"
    ),
    "AWS::Lambda::Function": (
        "LoggingConfig (the explicit log group), DeadLetterConfig, EphemeralStorage, SnapStart are dropped "
        "by moto, which never runs the code (`jobqueues local up` runs it through a local event-source driver, "
        "on the host's architecture, outside any VPC, without X-Ray or a concurrency limit); VpcConfig's "
        "security groups are compared by id, its VpcId is moto's placeholder"
    ),
    "AWS::Lambda::EventSourceMapping": (
        "a record only in moto: `jobqueues local up`'s local driver polls the queue and applies FilterCriteria; "
        "MetricsConfig produces no metric, ProvisionedPollerConfig and ScalingConfig scale nothing (one poller)"
    ),
    "AWS::ECS::Service": (
        "DeploymentConfiguration (circuit breaker, healthy percents), EnableECSManagedTags, "
        "HealthCheckGracePeriodSeconds are dropped; moto runs no task (`jobqueues local up` runs the workers as "
        "local processes), so no task lands on Spot, gets a public IP or takes an ECS Exec session"
    ),
    "AWS::ECS::TaskDefinition": (
        "the image is never pulled and no container runs: the architecture never runs code, and a secret's ARN is "
        "compared, not fetched (`jobqueues local up` gives its workers the secrets the emulator holds)"
    ),
    "AWS::ApplicationAutoScaling::ScalingPolicy": (
        "never acts; moto adds two CPUUtilization TargetTracking-* alarms for each ECS target-tracking policy"
    ),
    "AWS::CloudWatch::Alarm": "never evaluated (state stays OK)",
    "AWS::CloudWatch::Dashboard": "the body is stored, not compared (it is built from tokens) or rendered",
    "AWS::IAM::Role": "policies are stored but not enforced",
    "AWS::IAM::Policy": "stored but not enforced",
    "AWS::EC2::VPC": "no network exists: routes, NAT gateways and flow logs carry and deliver nothing",
    "AWS::EC2::FlowLog": "delivers nothing",
    "AWS::DynamoDB::Table": (
        "TTL never deletes an item (sqslease does not rely on it), point-in-time recovery keeps no backups, "
        "capacity and encryption cost nothing; IAM conditions (dynamodb:LeadingKeys) are not enforced"
    ),
    "AWS::SecretsManager::Secret": "its KmsKeyId is kept, not used (moto does not encrypt); no rotation, no replica",
    "AWS::S3::Bucket": (
        "lifecycle rules never expire an object, encryption and the TLS-only policy are not applied (moto stores "
        "objects in plain text and the emulator speaks plain HTTP), no access is refused"
    ),
}


class Unresolved:
    """A template value the check does not compute (``Fn::GetAtt``, ``Fn::Sub``, ...): it is not compared."""


UNRESOLVED = Unresolved()


def resolve(value: Any, stack: DeployedStack) -> Any:
    """``value`` with its intrinsics computed (:func:`jobqueues.ops.intrinsics.resolve`, the one resolver), else
    :data:`UNRESOLVED`."""
    try:
        return intrinsics.resolve(value, stack)
    except intrinsics.Unresolvable:
        return UNRESOLVED


def _normal(value: Any) -> Any:
    """Numbers and numeric strings as floats, so ``"30"``, ``30`` and ``30.0`` compare equal."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    return value


class Comparison:
    """Collects mismatches between template properties and what the emulator returns."""

    def __init__(self, properties: dict[str, Any], stack: DeployedStack) -> None:
        self.properties = properties
        self.stack = stack
        self.mismatches: list[str] = []
        self.compared = 0

    def expect(self, name: str, actual: Any, default: Any = None) -> None:
        """Compare property ``name`` (or ``default`` when the template omits it) with ``actual``."""
        self.expect_value(name, self.properties.get(name, default), actual)

    def expect_value(self, label: str, template_value: Any, actual: Any) -> None:
        """Compare a value taken from the template (resolved here) with ``actual``; skip it if absent."""
        expected = resolve(template_value, self.stack)
        if expected is None or expected is UNRESOLVED:
            return
        self.compared += 1
        if _normal(expected) != _normal(actual):
            self.mismatches.append(f"{label}: template {expected!r}, emulator {actual!r}")


Checker = Callable[[LocalServer, str, Comparison], None]


def _sqs_queue(server: LocalServer, physical_id: str, c: Comparison) -> None:
    a = server.client("sqs").get_queue_attributes(QueueUrl=physical_id, AttributeNames=["All"])["Attributes"]
    for name in ("VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "ReceiveMessageWaitTimeSeconds"):
        c.expect(name, a.get(name))
    c.expect("MaximumMessageSize", a.get("MaximumMessageSize"))
    c.expect("FifoQueue", a.get("FifoQueue", "false"), default=False)
    c.expect("ContentBasedDeduplication", a.get("ContentBasedDeduplication"))
    # FIFO high throughput: moto keeps both (camelCase values, as in the template).
    c.expect("DeduplicationScope", a.get("DeduplicationScope"))
    c.expect("FifoThroughputLimit", a.get("FifoThroughputLimit"))
    # One kind of encryption: SSE-KMS with the template's key, else SSE-SQS (on unless the template turns it off).
    c.expect(
        "SqsManagedSseEnabled", a.get("SqsManagedSseEnabled", "false"), default="KmsMasterKeyId" not in c.properties
    )
    c.expect_value(
        "KmsMasterKeyId", _kms_key(c.properties.get("KmsMasterKeyId"), c.stack), _kms_key(a.get("KmsMasterKeyId"))
    )
    c.expect("KmsDataKeyReusePeriodSeconds", a.get("KmsDataKeyReusePeriodSeconds"))
    # deadLetterTargetArn is an Fn::GetAtt, which cannot be resolved here; the receive count can.
    redrive = c.properties.get("RedrivePolicy")
    if redrive:
        actual = json.loads(a.get("RedrivePolicy", "{}"))
        c.expect_value("RedrivePolicy.maxReceiveCount", redrive.get("maxReceiveCount"), actual.get("maxReceiveCount"))


def _kms_key(value: Any, stack: DeployedStack | None = None) -> Any:
    """A queue's KMS key as the key id or alias, from a template value or an attribute; "none" when absent.

    The template's ``Fn::GetAtt [Key, Arn]`` resolves to the key's physical id (its key id); the queue
    reports what CloudFormation passed it (the ARN), compared by its key id.
    """
    if value is None or value == "":
        return "none"
    if isinstance(value, dict) and "Fn::GetAtt" in value and stack is not None:
        target = value["Fn::GetAtt"]
        logical_id, attribute = target.split(".", 1) if isinstance(target, str) else target
        return stack.physical_ids.get(logical_id, UNRESOLVED) if attribute == "Arn" else UNRESOLVED
    if stack is not None:
        value = resolve(value, stack)
    if isinstance(value, str) and ":key/" in value:
        return value.rsplit("/", 1)[-1]
    return value


def _secret(server: LocalServer, physical_id: str, c: Comparison) -> None:
    secret = server.client("secretsmanager").describe_secret(SecretId=physical_id)
    c.expect("Name", secret.get("Name"))
    c.expect("Description", secret.get("Description"))
    c.expect_value("KmsKeyId", _kms_key(c.properties.get("KmsKeyId"), c.stack), _kms_key(secret.get("KmsKeyId")))
    generate = c.properties.get("GenerateSecretString")
    if generate and generate.get("GenerateStringKey"):
        # The value generated: the template's fields, and the generated key (never its value) beside them.
        value = json.loads(server.client("secretsmanager").get_secret_value(SecretId=physical_id)["SecretString"])
        template = json.loads(generate.get("SecretStringTemplate", "{}"))
        c.expect_value("GenerateSecretString.SecretStringTemplate", template, {k: value.get(k) for k in template})
        key = generate["GenerateStringKey"]
        c.expect_value("GenerateSecretString.GenerateStringKey", key, key if key in value else None)
        c.expect_value(
            "GenerateSecretString.PasswordLength", generate.get("PasswordLength", 32), len(value.get(key, ""))
        )


def _lambda_function(server: LocalServer, physical_id: str, c: Comparison) -> None:
    response = server.client("lambda").get_function(FunctionName=physical_id)
    f = response["Configuration"]
    c.expect("Runtime", f.get("Runtime"))
    c.expect("Handler", f.get("Handler"))
    c.expect("Timeout", f.get("Timeout"), default=3)
    c.expect("MemorySize", f.get("MemorySize"), default=128)
    c.expect("Environment", {"Variables": f.get("Environment", {}).get("Variables", {})})
    c.expect("Layers", [layer["Arn"] for layer in f.get("Layers", [])], default=[])
    c.expect("Architectures", f.get("Architectures"))
    c.expect("ReservedConcurrentExecutions", response.get("Concurrency", {}).get("ReservedConcurrentExecutions"))
    c.expect("TracingConfig", f.get("TracingConfig"), default={"Mode": "PassThrough"})
    vpc = c.properties.get("VpcConfig")
    if vpc is not None:
        kept = f.get("VpcConfig") or {}
        subnets = _sorted(resolve(vpc.get("SubnetIds"), c.stack))
        c.expect_value("VpcConfig.SubnetIds", subnets, sorted(kept.get("SubnetIds", [])))
        groups = [_group_id(g, c.stack) for g in vpc.get("SecurityGroupIds", [])]
        c.expect_value("VpcConfig.SecurityGroupIds", _sorted(groups), sorted(kept.get("SecurityGroupIds", [])))


def _layer_version(server: LocalServer, physical_id: str, c: Comparison) -> None:
    # moto answers GetLayerVersionByArn with a 500; the ARN ends in ``layer:<name>:<version>``.
    name, version = physical_id.rsplit(":", 2)[1:]
    layer = server.client("lambda").get_layer_version(LayerName=name, VersionNumber=int(version))
    c.expect("CompatibleRuntimes", layer.get("CompatibleRuntimes"))
    c.expect("CompatibleArchitectures", layer.get("CompatibleArchitectures"))
    c.expect("Description", layer.get("Description"))


def _event_source_mapping(server: LocalServer, physical_id: str, c: Comparison) -> None:
    m = server.client("lambda").get_event_source_mapping(UUID=physical_id)
    c.expect("BatchSize", m.get("BatchSize"))
    c.expect("MaximumBatchingWindowInSeconds", m.get("MaximumBatchingWindowInSeconds"))
    c.expect("FunctionResponseTypes", m.get("FunctionResponseTypes"))
    c.expect("EventSourceArn", m.get("EventSourceArn"))
    c.expect("ScalingConfig", m.get("ScalingConfig"))
    c.expect("FilterCriteria", m.get("FilterCriteria"))
    c.expect("MetricsConfig", m.get("MetricsConfig"))
    c.expect("ProvisionedPollerConfig", m.get("ProvisionedPollerConfig"))
    # FunctionName may be a name or an ARN; the mapping reports the ARN.
    function = resolve(c.properties.get("FunctionName"), c.stack)
    if isinstance(function, str):
        c.expect_value("FunctionName", function.rsplit(":", 1)[-1], m["FunctionArn"].rsplit(":", 1)[-1])


def _group_id(value: Any, stack: DeployedStack) -> Any:
    """A security group id from the template: ``Fn::GetAtt [Group, GroupId]`` is the group's physical id."""
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        target = value["Fn::GetAtt"]
        logical_id, attribute = target.split(".", 1) if isinstance(target, str) else target
        return stack.physical_ids.get(logical_id, UNRESOLVED) if attribute == "GroupId" else UNRESOLVED
    return resolve(value, stack)


def _sorted(values: Any) -> Any:
    """``values`` resolved and sorted (the order of subnets and groups does not matter); unresolved stays so."""
    if not isinstance(values, list) or any(v is UNRESOLVED for v in values):
        return UNRESOLVED
    return sorted(values)


def _alarm(server: LocalServer, physical_id: str, c: Comparison) -> None:
    alarms = server.client("cloudwatch").describe_alarms(AlarmNames=[physical_id])["MetricAlarms"]
    if not alarms:
        c.mismatches.append("alarm not found")
        return
    a = alarms[0]
    for name in ("ComparisonOperator", "EvaluationPeriods", "Threshold", "DatapointsToAlarm", "TreatMissingData"):
        c.expect(name, a.get(name))
    for name in ("MetricName", "Namespace", "Statistic", "Period"):
        c.expect(name, a.get(name))
    if "Metrics" in c.properties:
        expected = [(q["Id"], q.get("Expression"), q.get("ReturnData", True)) for q in c.properties["Metrics"]]
        actual = [(q["Id"], q.get("Expression"), q.get("ReturnData", True)) for q in a.get("Metrics", [])]
        c.compared += 1
        if expected != actual:
            c.mismatches.append(f"Metrics (id, expression, return data): template {expected}, emulator {actual}")


def _scalable_target(server: LocalServer, physical_id: str, c: Comparison) -> None:
    resource_id, dimension, namespace = physical_id.split("|")
    targets = server.client("application-autoscaling").describe_scalable_targets(
        ServiceNamespace=namespace, ResourceIds=[resource_id], ScalableDimension=dimension
    )["ScalableTargets"]
    if not targets:
        c.mismatches.append("scalable target not found")
        return
    c.expect("MinCapacity", targets[0]["MinCapacity"])
    c.expect("MaxCapacity", targets[0]["MaxCapacity"])


def _scaling_policy(server: LocalServer, physical_id: str, c: Comparison) -> None:
    namespace = physical_id.split(":resource/", 1)[1].split("/", 1)[0]
    policies = server.client("application-autoscaling").describe_scaling_policies(ServiceNamespace=namespace)
    found = [p for p in policies["ScalingPolicies"] if p["PolicyARN"] == physical_id]
    if not found:
        c.mismatches.append("scaling policy not found")
        return
    p = found[0]
    c.expect("PolicyType", p["PolicyType"])
    c.expect("StepScalingPolicyConfiguration", p.get("StepScalingPolicyConfiguration"))
    c.expect("TargetTrackingScalingPolicyConfiguration", p.get("TargetTrackingScalingPolicyConfiguration"))


def _role(server: LocalServer, physical_id: str, c: Comparison) -> None:
    attached = server.client("iam").list_attached_role_policies(RoleName=physical_id)["AttachedPolicies"]
    arns = resolve(c.properties.get("ManagedPolicyArns", []), c.stack)
    if arns is not UNRESOLVED:  # the order of attachment does not matter
        c.expect_value("ManagedPolicyArns", sorted(arns), sorted(p["PolicyArn"] for p in attached))


def _log_group(server: LocalServer, physical_id: str, c: Comparison) -> None:
    groups = server.client("logs").describe_log_groups(logGroupNamePrefix=physical_id)["logGroups"]
    group = next((g for g in groups if g["logGroupName"] == physical_id), None)
    if group is None:
        c.mismatches.append("log group not found")
        return
    c.expect("RetentionInDays", group.get("retentionInDays"))


def _ecs_cluster(server: LocalServer, physical_id: str, c: Comparison) -> None:
    cluster = server.client("ecs").describe_clusters(clusters=[physical_id], include=["SETTINGS"])["clusters"][0]
    c.expect("ClusterSettings", [{"Name": s["name"], "Value": s["value"]} for s in cluster.get("settings", [])])


def _ecs_task_definition(server: LocalServer, physical_id: str, c: Comparison) -> None:
    t = server.client("ecs").describe_task_definition(taskDefinition=physical_id)["taskDefinition"]
    c.expect("Cpu", t.get("cpu"))
    c.expect("Memory", t.get("memory"))
    c.expect("NetworkMode", t.get("networkMode"))
    c.expect("RequiresCompatibilities", t.get("requiresCompatibilities"))
    c.expect("TaskRoleArn", t.get("taskRoleArn"))
    c.expect("ExecutionRoleArn", t.get("executionRoleArn"))
    c.expect("RuntimePlatform", _pascal(t.get("runtimePlatform")))
    containers = {d["name"]: d for d in t["containerDefinitions"]}
    for definition in c.properties.get("ContainerDefinitions", []):
        actual = containers.get(definition["Name"], {})
        for key, api_key in (("Image", "image"), ("Command", "command"), ("Essential", "essential")):
            c.expect_value(f"container {definition['Name']} {key}", definition.get(key), actual.get(api_key))
        for key, api_key in (("Environment", "environment"), ("Secrets", "secrets")):
            given = definition.get(key)
            if given is not None:
                c.expect_value(f"container {definition['Name']} {key}", _named(given, key), actual.get(api_key))
        log_driver = (definition.get("LogConfiguration") or {}).get("LogDriver")
        c.expect_value(
            f"container {definition['Name']} LogDriver", log_driver, actual.get("logConfiguration", {}).get("logDriver")
        )


def _ecs_service(server: LocalServer, physical_id: str, c: Comparison) -> None:
    cluster = physical_id.split(":service/", 1)[1].split("/")[0]
    s = server.client("ecs").describe_services(cluster=cluster, services=[physical_id])["services"][0]
    c.expect("DesiredCount", s.get("desiredCount"))
    c.expect("LaunchType", s.get("launchType"))
    c.expect("TaskDefinition", s.get("taskDefinition"))
    c.expect("PlatformVersion", s.get("platformVersion"))
    c.expect("CapacityProviderStrategy", _pascal(s.get("capacityProviderStrategy")) or None)
    c.expect("EnableExecuteCommand", s.get("enableExecuteCommand", False), default=False)
    c.expect("PropagateTags", s.get("propagateTags"), default="NONE")
    given = (c.properties.get("NetworkConfiguration") or {}).get("AwsvpcConfiguration", {})
    awsvpc = s.get("networkConfiguration", {}).get("awsvpcConfiguration", {})
    for key, api_key in (("Subnets", "subnets"), ("SecurityGroups", "securityGroups")):
        resolved = resolve(given.get(key), c.stack)
        if isinstance(resolved, list):
            c.expect_value(f"NetworkConfiguration {key}", sorted(resolved), sorted(awsvpc.get(api_key, [])))
    if given:
        c.expect_value(
            "NetworkConfiguration AssignPublicIp", given.get("AssignPublicIp", "DISABLED"), awsvpc.get("assignPublicIp")
        )


def _ecs_capacity_providers(server: LocalServer, physical_id: str, c: Comparison) -> None:
    cluster = server.client("ecs").describe_clusters(clusters=[physical_id])["clusters"][0]
    given = sorted(c.properties.get("CapacityProviders", []))
    c.expect_value("CapacityProviders", given, sorted(cluster.get("capacityProviders", [])))
    strategy = c.properties.get("DefaultCapacityProviderStrategy")
    if strategy is not None:
        c.expect_value(
            "DefaultCapacityProviderStrategy", strategy, _pascal(cluster.get("defaultCapacityProviderStrategy"))
        )


def _pascal(value: Any) -> Any:
    """The ECS API's camelCase keys as CloudFormation's PascalCase, recursively."""
    if isinstance(value, dict):
        return {k[:1].upper() + k[1:]: _pascal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_pascal(v) for v in value]
    return value


def _named(items: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """A container's ``Environment`` or ``Secrets`` in the API's shape (``name``, ``value`` / ``valueFrom``)."""
    if kind == "Secrets":
        return [{"name": item["Name"], "valueFrom": item["ValueFrom"]} for item in items]
    return [{"name": item["Name"], "value": item["Value"]} for item in items]


def _dashboard(server: LocalServer, physical_id: str, c: Comparison) -> None:
    # The body is built from tokens (Fn::Join of Refs and GetAtts): it is read back and parsed, not compared.
    json.loads(server.client("cloudwatch").get_dashboard(DashboardName=physical_id)["DashboardBody"])


def _flow_log(server: LocalServer, physical_id: str, c: Comparison) -> None:
    logs = server.client("ec2").describe_flow_logs(FlowLogIds=[physical_id])["FlowLogs"]
    if not logs:
        c.mismatches.append("flow log not found")
        return
    c.expect("TrafficType", logs[0].get("TrafficType"))
    c.expect("LogDestinationType", logs[0].get("LogDestinationType"), default="cloud-watch-logs")


def _dynamodb_table(server: LocalServer, physical_id: str, c: Comparison) -> None:
    dynamodb = server.client("dynamodb")
    table = dynamodb.describe_table(TableName=physical_id)["Table"]
    c.expect("KeySchema", table.get("KeySchema"))
    c.expect("AttributeDefinitions", table.get("AttributeDefinitions"))
    c.expect("BillingMode", table.get("BillingModeSummary", {}).get("BillingMode"), default="PROVISIONED")
    ttl = dynamodb.describe_time_to_live(TableName=physical_id)["TimeToLiveDescription"]
    spec = c.properties.get("TimeToLiveSpecification", {"Enabled": False})
    c.expect_value("TimeToLiveSpecification.Enabled", spec.get("Enabled"), ttl.get("TimeToLiveStatus") == "ENABLED")
    c.expect_value("TimeToLiveSpecification.AttributeName", spec.get("AttributeName"), ttl.get("AttributeName"))
    backups = dynamodb.describe_continuous_backups(TableName=physical_id)["ContinuousBackupsDescription"]
    recovery = backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"] == "ENABLED"
    c.expect_value(
        "PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled",
        c.properties.get("PointInTimeRecoverySpecification", {}).get("PointInTimeRecoveryEnabled", False),
        recovery,
    )
    sse = c.properties.get("SSESpecification", {})
    kept = table.get("SSEDescription", {})
    c.expect_value("SSESpecification.SSEEnabled", sse.get("SSEEnabled", False), kept.get("Status") == "ENABLED")
    c.expect_value(
        "SSESpecification.KMSMasterKeyId",
        _kms_key(sse.get("KMSMasterKeyId"), c.stack),
        _kms_key(kept.get("KMSMasterKeyArn")) if sse.get("KMSMasterKeyId") else "none",
    )


def _s3_bucket(server: LocalServer, physical_id: str, c: Comparison) -> None:
    s3 = server.client("s3")
    expected = (c.properties.get("BucketEncryption") or {}).get("ServerSideEncryptionConfiguration") or [{}]
    by_default = expected[0].get("ServerSideEncryptionByDefault", {})
    if by_default:
        rules = s3.get_bucket_encryption(Bucket=physical_id)["ServerSideEncryptionConfiguration"]["Rules"]
        actual = rules[0]["ApplyServerSideEncryptionByDefault"]
        c.expect_value("BucketEncryption.SSEAlgorithm", by_default.get("SSEAlgorithm"), actual.get("SSEAlgorithm"))
        c.expect_value(
            "BucketEncryption.KMSMasterKeyID",
            _kms_key(by_default.get("KMSMasterKeyID"), c.stack),
            _kms_key(actual.get("KMSMasterKeyID")),
        )
    template_rules = (c.properties.get("LifecycleConfiguration") or {}).get("Rules", [])
    if template_rules:
        kept = s3.get_bucket_lifecycle_configuration(Bucket=physical_id)["Rules"]
        for i, rule in enumerate(template_rules):
            actual_rule = kept[i] if i < len(kept) else {}
            c.expect_value(f"LifecycleConfiguration.Rules[{i}].Status", rule.get("Status"), actual_rule.get("Status"))
            c.expect_value(
                f"LifecycleConfiguration.Rules[{i}].ExpirationInDays",
                rule.get("ExpirationInDays"),
                actual_rule.get("Expiration", {}).get("Days"),
            )
    public_access = c.properties.get("PublicAccessBlockConfiguration")
    if public_access:
        actual_block = s3.get_public_access_block(Bucket=physical_id)["PublicAccessBlockConfiguration"]
        for name, value in public_access.items():
            c.expect_value(f"PublicAccessBlockConfiguration.{name}", value, actual_block.get(name))


CHECKERS: dict[str, Checker] = {
    "AWS::SQS::Queue": _sqs_queue,
    "AWS::Lambda::Function": _lambda_function,
    "AWS::Lambda::LayerVersion": _layer_version,
    "AWS::Lambda::EventSourceMapping": _event_source_mapping,
    "AWS::CloudWatch::Alarm": _alarm,
    "AWS::CloudWatch::Dashboard": _dashboard,
    "AWS::ApplicationAutoScaling::ScalableTarget": _scalable_target,
    "AWS::ApplicationAutoScaling::ScalingPolicy": _scaling_policy,
    "AWS::IAM::Role": _role,
    "AWS::Logs::LogGroup": _log_group,
    "AWS::ECS::Cluster": _ecs_cluster,
    "AWS::ECS::ClusterCapacityProviderAssociations": _ecs_capacity_providers,
    "AWS::ECS::TaskDefinition": _ecs_task_definition,
    "AWS::ECS::Service": _ecs_service,
    "AWS::EC2::FlowLog": _flow_log,
    "AWS::DynamoDB::Table": _dynamodb_table,
    "AWS::SecretsManager::Secret": _secret,
    "AWS::S3::Bucket": _s3_bucket,
}


def check_resource(
    server: LocalServer, resource_type: str, physical_id: str, properties: dict[str, Any], stack: DeployedStack
) -> tuple[int, list[str]]:
    """How many properties were compared, and the mismatches; (0, []) for a type without a checker."""
    checker = CHECKERS.get(resource_type)
    if checker is None:
        return 0, []
    comparison = Comparison(properties, stack)
    checker(server, physical_id, comparison)
    return comparison.compared, comparison.mismatches
