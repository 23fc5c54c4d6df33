"""A learner's browser, reduced to what the load test needs: the kernel websocket.

One ``KernelClient`` is one notebook session on a learner's server: it runs cells with
``execute_request`` messages and sends widget changes as the browser does, as
``comm_msg`` updates to the widget's model, then waits for the kernel to go idle.
It speaks the websocket protocol JupyterLab 4 uses, ``v1.kernel.websocket.jupyter.org``
(binary frames the server passes through without re-encoding), or, with
``protocol="legacy"``, the older JSON one (the server then decodes and re-encodes
every message, which costs it more CPU).
"""

from __future__ import annotations

import json
import time
import uuid

import requests
import websocket

V1 = "v1.kernel.websocket.jupyter.org"


def pack_v1(channel: str, parts: list[bytes]) -> bytes:
    """One message in the v1 framing: offsets, then the channel and each part."""
    chan = channel.encode()
    offsets = [8 * (1 + 1 + len(parts) + 1)]
    offsets.append(offsets[-1] + len(chan))
    for part in parts:
        offsets.append(offsets[-1] + len(part))
    head = len(offsets).to_bytes(8, "little") + b"".join(o.to_bytes(8, "little") for o in offsets)
    return head + chan + b"".join(parts)


def unpack_v1(frame: bytes) -> dict:
    n = int.from_bytes(frame[:8], "little")
    offsets = [int.from_bytes(frame[8 * (i + 1): 8 * (i + 2)], "little") for i in range(n)]
    channel = frame[offsets[0]:offsets[1]].decode()
    parts = [frame[offsets[i]:offsets[i + 1]] for i in range(1, n - 1)]
    header, parent, metadata, content = (json.loads(p) for p in parts[:4])
    return {"channel": channel, "header": header, "msg_type": header.get("msg_type"), "parent_header": parent,
            "metadata": metadata, "content": content}

PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


class KernelError(RuntimeError):
    pass


