"""Rules for an ``EcsJob``'s deployment options, in plain values (no aws_cdk), beside the consumer rules of
:mod:`jobqueues.consumer_rules`. Each error names the prop, the value and the fix; the construct reads the props
into these values (:mod:`jobqueues.ecs_service_plan`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from jobqueues.consumer_contract import reserved_variable

#: The capacity providers of a Fargate service's strategy.
FARGATE_PROVIDERS = ("FARGATE", "FARGATE_SPOT")
#: Ranges AWS accepts in a capacity provider strategy (``CapacityProviderStrategyItem``).
WEIGHT_RANGE = (0, 1000)
BASE_RANGE = (0, 100_000)
#: The CPU architectures Fargate runs.
FARGATE_ARCHITECTURES = ("X86_64", "ARM64")
#: The least Fargate platform version that runs each architecture's Linux tasks on FARGATE_SPOT. Amazon ECS API
#: Reference, CapacityProviderStrategyItem: "FARGATE_SPOT supports Linux tasks with the X86_64 architecture on
#: platform version 1.3.0 or later. FARGATE_SPOT supports Linux tasks with the ARM64 architecture on platform
#: version 1.4.0 or later." (docs.aws.amazon.com/AmazonECS/latest/APIReference/API_CapacityProviderStrategyItem.html)
SPOT_PLATFORM_VERSIONS = {"X86_64": (1, 3, 0), "ARM64": (1, 4, 0)}
_STRATEGY_EXAMPLE = (
    "[ecs.CapacityProviderStrategy(capacity_provider='FARGATE', base=1, weight=1), "
    "ecs.CapacityProviderStrategy(capacity_provider='FARGATE_SPOT', weight=3)]"
)


@dataclass(frozen=True)
class ProviderShare:
    """One item of a capacity provider strategy, as given (``None``: not given; AWS then uses 0)."""

    capacity_provider: str
    weight: int | None
    base: int | None

    @property
    def places_tasks(self) -> bool:
        """A share with a weight or a base above 0 places tasks on its provider."""
        return bool(self.weight) or bool(self.base)


def check_capacity_providers(shares: Sequence[ProviderShare]) -> list[str]:
    """A Fargate service's capacity provider strategy: FARGATE or FARGATE_SPOT each at most once, weights and
    bases in AWS's ranges, one base at most, and some weight above 0."""
    prop = "capacity_provider_strategies"
    if not shares:
        return [
            f"{prop}=[] names no capacity provider: pass at least one, e.g. {_STRATEGY_EXAMPLE}, or leave it out "
            "(the FARGATE launch type)"
        ]
    errors = []
    for share in shares:
        if share.capacity_provider not in FARGATE_PROVIDERS:
            errors.append(
                f"{prop}: capacity_provider={share.capacity_provider!r} is not a Fargate capacity provider: name "
                "'FARGATE' or 'FARGATE_SPOT' (an EcsJob runs on Fargate)"
            )
        for field, value, (low, high) in (("weight", share.weight, WEIGHT_RANGE), ("base", share.base, BASE_RANGE)):
            if value is not None and not low <= value <= high:
                errors.append(
                    f"{prop}: {share.capacity_provider} {field}={value} is out of range: AWS takes {low}-{high:,}"
                )
    names = [share.capacity_provider for share in shares]
    for name in sorted({n for n in names if names.count(n) > 1}):
        errors.append(f"{prop} names {name} {names.count(name)} times: give each capacity provider once")
    with_base = [share.capacity_provider for share in shares if share.base]
    if len(with_base) > 1:
        errors.append(
            f"{prop}: {' and '.join(with_base)} both have a base; AWS allows a base on one capacity provider only: "
            "keep the base on FARGATE (the tasks that must not be reclaimed) and weights on the rest"
        )
    if not any(share.weight for share in shares):
        errors.append(
            f"{prop}: every weight is 0 (a weight left out is 0): tasks beyond the base are never placed; give a "
            f"weight of at least 1, e.g. {_STRATEGY_EXAMPLE}"
        )
    return errors


def platform_version_number(member: str) -> tuple[int, int, int] | None:
    """The version an ``ecs.FargatePlatformVersion`` member pins, ``"VERSION1_3"`` -> ``(1, 3, 0)``; ``None`` for
    ``LATEST`` (ECS's current Linux version, 1.4.0) or a name of another form."""
    match = re.fullmatch(r"VERSION(\d+)_(\d+)", member)
    return (int(match[1]), int(match[2]), 0) if match else None


def check_platform_version(member: str | None, cpu_architecture: str, shares: Sequence[ProviderShare]) -> list[str]:
    """A pinned Fargate platform version must run the tasks the strategy places on FARGATE_SPOT.

    :param member: the ``ecs.FargatePlatformVersion`` member's name; ``None``: not pinned (LATEST).
    :param cpu_architecture: the tasks' CPU architecture, ``"X86_64"`` or ``"ARM64"``.
    :param shares: the capacity provider strategy; empty: the FARGATE launch type.
    """
    pinned = platform_version_number(member) if member is not None else None
    needed = SPOT_PLATFORM_VERSIONS.get(cpu_architecture)
    spot = any(share.capacity_provider == "FARGATE_SPOT" and share.places_tasks for share in shares)
    if pinned is None or needed is None or not spot or pinned >= needed:
        return []
    return [
        f"platform_version=ecs.FargatePlatformVersion.{member} pins Fargate platform {_dotted(pinned)}, and "
        f"FARGATE_SPOT runs {cpu_architecture} Linux tasks on platform {_dotted(needed)} or later: pass "
        f"platform_version=ecs.FargatePlatformVersion.VERSION{needed[0]}_{needed[1]}, or leave it out (LATEST, "
        "1.4.0 for Linux)"
    ]


