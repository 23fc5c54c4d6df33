"""What one control change sends to the page: messages and bytes, for notebook 03's head count.

    PYTHONPATH=<checkout> python -m benchmarks.live_figure_messages

Builds the head grid as notebook 03 does, shows it with its keyboard helper (so its words travel too), then
moves the head count through 4, 8, 2, 8 and records every comm message the kernel side publishes (its
JSON and its binary buffers), per change. No kernel and no page: the comm messages are caught where
they are published (``comm.base_comm.BaseComm.publish_msg``), so this counts the course's messages only,
not Jupyter's busy, idle and echo. Runs against any checkout (set PYTHONPATH), to compare two.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time

import comm.base_comm


def main() -> None:
    sent = []

    class Recording(comm.base_comm.BaseComm):
        """A comm that keeps what it would publish (outside a kernel ipywidgets' comm publishes nothing)."""

        def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
            size = len(json.dumps(data, default=str)) + sum(len(memoryview(b).cast("B")) for b in buffers or ())
            sent.append((msg_type, (data or {}).get("method"), size))

    comm.create_comm = lambda **kwargs: Recording(**kwargs)
    from mha_classroom.widgets import _keys, _words
    from mha_classroom.widgets.heads import head_grid

    grid = head_grid(16, 4)
    helper = _keys.keyboard_helper()
    _words.watch(grid.box, helper)
    for h in (8, 2, 8, 4):  # build each setting once (remembered): what follows is a change shown before
        grid.head_count.value = h
    per_change, cpu = [], []
    for h in (8, 2, 8, 4, 2, 8, 4, 2):
        del sent[:]
        start = time.process_time()
        grid.head_count.value = h
        cpu.append((time.process_time() - start) * 1000)
        per_change.append(list(sent))
    messages = [len(m) for m in per_change]
    sizes = [sum(s for _, _, s in m) for m in per_change]
    print(json.dumps({"checkout": os.path.dirname(os.path.dirname(sys.modules["mha_core"].__file__)),
                      "course_messages_per_change": statistics.median(messages),
                      "kinds": sorted({f"{t}/{m}" for c in per_change for t, m, _ in c}),
                      "bytes_per_change_median": statistics.median(sizes),
                      "callback_cpu_ms_median": round(statistics.median(cpu), 2)}, indent=1))


if __name__ == "__main__":
    main()
