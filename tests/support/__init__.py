"""Shared by the sqslease tests and ``bench/``: one module per concern.

- :mod:`support.fakes`: a scripted SQS client, a clock and a Lambda context for deterministic unit tests;
- :mod:`support.sqs_errors`: SQS's error responses, as the service sends them and as botocore raises them;
- :mod:`support.moto_queues`: fresh queues on the local moto_server, sending, receiving, counting;
- :mod:`support.recording`: every SQS call a real boto3 client makes, with its parameters;
- :mod:`support.waiting`: polling for a condition, with a bound;
- :mod:`support.worker_threads` and :mod:`support.worker_processes`: workers in this process or as
  ``python -m sqslease.worker``;
- :mod:`support.fault_proxy`: an HTTP proxy that throttles, fails, delays or holds SQS requests;
- :mod:`support.thief`: a second consumer that takes whatever becomes visible;
- :mod:`support.not_aws`: a reachable endpoint that is not AWS (a web page, an empty 404, XML or JSON no AWS API
  answers, a closed connection, no answer at all);
- :mod:`support.lambda_events`: Lambda's SQS event and context;
- :mod:`support.emf`: reading the EMF lines a consumer wrote.

``tests/`` is on ``sys.path`` (pytest's rootdir conftest; ``bench/`` scripts add it), so ``import support.x``.
"""
