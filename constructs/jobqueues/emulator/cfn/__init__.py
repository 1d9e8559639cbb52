"""jobqueues' CloudFormation handlers for moto: one module per AWS service, one handler per resource type.

Each handler drives the same moto backend the service's API uses, so what is deployed reads back with boto3
(``describe_alarms``, ``describe_scalable_targets``, ``describe_services``, ...). :mod:`.registry` lists them.
"""
