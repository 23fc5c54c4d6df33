"""The learners' servers' kernel manager (``mha_classroom/server_io.py``): what its activity watcher reads from a
message, and that it records what jupyter_server's own watcher records, on real kernels."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from jupyter_client.session import Session
from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager

from mha_classroom.server_io import CourseKernelManager, read_activity

ROOT = Path(__file__).resolve().parents[1]


def wire(session: Session, msg_type: str, content: dict, parent_type: str | None = None, buffers=()) -> list:
    """One IOPub message as the server's socket receives it: a topic, the delimiter and the signed parts."""
    parent = session.msg("comm_msg" if parent_type is None else parent_type, {}) if parent_type != "" else {}
    msg = session.msg(msg_type, content, parent=parent)
    return [b"kernel.x.status", *session.serialize(msg)] + list(buffers)


@pytest.fixture
def session():
    return Session(key=b"a-secret-key")


def test_reads_the_type_the_parent_and_a_status(session):
    parts = wire(session, "status", {"execution_state": "busy"}, "comm_msg")
    assert read_activity(parts, session.sign) == ("status", "comm_msg", "busy")
    idle = wire(session, "status", {"execution_state": "idle"}, "execute_request")
    assert read_activity(idle, session.sign) == ("status", "execute_request", "idle")
    # Not a status: no state read; buffers after the content are left alone.
    out = wire(session, "comm_msg", {"comm_id": "c", "data": {}}, "comm_msg", buffers=[b"\x00\x01"])
    assert read_activity(out, session.sign) == ("comm_msg", "comm_msg", None)
    # A message with no parent (the kernel's own starting status).
    assert read_activity(wire(session, "status", {"execution_state": "starting"}, ""), session.sign) == (
        "status", None, "starting")
    # Frames as pyzmq hands them over with copy=False (buffer-like, not bytes) read the same.
    assert read_activity([memoryview(p) for p in parts], session.sign) == ("status", "comm_msg", "busy")


def test_leaves_out_what_it_cannot_trust_or_read(session):
    parts = wire(session, "status", {"execution_state": "busy"}, "execute_request")
    forged = list(parts)
    forged[2] = b"0" * len(parts[2])  # the signature
    assert read_activity(forged, session.sign) is None
    other = Session(key=b"another-key")
    assert read_activity(parts, other.sign) is None
    # No key on the session: nothing to check, as jupyter_server's Session then checks nothing.
    assert read_activity(parts, None) == ("status", "execute_request", "busy")
    assert read_activity([b"no delimiter"], session.sign) is None
    assert read_activity([b"<IDS|MSG>", b"sig", b"{}"], None) is None  # too few parts
    broken = list(parts)
    broken[3] = b"{not json"
    assert read_activity(broken, None) is None
    assert read_activity([b"<IDS|MSG>", b"", b"{}", b"{}", b"{}", b"{}"], None) is None  # a header with no type
    # A status with no state: left out whole, as jupyter_server's watcher fails on it (never a state of None).
    assert read_activity(wire(session, "status", {}, "execute_request"), session.sign) is None


async def _observe(manager_class, folder: Path) -> list:
    """What ``manager_class`` records for one kernel through a fixed sequence of requests: the execution state and
    whether the activity time moved, after each step (and the state seen while a cell runs)."""
    manager = manager_class(root_dir=str(ROOT), connection_dir=str(folder))
    kernel_id = await manager.start_kernel(kernel_name="python3")
    kernel = manager.get_kernel(kernel_id)
    client = kernel.client()
    client.start_channels()
    seen = []
    try:
        await client.wait_for_ready(timeout=60)  # a kernel_info request: not tracked

        async def settle(reply, until: float = 10.0):
            await asyncio.wait_for(reply, until)
            deadline = time.monotonic() + until
            while time.monotonic() < deadline and kernel.execution_state == "busy":
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.2)  # the idle status reaches the watcher after the reply

        # The watcher's socket may join after the kernel published that (a subscriber misses what was sent
        # before it joined): ask again, an untracked request, until the watcher has seen the kernel leave starting.
        deadline = time.monotonic() + 20
        while kernel.execution_state == "starting" and time.monotonic() < deadline:
            await asyncio.wait_for(client.kernel_info(reply=True), 10)
            await asyncio.sleep(0.2)
        seen.append(("ready", kernel.execution_state))
        before = kernel.last_activity
        await settle(client.comm_info(reply=True))
        seen.append(("comm_info", kernel.execution_state, kernel.last_activity != before))
        before = kernel.last_activity
        running = client.execute("import time; time.sleep(1.0)", reply=True)
        states = set()
        deadline = time.monotonic() + 0.8
        while time.monotonic() < deadline:
            states.add(kernel.execution_state)
            await asyncio.sleep(0.02)
        await settle(running)
        seen.append(("execute", "busy" in states, kernel.execution_state, kernel.last_activity > before))
        assert manager.last_kernel_activity >= kernel.last_activity
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(kernel_id, now=True)
    return seen


def test_records_what_jupyter_servers_own_watcher_records(tmp_path):
    theirs = asyncio.run(_observe(AsyncMappingKernelManager, tmp_path))
    ours = asyncio.run(_observe(CourseKernelManager, tmp_path))
    assert theirs == ours
    # And what that is: idle once ready; a comm_info request leaves the activity alone; a cell is busy while it
    # runs, idle after, and moves the activity.
    assert ours == [("ready", "idle"), ("comm_info", "idle", False), ("execute", True, "idle", True)]


def test_watching_again_replaces_the_stream_and_a_shutdown_stops_watching(tmp_path):
    async def run():
        manager = CourseKernelManager(root_dir=str(ROOT), connection_dir=str(tmp_path))
        kernel_id = await manager.start_kernel(kernel_name="python3")
        first = manager._course_watchers[kernel_id]
        manager.start_watching_activity(kernel_id)  # one stream per kernel, whoever starts watching again
        second = manager._course_watchers[kernel_id]
        assert first is not second and first.closed() and not second.closed()
        await manager.shutdown_kernel(kernel_id, now=True)
        assert kernel_id not in manager._course_watchers and second.closed()

    asyncio.run(run())


def test_the_hub_starts_learners_servers_with_it():
    config = (ROOT / "deploy" / "jupyterhub_config.py").read_text()
    option = re.search(r'"--ServerApp\.kernel_manager_class=([\w.]+)"', config)
    assert option and option.group(1) == f"{CourseKernelManager.__module__}.{CourseKernelManager.__name__}"
    assert CourseKernelManager.light_watcher is True
