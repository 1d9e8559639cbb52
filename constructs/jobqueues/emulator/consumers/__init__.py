"""A deployed app's consumers run locally (``jobqueues local up``), against the embedded emulator.

- :mod:`.scaler`: how many workers an ECS job type runs (the deployed scaling policy, as a pure function);
- :mod:`.ecs_workers`: an ECS job's tasks as local worker processes, from the deployed task definition;
- :mod:`.lambdas`: a Lambda job's function through the event-source driver (:mod:`jobqueues.emulator.lambda_driver`);
- :mod:`.log_shipper`: the consumers' output to the emulator's CloudWatch Logs and to local files;
- :mod:`.runner`: all of them together, ticked by the command.
"""
