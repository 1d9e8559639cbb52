"""The embedded local AWS: moto_server with the CloudFormation handlers jobqueues needs, and a deploy CLI."""
