"""The learners' servers on the class hub: a kernel's activity recorded with less work per message.

jupyter_server (2.21) watches every kernel's IOPub messages on a socket of its own, to keep each kernel's
``last_activity`` (what the hub's idle culler reads) and ``execution_state`` (busy or idle). For every
message it checks the signature, parses the header, the parent header and the metadata with their dates,
and for a status message parses the whole message a second time. A control's change in the page makes two
such messages (busy, idle); a py-spy profile of a learner's server (``benchmarks/loadtest/profile_server.py
--py-spy``) put about a sixth of the server's samples there.

``CourseKernelManager`` is jupyter_server's kernel manager with one difference: its watcher records the same
thing from the parts it needs. It checks the signature as jupyter_server does (``Session.sign``), then reads the
header's and the parent header's message types, and for a status message the content's state; no dates, no
second parse. What it records, and when, follows jupyter_server's own rules (``track_message_type``, busy
kernels, a kernel leaving ``starting``); a message it cannot read is left out, as jupyter_server's watcher
leaves out one that fails its check. The hub sets it with the server's own option
``--ServerApp.kernel_manager_class`` (``deploy/jupyterhub_config.py``).
"""

from __future__ import annotations

import hmac
import json
from datetime import datetime, timezone

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager

#: Where a message's parts start, after the routing identities (the Jupyter wire protocol).
DELIMITER = b"<IDS|MSG>"


def read_activity(parts: list, sign=None) -> tuple[str, str | None, str | None] | None:
    """``(msg_type, parent msg_type, execution_state)`` of one IOPub message as ZMQ delivers it (identities,
    the delimiter, signature, header, parent header, metadata, content, buffers); the state only for a status
    message. None when it cannot be read or, given ``sign`` (``Session.sign``), its signature is wrong."""
    try:
        i = parts.index(DELIMITER)
        signature, header, parent, metadata, content = (bytes(p) for p in parts[i + 1:i + 6])
        if sign is not None and not hmac.compare_digest(signature, sign([header, parent, metadata, content])):
            return None
        msg_type = json.loads(header)["msg_type"]
        parent_type = json.loads(parent).get("msg_type")
        state = json.loads(content)["execution_state"] if msg_type == "status" else None
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
    return msg_type, parent_type, state


def utcnow() -> datetime:
    """Now, in UTC, as jupyter_server stamps a kernel's activity."""
    return datetime.now(timezone.utc)


class CourseKernelManager(AsyncMappingKernelManager):
    """jupyter_server's kernel manager, whose activity watcher reads only the parts it records."""

    #: False: jupyter_server's own watcher (``benchmarks/loadtest/ab.sh``).
    light_watcher = True

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._course_watchers = {}  # kernel id -> the IOPub stream its activity is read from

    def start_watching_activity(self, kernel_id):
        if not self.light_watcher:
            return super().start_watching_activity(kernel_id)
        kernel = self.get_kernel(kernel_id)
        kernel.reason = ""
        kernel.last_activity = utcnow()
        session = kernel.session
        sign = session.sign if session.auth is not None else None
        track = self.track_message_type

        def record_activity(parts):
            read = read_activity(parts, sign)
            if read is None:
                self.log.debug("activity on %s: a message that could not be read, left out", kernel_id)
                return
            msg_type, parent_type, state = read
            if track(msg_type) or track(parent_type) or kernel.execution_state == "busy":
                self.last_kernel_activity = kernel.last_activity = utcnow()
            if msg_type == "status":
                if track(parent_type):
                    kernel.execution_state = state
                elif kernel.execution_state == "starting" and state != "starting":
                    kernel.execution_state = "idle"  # as jupyter_server: out of starting, idle unless told

        self.stop_watching_activity(kernel_id)
        stream = self._course_watchers[kernel_id] = kernel.connect_iopub()
        stream.on_recv(record_activity)

    def stop_watching_activity(self, kernel_id):
        stream = self._course_watchers.pop(kernel_id, None)
        if stream is not None:
            if not stream.closed():
                stream.close()
            return
        if not self.light_watcher:
            super().stop_watching_activity(kernel_id)
