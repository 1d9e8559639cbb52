"""A container's ``Secrets`` as ECS injects them when a task starts, read from the emulator for `local up`.

Each ``{"Name", "ValueFrom"}`` becomes variable ``Name``: a Secrets Manager secret's ``SecretString`` (or one
JSON key of it, ``<arn>:<json-key>:<version-stage>:<version-id>``), or an SSM parameter's value, decrypted. A
secret the emulator does not hold (one the app imports, made elsewhere) leaves its variable unset, with one line
that names it and says how to create it in the emulator.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from jobqueues.emulator.deployed import DeployedError, DeployedStack
from jobqueues.emulator.server import Emulator

# A Secrets Manager ARN has 7 colon-separated parts; ECS's ValueFrom may add json-key, version-stage, version-id.
_ARN_PARTS = 7


@dataclass
class ContainerSecrets:
    """The secrets' variables that could be read, and one line per secret that could not."""

    values: dict[str, str] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)


def container_secrets(emulator: Emulator, stack: DeployedStack, container: dict[str, Any]) -> ContainerSecrets:
    """Read each of ``container``'s ``Secrets`` from the emulator (see the module docstring)."""
    found = ContainerSecrets()
    for secret in container.get("Secrets", []):
        name = str(secret["Name"])
        try:
            value_from = str(stack.resolve(secret["ValueFrom"]))
        except DeployedError as error:
            found.missing.append(f"secret {name}: its ValueFrom cannot be computed locally ({error}): not set")
            continue
        reader = _parameter if ":ssm:" in value_from or not value_from.startswith("arn:") else _secret
        value, problem = reader(emulator, name, value_from)
        if value is not None:
            found.values[name] = value
        else:
            found.missing.append(problem)
    return found


def _secret(emulator: Emulator, name: str, value_from: str) -> tuple[str | None, str]:
    parts = value_from.split(":")
    arn, (json_key, stage, version) = ":".join(parts[:_ARN_PARTS]), [*parts[_ARN_PARTS:], "", "", ""][:3]
    client = emulator.client("secretsmanager")
    secret_name = parts[6] if len(parts) > 6 else arn
    options = {k: v for k, v in (("VersionStage", stage), ("VersionId", version)) if v}
    string = None
    # The ARN; else the name without its suffix: a secret created by name in the emulator has another suffix.
    for secret_id in dict.fromkeys([arn, _bare_name(secret_name)]):
        try:
            string = client.get_secret_value(SecretId=secret_id, **options).get("SecretString", "")
            break
        except client.exceptions.ResourceNotFoundException:
            continue
    if string is None:
        example = json.dumps({json_key: "..."}) if json_key else "..."
        return None, (
            f"secret {name}: Secrets Manager secret {secret_name} ({value_from}) is not in the emulator, so {name} "
            f"is not set; create it: aws --endpoint-url {emulator.endpoint} secretsmanager create-secret --name "
            f"{shlex.quote(_bare_name(secret_name))} --secret-string {shlex.quote(example)}"
        )
    if not json_key:
        return string, ""
    try:
        return str(json.loads(string)[json_key]), ""
    except (ValueError, KeyError, TypeError):
        return None, (
            f"secret {name}: Secrets Manager secret {secret_name} has no JSON key {json_key!r}, so {name} is not set; "
            f"put it there: aws --endpoint-url {emulator.endpoint} secretsmanager put-secret-value --secret-id "
            f"{shlex.quote(arn)} --secret-string {shlex.quote(json.dumps({json_key: '...'}))}"
        )


def _parameter(emulator: Emulator, name: str, value_from: str) -> tuple[str | None, str]:
    # ValueFrom is the parameter's ARN (arn:...:parameter/NAME, NAME without its leading "/") or its name.
    parameter = "/" + value_from.split(":parameter/", 1)[1] if ":parameter/" in value_from else value_from
    client = emulator.client("ssm")
    for candidate in dict.fromkeys([parameter, parameter.lstrip("/")]):
        try:
            return str(client.get_parameter(Name=candidate, WithDecryption=True)["Parameter"]["Value"]), ""
        except client.exceptions.ParameterNotFound:
            continue
    return None, (
        f"secret {name}: SSM parameter {parameter} is not in the emulator, so {name} is not set; create it: "
        f"aws --endpoint-url {emulator.endpoint} ssm put-parameter --name {shlex.quote(parameter)} --type "
        "SecureString --value '...'"
    )


def _bare_name(secret_name: str) -> str:
    """A secret's name without the 6-character suffix Secrets Manager adds to its ARN (``render/db-AbCdEf``); a
    suffix is told from a name's last word by its mixed case or digits (``my-secret`` keeps its name)."""
    head, _, suffix = secret_name.rpartition("-")
    generated = len(suffix) == 6 and suffix.isalnum() and not suffix.islower() and not suffix.isupper()
    return head if head and generated else secret_name
