"""The one kind of error this package raises on bad input: a one-line reason, the library's exception behind it."""


class Refused(Exception):
    """Bad input, said in one line (no program prefix: each front end adds its own). `cause` is the library
    exception behind it, whose traceback a --verbose run prints."""

    def __init__(self, message, cause=None):
        super().__init__(message)
        self.cause = cause
