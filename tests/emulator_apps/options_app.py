#!/usr/bin/env python3
"""The deployment-options apps' stacks in one CDK app, deployed once to one emulator for
``tests/test_emulator_options.py``: the ECS options (``ecs_options_app``), the Lambda options
(``lambda_options_app``), the queue options (``queue_options_app``) and consumers in another stack than their job
queues (``cross_stack_app``). One deploy costs one synth, one bootstrap and one ``cdk deploy`` instead of one of
each per app.
"""

from __future__ import annotations

import sys
from pathlib import Path

import aws_cdk as cdk

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script: `emulator_apps` importable

from emulator_apps import cross_stack_app, ecs_options_app, lambda_options_app, queue_options_app

STACK_NAMES = (
    ecs_options_app.STACK_NAME,
    lambda_options_app.STACK_NAME,
    queue_options_app.STACK_NAME,
    *cross_stack_app.STACK_NAMES,
)


def build_app(app: cdk.App | None = None) -> cdk.App:
    app = app or cdk.App()
    for module in (ecs_options_app, lambda_options_app, queue_options_app, cross_stack_app):
        module.build_app(app)
    return app


if __name__ == "__main__":
    build_app().synth()
