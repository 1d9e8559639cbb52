"""sqslease: lease (visibility-timeout) management for SQS consumers.

``sqslease.rules`` holds the visibility-timeout rules shared with the ``jobqueues`` constructs and the
``jobstats`` pipeline; it imports nothing from AWS.
"""
