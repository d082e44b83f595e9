"""The command line's own options, before any command: what a new user types first."""
from conftest import run_cli as precisionprobe
from precisionprobe import __version__


def test_version_is_printed_as_other_tools_print_it():
    # Before, --version was answered "the following arguments are required: command" (status 2).
    result = precisionprobe("--version")
    assert result.stdout == f"python3 -m precisionprobe {__version__}\n" and result.stderr == ""
