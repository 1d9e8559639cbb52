"""What the ``jobqueues`` command does, without the command: find the deployed job types, read their state,
inspect and redrive their DLQs, send jobs, compare the deployment with jobstats' recommendations.

Plain boto3; no ``aws_cdk`` import (an operator's machine needs no Node), no ``click``.
"""
