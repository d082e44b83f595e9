"""What a path is, as messages name it ("a named pipe", "a character device"): a message that
says "a file" of /dev/null or of a pipe misleads."""
import os
import stat

_KINDS = ((stat.S_ISREG, "a file"), (stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISSOCK, "a socket"))


def kind(mode):
    """What an os.stat mode is."""
    return next((name for test, name in _KINDS if test(mode)), "neither a file nor a directory")


def kind_of(path):
    """What path is (a link followed), or None where nothing is there."""
    try:
        return kind(os.stat(path).st_mode)
    except OSError:
        return None
