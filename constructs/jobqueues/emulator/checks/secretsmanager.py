"""The post-deploy check of Secrets Manager secrets: name, description, key, and the generated value's shape."""

from __future__ import annotations

import json

from jobqueues.emulator.checks.comparison import Checker, Clients, Comparison, kms_key

NOT_VERIFIABLE: dict[str, str] = {
    "AWS::SecretsManager::Secret": "its KmsKeyId is kept, not used (moto does not encrypt); no rotation, no replica",
}


def _secret(server: Clients, physical_id: str, c: Comparison) -> None:
    secret = server.client("secretsmanager").describe_secret(SecretId=physical_id)
    c.expect("Name", secret.get("Name"))
    c.expect("Description", secret.get("Description"))
    c.expect_value("KmsKeyId", kms_key(c.properties.get("KmsKeyId"), c.stack), kms_key(secret.get("KmsKeyId")))
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


CHECKERS: dict[str, Checker] = {"AWS::SecretsManager::Secret": _secret}
