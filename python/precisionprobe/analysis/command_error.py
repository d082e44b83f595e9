"""The error of a subcommand that the user can act on (cli.run prints it as one line)."""


class CommandError(RuntimeError):
    """A failure the user can act on; its message is printed as one line."""
