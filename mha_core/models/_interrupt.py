"""What every live training run shares: one torch thread, and Kernel > Interrupt as "stop here".

``one_thread()``: torch runs on one thread inside the block, so float sums come in the
same order every time (the same seed gives the same numbers, bit for bit) and no
threads spin after it.

``stop_on_sigint(True)``: while the block runs, SIGINT only sets ``stop.requested``;
the training loop reads it after every step, finishes the step under way and returns
what it trained. ipykernel ignores SIGINT outside its own handlers, so a plain
KeyboardInterrupt may never come: the run listens for the signal itself. Only the
main thread can; elsewhere no signal arrives and nothing is installed.

``TrainedRun``: the ``steps`` and ``final`` of a result that keeps its progress reports in
``history``. ``resolve_config`` and ``cached_run``: a config with keyword overrides, and
the in-process cache that keeps every run but an interrupted one.
"""

from __future__ import annotations

import contextlib
import dataclasses
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


class TrainedRun:
    """Mixin for a trained result whose ``history`` lists its progress reports, last one last."""

    @property
    def steps(self) -> int:
        """Training steps taken (at most ``config.max_steps``)."""
        return self.history[-1].step if self.history else 0

    @property
    def final(self):
        return self.history[-1]


def resolve_config(config, default: type, overrides: dict):
    """``config`` (or ``default()`` when None) with the fields in ``overrides`` replaced."""
    config = config or default()
    return dataclasses.replace(config, **overrides) if overrides else config


def cached_run(cache: dict, config, train, callback, interruptible: bool):
    """``cache[config]`` when there, else ``train(config, callback, interruptible=...)``, kept unless interrupted."""
    if config in cache:
        return cache[config]
    result = train(config, callback, interruptible=interruptible)
    if not result.interrupted:
        cache[config] = result
    return result
