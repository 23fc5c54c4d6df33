"""What every live training run shares: one torch thread, and Kernel > Interrupt as "stop here".

``one_thread()``: torch runs on one thread inside the block, so float sums come in the
same order every time (the same seed gives the same numbers, bit for bit) and no
threads spin after it.

``stop_on_sigint(True)``: while the block runs, SIGINT only sets ``stop.requested``;
the training loop reads it after every step, finishes the step under way and returns
what it trained. ipykernel ignores SIGINT outside its own handlers, so a plain
KeyboardInterrupt may never come: the run listens for the signal itself. Only the
main thread can; elsewhere no signal arrives and nothing is installed.
"""

from __future__ import annotations

import contextlib
import signal
import threading

import torch


@contextlib.contextmanager
def one_thread():
    """Run torch on one thread inside the block: the same float sums every time, and no spinning threads after."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class StopRequest:
    """Set by the SIGINT handler of an interruptible run; the loop reads it after every step."""

    requested = False


@contextlib.contextmanager
def stop_on_sigint(enabled: bool):
    """While the block runs, SIGINT only asks the loop to stop (main thread only; elsewhere no signal arrives)."""
    stop = StopRequest()
    if not enabled or threading.current_thread() is not threading.main_thread():
        yield stop
        return

    def ask_to_stop(signum, frame):
        stop.requested = True

    before = signal.signal(signal.SIGINT, ask_to_stop)
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, before if before is not None else signal.SIG_DFL)
