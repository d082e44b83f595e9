"""Ctrl-C or SIGTERM during a refresh. SQLite runs the statement in C, where Python's signal
handlers do not run until the statement returns, and a refresh waiting for a silent Prometheus
returns only after timeout_ms per attempt, retries included: minutes (past Kubernetes' 30 s
grace period before SIGKILL). While the statement runs, a thread takes those signals instead and
interrupts the connection (sqlite3_interrupt), which the extension answers within about a
second; then KeyboardInterrupt follows for Ctrl-C as usual, and SIGTERM's own handler runs."""
import contextlib
import signal
import threading


@contextlib.contextmanager
def interrupts(conn):
    """Within the block, Ctrl-C (SIGINT) and SIGTERM interrupt conn's statement; when the block
    ends, KeyboardInterrupt is raised for Ctrl-C and SIGTERM's Python handler is called (the
    command's raises to end it), in place of the error the interrupted statement gave. Only in
    the main thread (where Python takes signals), and only for a signal Python handles: SIGINT
    while it raises KeyboardInterrupt, SIGTERM while a Python function handles it (by default it
    ends the process at once); a process that ignores one (a background job) is left so."""
    taken = set()
    if threading.current_thread() is threading.main_thread():
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            taken.add(signal.SIGINT)
        if callable(signal.getsignal(signal.SIGTERM)):
            taken.add(signal.SIGTERM)
    if not taken:
        yield
        return
    terminate = signal.getsignal(signal.SIGTERM)
    received, done = [], threading.Event()

    def take_signals():
        while not done.is_set():
            signum = signal.sigwait(taken)
            # (A signal as the block ends, once done is set, is dropped: the statement has
            # returned by then, and what it did stands, as it would a moment later.)
            if not done.is_set():
                received.append(signum)
                conn.interrupt()

    def deliver():
        if signal.SIGINT in received:
            raise KeyboardInterrupt from None
        terminate(signal.SIGTERM, None)

    previous = signal.pthread_sigmask(signal.SIG_BLOCK, taken)  # (the thread inherits it)
    taker = threading.Thread(target=take_signals, name="precisionprobe-signals", daemon=True)
    taker.start()
    try:
        yield
    except BaseException:
        if received:
            deliver()
        raise
    finally:
        done.set()
        signal.pthread_kill(taker.ident, min(taken))  # (ends its wait)
        taker.join()
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
    if received:
        deliver()
