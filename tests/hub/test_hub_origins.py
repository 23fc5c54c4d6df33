"""One learner must never reach another's account: the link attack, driven in Chromium, and the
file and hub-API separation, against the real hub (deploy/start.sh, the proxy, CourseSpawner).

The attack (issue 23, first and worst): bob serves a page from his own server (a labextension
in ~/.local/share/jupyter, or a ~/.jupyter config adding a static path), restarts his server,
and sends the link. The page's script reads the hub's xsrf token from /hub/home and POSTs to
/hub/api/users/<victim>/tokens. Each test fails if the victim's browser hands bob a token.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from hubctl import ALICE, BOB, PASSWORD, TESS, chromium

pytestmark = pytest.mark.hub

#: The script bob's page runs in the victim's browser: every way it has to the hub's xsrf token
#: and to the token API, hub origin and his own; what each answered is left in window.__attack.
ATTACK_JS = """
(async () => {
  const out = {origin: location.origin, steps: []};
  const victims = VICTIMS;
  for (const base of ["", HUB]) {
    let xsrf = null;
    try {
      const r = await fetch(base + "/hub/home", {credentials: "include"});
      const text = await r.text();
      const m = text.match(/xsrf[^"']*["']\\s*[:=]?\\s*["']?([A-Za-z0-9|:_=-]{16,})/) || text.match(/_xsrf" value="([^"]+)"/);
      xsrf = m ? m[1] : null;
      out.steps.push({base, home: r.status, redirected: r.redirected, url: r.url, xsrf: !!xsrf});
    } catch (e) { out.steps.push({base, home: "blocked: " + e.message}); }
    for (const victim of victims) {
      try {
        const r = await fetch(base + "/hub/api/users/" + victim + "/tokens", {
          method: "POST", credentials: "include",
          headers: {"Content-Type": "application/json", "X-XSRFToken": xsrf || ""},
          body: JSON.stringify({note: "stolen by bob", expires_in: 600})});
        let token = null;
        try { token = (await r.json()).token || null; } catch (e) {}
        out.steps.push({base, victim, tokens_post: r.status, got_token: !!token});
      } catch (e) { out.steps.push({base, victim, tokens_post: "blocked: " + e.message, got_token: false}); }
    }
  }
  window.__attack = out;
})();
"""


def as_user(name: str, script: str) -> subprocess.CompletedProcess:
    """A shell command run as the learner's Unix account, as their kernel or terminal would."""
    return subprocess.run(["runuser", "-u", name, "--", "sh", "-c", script], capture_output=True, text=True, timeout=30)


def home_of(hub, name: str):
    return Path(hub.env["MHA_HUB_HOMES"]) / name


def stolen_tokens(hub, tokens) -> dict[str, list[str]]:
    """Each victim's tokens noted as bob's theft (listed with the victim's own token)."""
    found = {}
    for victim in (ALICE, TESS):
        listed = hub.api("GET", f"/users/{victim}/tokens", tokens[victim]).json()["api_tokens"]
        found[victim] = [t["id"] for t in listed if t.get("note") == "stolen by bob"]
    return found


@pytest.fixture(scope="module")
def bobs_links(class_hub, tokens):
    home = home_of(class_hub, BOB)
    page = "<html><head><title>bob</title></head><body><script>{}</script></body></html>".format(
        ATTACK_JS.replace("VICTIMS", json.dumps([ALICE, TESS])).replace("HUB", json.dumps(class_hub.url(""))))
    made = subprocess.run(
        ["runuser", "-u", BOB, "--", "sh", "-c", f"""set -e
            mkdir -p {home}/.local/share/jupyter/labextensions/x/static {home}/evil {home}/.jupyter
            cat > {home}/evil/p.html
            cp {home}/evil/p.html {home}/.local/share/jupyter/labextensions/x/static/p.html
            echo '{{"name": "x", "version": "0.0.1", "jupyterlab": {{"_build": {{"load": "static/remoteEntry.js"}}}}}}' > {home}/.local/share/jupyter/labextensions/x/package.json
            echo "c.ServerApp.extra_static_paths = ['{home}/evil']" > {home}/.jupyter/jupyter_server_config.py
            echo '{{"ServerApp": {{"extra_static_paths": ["{home}/evil"]}}}}' > {home}/.jupyter/jupyter_server_config.json
        """], input=page, capture_output=True, text=True, timeout=30)
    assert made.returncode == 0, made.stderr
    # Bob restarts his own server, so it would pick up his config and extension.
    class_hub.stop_server(BOB, tokens[BOB])
    class_hub.start_server(BOB, tokens[BOB])
    return {"labextension": class_hub.url(f"/user/{BOB}/lab/extensions/x/static/p.html", BOB),
            "static path": class_hub.url(f"/user/{BOB}/static/p.html", BOB)}


def browser_login(page, hub, name: str) -> None:
    page.goto(hub.url("/hub/login"), wait_until="domcontentloaded")
    page.fill("input[name=username]", name)
    page.fill("input[name=password]", PASSWORD)
    with page.expect_navigation(wait_until="domcontentloaded"):
        page.click("[type=submit]")
    assert "/hub/login" not in page.url, f"{name} could not log in in Chromium: {page.url}"
    # The victim's own server too, so the browser holds its cookie as well.
    resp = page.goto(hub.url(f"/user/{name}/api/status", name), wait_until="domcontentloaded")
    assert resp is not None and resp.status == 200, f"{name}'s own server: {resp and resp.status} at {page.url}"


def open_link(page, link: str) -> dict:
    resp = page.goto(link, wait_until="domcontentloaded")
    served = resp is not None and resp.status == 200 and "bob" in (page.title() or "")
    result = {"status": resp.status if resp else None, "served": served, "url": page.url,
              "csp": (resp.headers.get("content-security-policy") if resp else None)}
    if served:
        page.wait_for_function("window.__attack !== undefined", timeout=30_000)
        result["attack"] = page.evaluate("window.__attack")
    return result


def test_learners_servers_are_on_their_own_origins(class_hub, tokens):
    hub = class_hub
    own = hub.server_request(ALICE, "GET", "/api/contents", tokens[ALICE])
    assert own.status == 200, own.text[:300]
    # On the hub's origin a learner's server is not served at all: the hub sends you to NAME.localhost.
    on_hub = hub.server_request(ALICE, "GET", "/api/contents", tokens[ALICE], host=hub.host())
    assert on_hub.status in (301, 302, 303, 307, 404), on_hub.status
    # ... and alice's server is not reachable on bob's origin either.
    on_bob = hub.server_request(ALICE, "GET", "/api/contents", tokens[ALICE], host=hub.host(BOB))
    assert on_bob.status != 200, on_bob.text[:300]


def test_the_link_attack_gets_no_token_from_alice_or_the_instructor(class_hub, tokens, bobs_links, hub_tmp):
    hub = class_hub
    before = stolen_tokens(hub, tokens)
    results = {}
    with chromium(hub_tmp / "chromium-link") as context:
        for victim in (ALICE, TESS):
            context.clear_cookies()
            page = context.new_page()
            browser_login(page, hub, victim)
            for how, link in bobs_links.items():
                results[(victim, how)] = open_link(page, link)
            if victim == ALICE:
                # The control: the same script on the hub's own origin (where bob's page was served
                # before per-learner origins) does get a token, so the checks below can see a theft.
                page.goto(hub.url("/hub/home"), wait_until="domcontentloaded")
                page.evaluate(ATTACK_JS.replace("VICTIMS", json.dumps([ALICE])).replace("HUB", json.dumps(hub.url("")))
                              .replace("stolen by bob", "control"))
                page.wait_for_function("window.__attack !== undefined", timeout=30_000)
                results[(victim, "control on the hub's origin")] = page.evaluate("window.__attack")
            page.close()
    time.sleep(0.5)
    control = results.pop((ALICE, "control on the hub's origin"))
    assert any(step.get("got_token") for step in control["steps"]), f"the control got no token: {control}"
    after = stolen_tokens(hub, tokens)
    report = json.dumps({f"{v} via {h}": r for (v, h), r in results.items()}, indent=1)
    assert after == before == {ALICE: [], TESS: []}, f"bob's page made tokens for the victims: {after}\n{report}"
    for (victim, how), result in results.items():
        if not result["served"]:
            continue  # the page is not served at all: nothing of bob's runs
        for step in result["attack"]["steps"]:
            assert not step.get("xsrf"), f"bob's page ({how}) read the hub's xsrf token in {victim}'s browser: {report}"
            assert not step.get("got_token"), f"bob's page ({how}) got a token of {victim}'s: {report}"
            assert step.get("tokens_post") not in (200, 201), f"bob's page ({how}) POSTed a token for {victim}: {report}"


def test_pages_and_config_in_a_learners_home_are_not_served(class_hub, tokens, bobs_links):
    """disable_user_config: ~/.local/share/jupyter/labextensions and ~/.jupyter are not on bob's
    server's search paths, so neither of his pages exists even for bob himself."""
    for how, link in bobs_links.items():
        path = link.split(f":{class_hub.port}", 1)[1]
        resp = class_hub.request("GET", path, host=class_hub.host(BOB), token=tokens[BOB])
        assert resp.status == 404, f"bob's {how} page is served by his server ({resp.status})"


def test_bob_cannot_read_alices_files(class_hub, tokens):
    home = home_of(class_hub, ALICE)
    assert (home / "course").is_dir()
    for command in (f"ls {home}", f"cat {home}/course/00_welcome.ipynb", f"ls {home}/.mha_course"):
        done = as_user(BOB, command)
        assert done.returncode != 0 and "Permission denied" in done.stderr, (command, done.stdout[:200])
    done = as_user(ALICE, f"ls {home}/course")
    assert done.returncode == 0 and "00_welcome.ipynb" in done.stdout, done.stderr


def test_bobs_token_reaches_neither_alices_server_nor_her_account(class_hub, tokens):
    hub, bob = class_hub, tokens[BOB]
    assert hub.server_request(ALICE, "GET", "/api/contents", bob).status in (403, 404)
    assert hub.server_request(ALICE, "GET", "/api/contents/course", bob).status in (403, 404)
    assert hub.api("GET", f"/users/{ALICE}", bob).status in (403, 404)
    assert hub.api("POST", f"/users/{ALICE}/tokens", bob, {"note": "bob"}).status in (403, 404)
    assert hub.api("DELETE", f"/users/{ALICE}/server", bob).status in (403, 404)
    listed = hub.api("GET", "/users", bob)
    assert listed.status in (403, 404) or {u["name"] for u in listed.json()} <= {BOB}, listed.text[:300]
    # Bob's own still works: the refusals above are about alice, not a broken token.
    assert hub.server_request(BOB, "GET", "/api/contents", bob).status == 200
