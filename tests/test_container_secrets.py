"""`local up` gives a worker its container's secrets as ECS injects them, read from the emulator (moto_server over
HTTP): a Secrets Manager secret whole or one JSON key of it, an SSM parameter; a line for each it cannot read."""

from __future__ import annotations

import json
import uuid

from jobqueues.emulator.consumers.container_secrets import container_secrets
from jobqueues.emulator.deployed import DeployedStack
from jobqueues.emulator.server import LocalServer

ACCOUNT, REGION = "123456789012", "us-east-1"


def stack() -> DeployedStack:
    return DeployedStack(name="Jobs", account=ACCOUNT, region=REGION, template={"Resources": {}})


def test_each_secret_becomes_its_variable(local_aws: LocalServer) -> None:
    # GIVEN a secret (JSON), a plain one and a SecureString parameter in the emulator
    name = f"jobs/db-{uuid.uuid4().hex[:8]}"
    manager = local_aws.client("secretsmanager")
    arn = manager.create_secret(Name=name, SecretString=json.dumps({"password": "p4ss", "user": "jobs"}))["ARN"]
    plain = manager.create_secret(Name=f"{name}-token", SecretString="t0ken")["ARN"]
    parameter = f"/jobs/{uuid.uuid4().hex[:8]}"
    local_aws.client("ssm").put_parameter(Name=parameter, Value="s3cret", Type="SecureString")
    container = {
        "Secrets": [
            {"Name": "DB_PASSWORD", "ValueFrom": f"{arn}:password::"},
            {"Name": "TOKEN", "ValueFrom": plain},
            {"Name": "API_KEY", "ValueFrom": f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter{parameter}"},
        ]
    }
    # WHEN a worker's variables are read; THEN each holds what ECS would put there, and nothing is missing
    found = container_secrets(local_aws, stack(), container)
    assert found.values == {"DB_PASSWORD": "p4ss", "TOKEN": "t0ken", "API_KEY": "s3cret"}
    assert found.missing == []


def test_a_secret_the_emulator_lacks_gets_one_line_saying_how_to_create_it(local_aws: LocalServer) -> None:
    # GIVEN a secret without the JSON key asked for, a secret and a parameter the emulator does not hold
    arn = local_aws.client("secretsmanager").create_secret(
        Name=f"jobs/partial-{uuid.uuid4().hex[:8]}", SecretString=json.dumps({"user": "jobs"})
    )["ARN"]
    container = {
        "Secrets": [
            {"Name": "DB_PASSWORD", "ValueFrom": f"{arn}:password::"},
            {"Name": "LEGACY", "ValueFrom": f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:legacy/db-Ab12Cd"},
            {"Name": "API_KEY", "ValueFrom": f"arn:aws:ssm:{REGION}:{ACCOUNT}:parameter/jobs/absent"},
        ]
    }
    # WHEN read
    found = container_secrets(local_aws, stack(), container)
    # THEN none is set, and each line names the secret and the command that makes it
    assert found.values == {}
    endpoint = local_aws.endpoint
    assert found.missing == [
        f"secret DB_PASSWORD: Secrets Manager secret {arn.split(':')[6]} has no JSON key 'password', so DB_PASSWORD is "
        f"not set; put it there: aws --endpoint-url {endpoint} secretsmanager put-secret-value --secret-id {arn} "
        """--secret-string '{"password": "..."}'""",
        f"secret LEGACY: Secrets Manager secret legacy/db-Ab12Cd (arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:"
        f"legacy/db-Ab12Cd) is not in the emulator, so LEGACY is not set; create it: aws --endpoint-url {endpoint} "
        "secretsmanager create-secret --name legacy/db --secret-string ...",
        f"secret API_KEY: SSM parameter /jobs/absent is not in the emulator, so API_KEY is not set; create it: aws "
        f"--endpoint-url {endpoint} ssm put-parameter --name /jobs/absent --type SecureString --value '...'",
    ]
