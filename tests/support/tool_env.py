"""Settings the test run gives the tools it starts (CDK's synth, Spark's JVMs): what they cost, not what they check.

``tests/conftest.py`` puts :data:`TEST_ENV` in the environment of every test process, so that each app synthesized in
process or by a ``cdk`` CLI, and each JVM a test starts, inherits it. Measured on the 2-core machine
(docs/testing.md, "How long it takes"):

- ``CDK_VALIDATION=false``: aws-cdk-lib 2.275's built-in CloudFormation validation starts its rule engine in each
  process that synthesizes, about 2.5 s of CPU, and the suite synthesizes in some 60 processes. Every template a test
  synthesizes is checked by cfn-lint (a superset of the schema checks) and cdk-nag instead;
  ``tests/test_cdk_validation.py`` runs the built-in validation itself on the example app and on a new team's app.
- ``-XX:TieredStopAtLevel=1 -XX:+UseSerialGC`` for Spark's JVMs (the session's, spark-submit's, a cluster's): the
  tests' inputs are small, so the optimizing compiler's threads cost more CPU than they save (about a third of a
  JVM's CPU), and so do G1's concurrent collector threads (five jobstats test files: 34.4 s of CPU against 28.9 s,
  medians of three alternating runs).
"""

from __future__ import annotations

#: Java options for every JVM a test starts: the client compiler only, and the serial collector.
TEST_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

#: Environment variables of the test run (set only where the environment does not already set them).
TEST_ENV = {
    "CDK_VALIDATION": "false",
    "SPARK_SUBMIT_OPTS": TEST_JVM_OPTIONS,  # spark-submit's JVM: a local session's and a submitted driver's
    "SPARK_DAEMON_JAVA_OPTS": TEST_JVM_OPTIONS,  # a standalone cluster's master and workers
}
