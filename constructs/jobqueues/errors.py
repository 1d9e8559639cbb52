"""The one exception type of the construct library."""

from __future__ import annotations


class JobQueueError(ValueError):
    """A job type declaration that cannot be deployed.

    The message names the construct and lists every problem, each with the prop, the value given and the fix.
    """
