"""The example app's stacks."""
