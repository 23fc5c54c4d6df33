"""The course's one setting for a learner's Jupyter server that the server's own options cannot give.

``NoDelayConnection`` is the kernel websocket of ``jupyter_server``, with Nagle's algorithm turned off on
the socket (``TCP_NODELAY``, tornado's ``set_nodelay``). A kernel answers a control's change with small
messages in quick succession (busy, the figure, idle); with Nagle on, the server holds each one after the
first until the page acknowledges the first, and a page may delay that acknowledgement by 40 ms. Measured
on a learner's server with no proxy between (``benchmarks/loadtest/profile_server.py``): a change took 44 ms
to come back idle with Nagle on and 2-3 ms with it off.

Chosen with the server's own option, ``--ServerApp.kernel_websocket_connection_class``, by ``tools/course.py
lab`` and the class hub's spawner (``deploy/jupyterhub_config.py``). Only the Jupyter server imports this.
"""

from __future__ import annotations

from jupyter_server.services.kernels.connection.channels import ZMQChannelsWebsocketConnection

#: The option's value, as the command lines give it.
CONNECTION_OPTION = "--ServerApp.kernel_websocket_connection_class=mha_classroom.server.NoDelayConnection"


class NoDelayConnection(ZMQChannelsWebsocketConnection):
    """The server's kernel websocket, each message written to the socket at once."""

    def connect(self):
        self.websocket_handler.set_nodelay(True)
        return super().connect()
