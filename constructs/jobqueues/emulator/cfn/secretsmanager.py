"""Secrets Manager: ``AWS::SecretsManager::Secret`` (moto has the service, not its CloudFormation type).

The secret is created in moto's Secrets Manager, so ``GetSecretValue`` reads it as in AWS, e.g. a worker of
``jobqueues local up`` given it through its container's ``Secrets``. ``GenerateSecretString`` makes the value
as Secrets Manager does (``GetRandomPassword`` with the same options, put under ``GenerateStringKey`` of
``SecretStringTemplate``); ``KmsKeyId`` is kept (moto does not encrypt). ``Ref`` is the ARN, as in CloudFormation.
"""

from __future__ import annotations

import json
from typing import Any, Self

from moto.cloudformation.exceptions import ValidationError
from moto.core.common_models import CloudFormationModel
from moto.secretsmanager.models import secretsmanager_backends

from jobqueues.emulator.cfn.handler import ArnHandler

#: ``GenerateSecretString``'s options -> ``GetRandomPassword``'s arguments, with Secrets Manager's defaults.
_PASSWORD_OPTIONS = {
    "PasswordLength": ("password_length", 32),
    "ExcludeCharacters": ("exclude_characters", ""),
    "ExcludeNumbers": ("exclude_numbers", False),
    "ExcludePunctuation": ("exclude_punctuation", False),
    "ExcludeUppercase": ("exclude_uppercase", False),
    "ExcludeLowercase": ("exclude_lowercase", False),
    "IncludeSpace": ("include_space", False),
    "RequireEachIncludedType": ("require_each_included_type", True),
}


class SecretsManagerSecret(ArnHandler, CloudFormationModel):
    """``AWS::SecretsManager::Secret``: ``SecretString``, or one made by ``GenerateSecretString``."""

    cfn_type = "AWS::SecretsManager::Secret"
    name_property = "Name"
    cfn_attributes = frozenset({"Id"})

    @classmethod
    def create(cls, name: str, properties: dict[str, Any], account_id: str, region_name: str) -> Self:
        backend = secretsmanager_backends[account_id][region_name]
        if "SecretString" in properties and "GenerateSecretString" in properties:
            raise ValidationError(message=f"{cls.cfn_type} {name}: SecretString and GenerateSecretString both given")
        value = properties.get("SecretString")
        if value is None:
            value = generated_secret_string(properties.get("GenerateSecretString", {}), backend)
        created = json.loads(
            backend.create_secret(
                name=name,
                secret_string=value,
                secret_binary=None,
                description=properties.get("Description"),
                tags=properties.get("Tags"),
                kms_key_id=properties.get("KmsKeyId"),
                client_request_token=None,
                replica_regions=properties.get("ReplicaRegions", []),
                force_overwrite=False,
            )
        )
        return cls(name, properties, account_id, region_name, created["ARN"])

    def delete(self, account_id: str, region_name: str) -> None:
        backend = secretsmanager_backends[account_id][region_name]
        backend.delete_secret(self.arn, recovery_window_in_days=None, force_delete_without_recovery=True)

    def attribute(self, name: str) -> Any:
        return self.arn  # "Id", the only attribute: the ARN


def generated_secret_string(options: dict[str, Any], backend: Any) -> str:
    """The value ``GenerateSecretString`` makes: a random password, alone or in ``SecretStringTemplate``."""
    unknown = sorted(set(options) - set(_PASSWORD_OPTIONS) - {"GenerateStringKey", "SecretStringTemplate"})
    if unknown:
        raise ValidationError(message=f"GenerateSecretString: {', '.join(unknown)} is not supported locally")
    if ("GenerateStringKey" in options) != ("SecretStringTemplate" in options):
        raise ValidationError(message="GenerateSecretString: GenerateStringKey and SecretStringTemplate go together")
    arguments = {argument: options.get(option, default) for option, (argument, default) in _PASSWORD_OPTIONS.items()}
    arguments["password_length"] = int(arguments["password_length"])
    for flag in ("exclude_numbers", "exclude_punctuation", "exclude_uppercase", "exclude_lowercase", "include_space"):
        arguments[flag] = str(arguments[flag]).lower() == "true"
    arguments["require_each_included_type"] = str(arguments["require_each_included_type"]).lower() == "true"
    password: str = json.loads(backend.get_random_password(**arguments))["RandomPassword"]
    if "GenerateStringKey" not in options:
        return password
    template = json.loads(options["SecretStringTemplate"])
    template[options["GenerateStringKey"]] = password
    return json.dumps(template)
