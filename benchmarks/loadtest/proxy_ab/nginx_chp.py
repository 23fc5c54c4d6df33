"""A measurement shim, not a proxy to deploy: configurable-http-proxy's command line and REST API, with nginx
relaying the traffic. ``proxy_ab.sh`` puts it in the hub's place of configurable-http-proxy
(``c.ConfigurableHTTPProxy.command``) to measure what the class's proxy costs a change;
``benchmarks/proxy_relay.py`` runs nginx with its ``config``.

Enough of the API for the load test's hub (routes added, listed and deleted; host routing; a Unix-socket API;
targets on Unix sockets). Missing, so it must not face learners: TLS, the error target, CHP's segment-wise
prefix match (``/user/ann`` here also matches ``/user/anne``), waiting until a reload has taken effect, and
the last activity of a route (it reports the time it is asked).
"""
import argparse
import asyncio
import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import urllib.parse
from datetime import datetime, timezone
from pathlib import Path

NGINX = "/usr/sbin/nginx"

LOCATION = """      proxy_pass {up};
      proxy_http_version 1.1;
      proxy_set_header Upgrade $http_upgrade;
      proxy_set_header Connection $connection_upgrade;
      proxy_set_header Host $http_host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $http_host;
      proxy_set_header X-Forwarded-Port $server_port;
"""


def upstream(target: str) -> str:
    """A route's target as nginx's ``proxy_pass`` takes it (``http+unix://%2Fpath`` -> ``http://unix:/path:``)."""
    u = urllib.parse.urlsplit(target)
    if u.scheme == "http+unix":
        return "http://unix:" + urllib.parse.unquote(u.netloc) + ":"
    return f"http://{u.netloc}"


def config(routes: dict[str, dict], *, listen: str, host_routing: bool, work: Path) -> str:
    """nginx's whole configuration for ``routes`` (configurable-http-proxy's: prefix -> {"target", ...}), listening
    on ``listen`` (``IP:PORT`` or ``unix:PATH``), with its files under ``work``."""
    by_host: dict[str, dict[str, str]] = {}
    for prefix, data in routes.items():
        host, path = "", prefix
        if host_routing and prefix != "/":
            _, host, *rest = prefix.split("/")
            path = "/" + "/".join(rest)
        by_host.setdefault(host, {})[path] = upstream(data["target"])
    default = by_host.get("", {}).get("/")
    servers = []
    for host, paths in by_host.items():
        if "/" not in paths and default:
            paths = {**paths, "/": default}
        locations = "".join(
            f"    location {'/' if path == '/' else '^~ ' + path.rstrip('/')} {{\n" + LOCATION.format(up=up) + "    }\n"
            for path, up in sorted(paths.items()))
        name = f"server_name {host};" if host else "server_name _;"
        servers.append(f"  server {{\n    listen {listen}{'' if host else ' default_server'};\n    {name}\n{locations}  }}\n")
    if "" not in by_host:
        servers.append(f"  server {{ listen {listen} default_server; return 404; }}\n")
    return f"""daemon off;
user root;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_max_body_size 0;
  client_body_temp_path {work}/body; proxy_temp_path {work}/proxy;
  fastcgi_temp_path {work}/f; uwsgi_temp_path {work}/u; scgi_temp_path {work}/s;
  proxy_buffering off; proxy_request_buffering off;
  proxy_read_timeout 1d; proxy_send_timeout 1d;
  map $http_upgrade $connection_upgrade {{ default upgrade; '' close; }}
{''.join(servers)}}}
"""


def start_nginx(conf: Path) -> subprocess.Popen:
    """nginx in the foreground on ``conf``, ended (SIGTERM) when the process that started it ends."""
    def die_with_parent():
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG

    return subprocess.Popen([NGINX, "-c", str(conf), "-e", str(conf.parent / "error.log")],
                            preexec_fn=die_with_parent, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def now() -> str:
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def prefix_of(path: str) -> str:
    prefix = urllib.parse.unquote("/" + path.lstrip("/"))
    return prefix.rstrip("/") if len(prefix) > 1 else prefix


def main() -> None:
    from tornado import httpserver, ioloop, netutil, web

    p = argparse.ArgumentParser()
    p.add_argument("--ip", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--socket")
    p.add_argument("--api-ip", default="127.0.0.1")
    p.add_argument("--api-port", type=int)
    p.add_argument("--api-socket")
    p.add_argument("--host-routing", action="store_true")
    p.add_argument("--default-target")
    args, _ = p.parse_known_args()  # --error-target, --log-level: not used here
    token = os.environ.get("CONFIGPROXY_AUTH_TOKEN", "")
    work = Path(tempfile.mkdtemp(prefix="nginx-chp-"))
    conf = work / "nginx.conf"
    listen = f"unix:{args.socket}" if args.socket else f"{args.ip}:{args.port}"
    routes: dict[str, dict] = {"/": {"target": args.default_target}} if args.default_target else {}

    def write() -> None:
        conf.write_text(config(routes, listen=listen, host_routing=args.host_routing, work=work))

    write()
    nginx = start_nginx(conf)

    async def reload() -> None:
        """The new routes to nginx; 0.3 s for its new worker to start (not confirmed: see above)."""
        write()
        nginx.send_signal(signal.SIGHUP)
        await asyncio.sleep(0.3)

    class Routes(web.RequestHandler):
        def prepare(self):
            if self.request.headers.get("Authorization", "") != f"token {token}":
                raise web.HTTPError(403)

        def get(self, path=""):
            self.set_header("Content-Type", "application/json")
            self.write(json.dumps({k: {**v, "last_activity": now()} for k, v in routes.items()}))

        async def post(self, path):
            routes[prefix_of(path)] = json.loads(self.request.body)
            await reload()
            self.set_status(201)

        async def delete(self, path):
            if routes.pop(prefix_of(path), None) is not None:
                await reload()
            self.set_status(204)

    server = httpserver.HTTPServer(web.Application([(r"/api/routes/?(.*)", Routes)]))
    if args.api_socket:
        server.add_socket(netutil.bind_unix_socket(args.api_socket, mode=0o600))
    else:
        server.listen(args.api_port, args.api_ip)

    def stop(*_):
        nginx.send_signal(signal.SIGTERM)
        try:
            nginx.wait(5)
        except subprocess.TimeoutExpired:
            nginx.kill()
        if args.api_socket:
            Path(args.api_socket).unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
