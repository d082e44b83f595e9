"""The probe's handler for SIGTERM, which the program does not see.

SIGTERM (Kubernetes, Slurm, torchrun) ends a Python process at once by default: no atexit, so
the events still queued would be lost and no summary printed. Where the signal's action is the
default, the probe puts a handler there that writes the events, then ends the process by the
same signal, as the default would have. The program must not see it: frameworks decide by
signal.getsignal() whether to install their own graceful handler (Lightning does only over
SIG_DFL), and a handler that chains to the one it replaced (`prev = signal.signal(...)`, called
when callable) would call this one instead of its own way out. So while the probe is attached,
signal.getsignal() and signal.signal() report SIG_DFL where this handler is, and setting SIG_DFL
puts it back (a program that restores the default and re-raises gets its events written too).
A handler the program sets replaces it, as any handler replaces the default.
"""
import signal

_getsignal = signal.getsignal  # the real ones
_signal = signal.signal
_installed = {}  # signal number -> the probe's handler there


def _reported(signum, handler):
    return signal.SIG_DFL if handler is not None and handler == _installed.get(signum) else handler


def getsignal(signalnum):
    return _reported(signalnum, _getsignal(signalnum))


def set_handler(signalnum, handler):
    """signal.signal while the probe is attached (see the module doc)."""
    if handler == signal.SIG_DFL and signalnum in _installed:
        handler = _installed[signalnum]
    return _reported(signalnum, _signal(signalnum, handler))


getsignal.__doc__ = _getsignal.__doc__
set_handler.__name__ = set_handler.__qualname__ = "signal"


def install(handler, signals):
    """Puts handler on each of signals whose action is the default (main thread only; raises
    ValueError elsewhere); returns those it was put on."""
    put = []
    for signum in signals:
        try:
            if _getsignal(signum) == signal.SIG_DFL:
                _signal(signum, handler)
                _installed[signum] = handler
                put.append(signum)
        except OSError:
            pass
    if _installed:
        signal.getsignal, signal.signal = getsignal, set_handler
    return put


def to_default(signum):
    """The default action back on signum (the handler, running, so that a second signal ends the
    process at once)."""
    _signal(signum, signal.SIG_DFL)


def uninstall(handler):
    """Takes handler off where it still is, and gives signal its own functions back once no
    probe's handler is installed."""
    for signum, installed in list(_installed.items()):
        if installed == handler:
            del _installed[signum]
            try:
                if _getsignal(signum) == handler:
                    _signal(signum, signal.SIG_DFL)
            except (ValueError, OSError):  # detach() from another thread: leave it, it only closes
                pass
    if not _installed and signal.getsignal is getsignal:
        signal.getsignal, signal.signal = _getsignal, _signal
