"""Ctrl-C during a refresh. SQLite runs the statement in C, where Python's SIGINT handler does not
run until the statement returns, and a refresh waiting for a silent Prometheus returns only after
timeout_ms per attempt, retries included: minutes. While the statement runs, a thread takes SIGINT
instead and interrupts the connection (sqlite3_interrupt), which the extension answers within
about a second; KeyboardInterrupt then follows as usual."""
import contextlib
import signal
import threading


@contextlib.contextmanager
def interrupts(conn):
    """Within the block, Ctrl-C (SIGINT) interrupts conn's statement; KeyboardInterrupt is raised
    when the block ends, in place of the error the interrupted statement gave. Only in the main
    thread (where Python takes SIGINT) and while SIGINT raises KeyboardInterrupt: a process that
    ignores it (a background job) or handles it itself is left so."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler):
        yield
        return
    pressed, done = threading.Event(), threading.Event()

    def take_sigint():
        while not done.is_set():
            signal.sigwait({signal.SIGINT})
            # (A press as the block ends, once done is set, is dropped: the statement has
            # returned by then, and what it did stands, as it would a moment later.)
            if not done.is_set():
                pressed.set()
                conn.interrupt()

    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # (the thread inherits it)
    taker = threading.Thread(target=take_sigint, name="precisionprobe-ctrl-c", daemon=True)
    taker.start()
    try:
        yield
    except BaseException:
        if pressed.is_set():
            raise KeyboardInterrupt from None
        raise
    finally:
        done.set()
        signal.pthread_kill(taker.ident, signal.SIGINT)  # (ends its wait)
        taker.join()
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    if pressed.is_set():
        raise KeyboardInterrupt