class KernelClient:
    def __init__(self, base_url: str, user: str, token: str, path: str, timeout: float = 180.0, protocol: str = "v1"):
        """``base_url``: the learner's own origin (``http://NAME.localhost:PORT`` on the course hub)."""
        self.protocol = protocol
        self.api = f"{base_url}/user/{user}/api"
        self.headers = {"Authorization": f"token {token}"}
        self.timeout = timeout
        self.session = uuid.uuid4().hex
        r = requests.post(f"{self.api}/sessions", headers=self.headers, timeout=timeout,
                          json={"path": path, "type": "notebook", "name": path.rsplit("/", 1)[-1], "kernel": {"name": "python3"}})
        r.raise_for_status()
        body = r.json()
        self.session_id, self.kernel_id = body["id"], body["kernel"]["id"]
        self._ws_url = f"{base_url.replace('http', 'ws', 1)}/user/{user}/api/kernels/{self.kernel_id}/channels?session_id={self.session}"
        self._token = token
        self.ws = None
        self.reconnect()
        self.comms: dict[str, dict] = {}  # comm_id -> state of every widget the kernel opened

    def reconnect(self) -> None:
        """Open the websocket (again), as JupyterLab does after a pause.

        The server pings every websocket and closes one whose pings go unanswered;
        websocket-client answers only while it reads, so a socket left unread for
        minutes (while the learner runs other notebooks) is closed by the server.
        """
        if self.ws is not None:
            try:
                self.ws.close()
            except Exception:
                pass
        self.ws = websocket.create_connection(self._ws_url, header=[f"Authorization: token {self._token}"], timeout=self.timeout,
                                              subprotocols=[V1] if self.protocol == "v1" else None)

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            requests.delete(f"{self.api}/sessions/{self.session_id}", headers=self.headers, timeout=60)

    def _send(self, msg_type: str, content: dict, channel: str = "shell") -> str:
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": msg_type, "session": self.session, "username": "learner",
                  "date": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()), "version": "5.3"}
        if self.protocol == "v1":
            parts = [json.dumps(x).encode() for x in (header, {}, {}, content)]
            self.ws.send(pack_v1(channel, parts), opcode=websocket.ABNF.OPCODE_BINARY)
        else:
            self.ws.send(json.dumps({"header": header, "parent_header": {}, "metadata": {}, "content": content,
                                     "channel": channel, "buffers": []}))
        return msg_id

    def _until_idle(self, msg_id: str, on_message=None) -> list[dict]:
        """Every iopub message answering ``msg_id`` until the kernel reports idle for it."""
        deadline = time.monotonic() + self.timeout
        got = []
        while time.monotonic() < deadline:
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            raw = self.ws.recv()
            if not raw:
                raise KernelError("the server closed the kernel websocket")
            if isinstance(raw, bytes):
                if self.protocol != "v1":
                    continue  # legacy: binary frames carry widget buffers, not needed here
                msg = unpack_v1(raw)
            else:
                msg = json.loads(raw)
            if msg.get("msg_type") == "comm_open":
                data = msg["content"].get("data", {})
                self.comms[msg["content"]["comm_id"]] = data.get("state", {})
            elif msg.get("msg_type") == "comm_msg" and msg["content"].get("comm_id") in self.comms:
                data = msg["content"].get("data", {})
                if data.get("method") == "update":  # a trait the kernel set later (a figure's held settings)
                    self.comms[msg["content"]["comm_id"]].update(data.get("state", {}))
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if on_message is not None:
                on_message(msg)
            if msg.get("channel") == "iopub" and msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                return got
            got.append(msg)
        raise KernelError(f"no idle from the kernel within {self.timeout} s")

    def execute(self, code: str, on_message=None) -> dict:
        """Run ``code``; returns {'stdout', 'errors', 'figures' (count), 'outputs'}."""
        msg_id = self._send("execute_request", {"code": code, "silent": False, "store_history": True,
                                                "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
        msgs = self._until_idle(msg_id, on_message)
        stdout, errors, figures = [], [], 0
        for m in msgs:
            kind, content = m["msg_type"], m["content"]
            if kind == "stream":
                stdout.append(content.get("text", ""))
            elif kind == "error":
                errors.append(f"{content.get('ename')}: {str(content.get('evalue'))[:200]}")
            elif kind in ("display_data", "execute_result"):
                if PLOTLY_MIME in content.get("data", {}) or WIDGET_MIME in content.get("data", {}):
                    figures += 1
        return {"stdout": "".join(stdout), "errors": errors, "figures": figures}

    def widget_update(self, comm_id: str, state: dict) -> tuple[float, int]:
        """Send a control change as the browser does; seconds until the kernel is idle, and
        how many messages the kernel sent back for it (figure updates among them)."""
        start = time.perf_counter()
        msg_id = self._send("comm_msg", {"comm_id": comm_id, "data": {"method": "update", "state": state, "buffer_paths": []}})
        msgs = self._until_idle(msg_id)
        return time.perf_counter() - start, sum(1 for m in msgs if m["msg_type"] == "comm_msg")

    def held_by_page(self, comm_id: str) -> list:
        """The values of control ``comm_id`` whose figure the page holds (a ``LiveFigure``'s ``held``, sent once
        when the group was shown): the page switches to those by itself, and the kernel sends nothing back."""
        ref = f"IPY_MODEL_{comm_id}"
        for s in self.comms.values():
            held = s.get("held") or {}
            refs = [c.get("model") for c in held.get("controls", [])]
            if ref in refs:
                k = refs.index(ref)
                return sorted({state["values"][k] for state in held.get("states", [])})
        return []

    def find_widget(self, model_name: str, **state) -> str:
        """The comm id of the first widget of ``model_name`` whose state has these values."""
        for comm_id, s in self.comms.items():
            if s.get("_model_name") == model_name and all(s.get(k) == v for k, v in state.items()):
                return comm_id
        raise KernelError(f"no {model_name} with {state} among {len(self.comms)} widgets")
