"""One piece of code run in a real kernel (jupyter_client's blocking client), for the tests that need one."""

from __future__ import annotations


def run_in_kernel(kc, code: str, timeout: float = 60) -> list[tuple[str, str]]:
    """``code`` executed; every (stream name, text) the kernel published for it, up to its idle, in order. An
    error in the kernel comes back as ("error", its name)."""
    msg_id = kc.execute(code)
    out = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            out.append((msg["content"]["name"], msg["content"]["text"]))
        elif msg["msg_type"] == "error":
            out.append(("error", msg["content"]["ename"]))
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return out
