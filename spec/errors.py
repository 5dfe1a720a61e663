"""The one error type for bad input (exit code 2): a message that names what is wrong."""


class InputError(ValueError):
    """Input that the tool refuses: a bad flag value, a malformed file, an unknown name."""