def _dotted(version: tuple[int, int, int]) -> str:
    return ".".join(str(part) for part in version)


def check_cpu_architecture(cpu_architecture: str) -> list[str]:
    """Fargate runs two CPU architectures."""
    if cpu_architecture in FARGATE_ARCHITECTURES:
        return []
    return [
        f"cpu_architecture={cpu_architecture!r} is not one Fargate runs: pass ecs.CpuArchitecture.X86_64 or "
        "ecs.CpuArchitecture.ARM64"
    ]


def variable_name_problem(name: str) -> str | None:
    """Why ECS would not give the container variable ``name`` as written, or ``None`` when it would.

    ECS's own check is RegisterTaskDefinition's "Environment variable name cannot be null or blank" (its API gives
    a ``KeyValuePair`` name no pattern). A name ECS takes may still not reach the process as written: the container
    gets ``NAME=VALUE`` entries, split at the first ``=``; and ECS's other way to pass variables, environment files,
    reads Docker's env-file format, which refuses a name with whitespace ("variable ... contains whitespaces"), as
    no shell can name one. So: not blank, no whitespace, no ``=``, no NUL.
    """
    if not name.strip():
        return (
            "it is blank, which ECS refuses (RegisterTaskDefinition: 'Environment variable name cannot be null or "
            "blank')"
        )
    if any(c.isspace() for c in name):
        return (
            "it contains whitespace, which ECS's environment files refuse in a name (Docker's env-file format) and no "
            "shell can name; a trailing space from a paste is invisible in the console"
        )
    if "=" in name:
        return (
            f"the container gets NAME=VALUE, split at the first '=', so the worker would see variable "
            f"{name.split('=', 1)[0]!r} instead"
        )
    if "\0" in name:
        return "it contains a NUL character, which ends a name in the container's environment"
    return None


def check_environment(environment: Collection[str], secrets: Collection[str]) -> list[str]:
    """The worker's own variables: names ECS passes as written, none sqslease or ECS sets, none both a variable
    and a secret."""
    errors = []
    for prop, names in (("environment", environment), ("secrets", secrets)):
        for name in names:
            problem = variable_name_problem(name)
            if problem is not None:
                errors.append(
                    f"{prop}[{name!r}] is not a variable name ECS passes as written: {problem}; rename it, e.g. "
                    f"{_variable_name(name)!r}"
                )
                continue
            why = reserved_variable(name)
            if why is not None:
                errors.append(f"{prop}[{name!r}] collides with a variable the worker reads: {why}")
    for name in sorted(set(environment) & set(secrets)):
        errors.append(
            f"{name!r} is in both environment and secrets: ECS refuses a container with one variable twice; keep "
            "it in secrets if its value is secret, else in environment"
        )
    return errors


def check_network(
    *,
    vpc_subnets: str | None,
    vpc: str | None,
    cluster: str | None,
    cluster_vpc: str | None,
    assign_public_ip: bool,
    private_subnets: Sequence[str],
) -> list[str]:
    """Where the tasks run: subnets of a VPC that is given (the cluster's, with a cluster of your own), and a
    public IP only in public subnets.

    :param vpc_subnets: the selection as given; ``None``: not given.
    :param vpc: the VPC given, by construct path; ``None``: not given.
    :param cluster: the cluster given, by construct path; ``None``: the default one.
    :param cluster_vpc: that cluster's VPC, by construct path, when it is not ``vpc``; ``None``: it is.
    :param private_subnets: the selected subnets that are not public, by construct path.
    """
    errors = []
    if vpc_subnets is not None and vpc is None:
        where = f"pass vpc=cluster.vpc with cluster={cluster}" if cluster is not None else "pass vpc= as well"
        errors.append(
            f"vpc_subnets={vpc_subnets} is given without vpc: a subnet selection picks subnets of a VPC; {where}"
        )
    if vpc is not None and cluster is not None and cluster_vpc is not None:
        errors.append(
            f"vpc={vpc} is not the VPC of cluster={cluster} ({cluster_vpc}): a service's tasks run in its "
            "cluster's VPC; pass vpc=cluster.vpc, or leave cluster out (the job then gets a cluster in vpc)"
        )
    if assign_public_ip and private_subnets:
        errors.append(
            f"assign_public_ip=True with vpc_subnets={vpc_subnets or 'the default (public subnets)'} selecting "
            f"private subnets ({', '.join(private_subnets)}): a public IP reaches the internet only from a public "
            "subnet; select public subnets (ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC)), or leave "
            "assign_public_ip out (private subnets reach SQS and ECR through a NAT gateway or VPC endpoints)"
        )
    return errors


def _variable_name(name: str) -> str:
    """A name ECS passes as written, close to ``name``: whitespace, ``=`` and NUL runs become ``_``."""
    return re.sub(r"[\s=\0]+", "_", name.strip()) or "MY_SETTING"
