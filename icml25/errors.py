"""Errors a user can act on.

Every failure caused by user input (a bad parameter, a missing file, a checkpoint of the wrong kind) raises
:class:`UserError`. The CLI prints its message on one line to stderr and exits with status 2, without a
traceback; anything else is a bug and keeps its traceback.
"""


class UserError(Exception):
    """A problem with the user's input, reported as one clear line."""


class ValidationFailed(UserError):
    """A Great Expectations suite failed on a prepared data set."""
