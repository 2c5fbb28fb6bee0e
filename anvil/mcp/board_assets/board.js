// anvil's team board: renders snapshots from /board/api/state and /board/api/events (server-sent
// events). Plain script, no dependencies, no build step. Every value from the server is inserted as
// text (never as HTML), and the token is only ever sent once, in the body of POST /board/session.
"use strict";
(function () {
  var STATUSES = ["proposed", "drafted", "reviewed", "ready", "waiting", "claimed", "in_progress", "blocked",
    "needs_review", "accepted", "done", "rejected"];
  var ALWAYS_SHOWN = ["ready", "claimed", "in_progress", "needs_review", "done"];
  var LABELS = { in_progress: "in progress", needs_review: "needs review", waiting: "waiting on dependencies" };
  var SVG = "http://www.w3.org/2000/svg";
  var source = null;
  var skewMs = 0;  // server clock minus this browser's clock, from each snapshot's "now"

  function $(id) { return document.getElementById(id); }

  function el(tag, props, children) {
    var node = document.createElement(tag);
    Object.keys(props || {}).forEach(function (key) {
      if (key === "text") { node.textContent = props[key]; }
      else if (key === "className") { node.className = props[key]; }
      else { node.setAttribute(key, props[key]); }
    });
    (children || []).forEach(function (child) { node.appendChild(child); });
    return node;
  }

  function svg(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (key) { node.setAttribute(key, attrs[key]); });
    return node;
  }

  function clear(node) { while (node.firstChild) { node.removeChild(node.firstChild); } }

  function clock(iso) {
    var date = new Date(iso);
    return isNaN(date) ? "" : date.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit" });
  }

  function remaining(iso) {
    var ms = Date.parse(iso) - (Date.now() + skewMs);
    if (isNaN(ms)) { return { text: "?", ms: 0 }; }
    if (ms <= 0) { return { text: "expired", ms: 0 }; }
    var seconds = Math.floor(ms / 1000);
    var hours = Math.floor(seconds / 3600);
    var minutes = Math.floor((seconds % 3600) / 60);
    var rest = seconds % 60;
    var text = (hours ? hours + ":" + String(minutes).padStart(2, "0") : String(minutes)) + ":" +
      String(rest).padStart(2, "0");
    return { text: text, ms: ms };
  }

  function setLive(state) {
    var badge = $("live");
    badge.dataset.state = state;
    badge.textContent = state === "live" ? "live" : state === "offline" ? "reconnecting" : "connecting";
  }

  // --- rendering -----------------------------------------------------------------------------

  // The board sends each column's first page; the counts are the whole column's (snapshot.counts).
  function shownOf(count, shown) {
    return shown < count ? String(count) + " (first " + String(shown) + ")" : String(count);
  }

  function renderColumns(tasks, columnPages) {
    var columnCounts = {};
    (columnPages || []).forEach(function (page) { columnCounts[page.state] = page.count; });
    var columns = $("columns");
    clear(columns);
    var byStatus = {};
    tasks.forEach(function (task) {
      // a ready task with a dependency not done yet waits: it has a column of its own, as on the CLI board
      var column = task.status === "ready" && (task.blocked_by || []).length ? "waiting" : task.status;
      (byStatus[column] = byStatus[column] || []).push(task);
    });
    STATUSES.forEach(function (status) {
      var items = byStatus[status] || [];
      var total = (columnCounts && columnCounts[status]) || items.length;
      if (!total && ALWAYS_SHOWN.indexOf(status) < 0) { return; }
      var column = el("section", { className: "column", "data-column": status, "data-status": status }, [
        el("h2", {}, [el("span", { text: LABELS[status] || status }), el("span", { className: "count",
          text: shownOf(total, items.length) })])]);
      items.forEach(function (task) {
        var meta = task.priority + (task.claimed_by ? " · " + task.claimed_by : "") +
          ((task.blocked_by || []).length ? " · waits on " + task.blocked_by.join(", ") : "");
        var parts = [el("span", { className: "id", text: task.id }), el("span", { className: "title", text: task.title }),
          el("span", { className: "meta", text: meta })];
        if (task.trust_level) { parts.push(trustBadge(task.trust_level)); }
        column.appendChild(el("article", { className: "card", "data-task": task.id, "data-status": task.status,
          "data-trust": task.trust_level || "" }, parts));
      });
      columns.appendChild(column);
    });
  }

  // What a submission's proofs amount to: verified (someone other than the implementer re-ran every
  // contract command on the submitted commit), client_reported (the implementer's own runs), unproven.
  var TRUST_TEXT = { verified: "verified", client_reported: "client-reported only", unproven: "unproven" };
  var TRUST_TIP = { verified: "re-run by someone other than the implementer on the submitted commit",
    client_reported: "nothing independent proved this work: the implementer's own runs",
    unproven: "no passing proof" };

  function trustBadge(level) {
    return el("span", { className: "trust", "data-trust": level, title: TRUST_TIP[level] || level,
      text: TRUST_TEXT[level] || level });
  }

  function renderClaims(claims) {
    var body = $("claims");
    clear(body);
    $("claim-count").textContent = String(claims.length);
    claims.forEach(function (claim) {
      body.appendChild(el("tr", { "data-claim": claim.task_id, "data-expires": claim.lease_expires_at }, [
        el("td", { text: claim.task_id }), el("td", { className: "owner", text: claim.actor }),
        el("td", { text: String(claim.generation) }), el("td", { className: "lease" })]));
    });
    tick();
  }

  function tick() {
    Array.prototype.forEach.call(document.querySelectorAll("#claims tr"), function (row) {
      var left = remaining(row.dataset.expires);
      row.querySelector(".lease").textContent = left.text;
      row.classList.toggle("expired", left.ms <= 0);
      row.classList.toggle("expiring", left.ms > 0 && left.ms < 120000);
    });
  }

  function renderReviews(queue, total) {
    var list = $("reviews");
    clear(list);
    $("review-count").textContent = shownOf(typeof total === "number" ? total : queue.length, queue.length);
    if (!queue.length) { list.appendChild(el("li", { className: "hint", text: "nothing waiting" })); }
    queue.forEach(function (item) {
      var who = item.submitted_by ? " — by " + item.submitted_by + (item.submitted_at ? " at " +
        clock(item.submitted_at) : "") : "";
      var commit = item.commit_sha ? " @ " + item.commit_sha.slice(0, 12) : "";
      var entry = el("li", { "data-review": item.task_id, "data-trust": item.trust_level || "" }, [
        el("span", { text: item.task_id + " " + item.title + who + commit + " " })]);
      if (item.trust_level) { entry.appendChild(trustBadge(item.trust_level)); }
      list.appendChild(entry);
    });
  }

  function renderLandings(queue) {
    var list = $("landings");
    clear(list);
    $("landing-panel").hidden = !queue.length;
    $("landing-count").textContent = String(queue.length);
    queue.forEach(function (item) {
      var commit = item.landed_commit || item.approved_commit;
      list.appendChild(el("li", { "data-landing": item.task_id, "data-state": item.state }, [
        el("span", { text: item.task_id + " " + item.state + (commit ? " @ " + commit.slice(0, 12) : "") +
          (item.detail ? " — " + item.detail : "") })]));
    });
  }

  function renderEvents(events) {
    var list = $("events");
    clear(list);
    events.forEach(function (event) {
      list.appendChild(el("li", { "data-seq": String(event.seq) }, [
        el("span", { className: "when", text: clock(event.ts) }),
        el("span", { text: event.type + (event.task_id ? " " + event.task_id : "") + " · " + event.actor })]));
    });
  }

  function depths(tasks) {
    var byId = {};
    tasks.forEach(function (task) { byId[task.id] = task; });
    var memo = {};
    function depth(id, trail) {
      if (memo[id] !== undefined) { return memo[id]; }
      if (trail[id]) { return 0; }  // a cycle: anvil refuses them, but never loop on one
      trail[id] = true;
      var deepest = -1;
      byId[id].dependencies.forEach(function (dep) { if (byId[dep]) { deepest = Math.max(deepest, depth(dep, trail)); } });
      delete trail[id];
      return (memo[id] = deepest + 1);
    }
    tasks.forEach(function (task) { depth(task.id, {}); });
    return memo;
  }

  function renderGraph(tasks) {
    var box = $("graph");
    clear(box);
    if (!tasks.length) { return; }
    var layer = depths(tasks);
    var rows = {};
    var place = {};
    var width = 168, height = 36, gapX = 56, gapY = 12, pad = 10;
    tasks.forEach(function (task) {
      var d = layer[task.id];
      rows[d] = (rows[d] || 0) + 1;
      place[task.id] = { x: pad + d * (width + gapX), y: pad + (rows[d] - 1) * (height + gapY) };
    });
    var layers = Object.keys(rows).length;
    var tallest = Math.max.apply(null, Object.keys(rows).map(function (k) { return rows[k]; }));
    var picture = svg("svg", { width: String(pad * 2 + layers * width + (layers - 1) * gapX),
      height: String(pad * 2 + tallest * height + (tallest - 1) * gapY), role: "img",
      "aria-label": "dependency graph" });
    var defs = svg("defs");
    var marker = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7",
      markerHeight: "7", orient: "auto-start-reverse" });
    marker.appendChild(svg("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#98a2b3" }));
    defs.appendChild(marker);
    picture.appendChild(defs);
    tasks.forEach(function (task) {
      task.dependencies.forEach(function (dep) {
        if (!place[dep]) { return; }
        var a = place[dep], b = place[task.id];
        var x1 = a.x + width, y1 = a.y + height / 2, x2 = b.x, y2 = b.y + height / 2, mid = (x1 + x2) / 2;
        picture.appendChild(svg("path", { "class": "edge", "data-edge": dep + ">" + task.id,
          d: "M" + x1 + "," + y1 + " C" + mid + "," + y1 + " " + mid + "," + y2 + " " + x2 + "," + y2,
          "marker-end": "url(#arrow)" }));
      });
    });
    tasks.forEach(function (task) {
      var at = place[task.id];
      var node = svg("g", { "class": "node", "data-node": task.id, "data-status": task.status,
        transform: "translate(" + at.x + "," + at.y + ")" });
      var tip = svg("title");
      tip.textContent = task.id + " " + task.title + " (" + task.status + ")";
      node.appendChild(tip);
      node.appendChild(svg("rect", { width: String(width), height: String(height), rx: "5" }));
      var label = svg("text", { x: "8", y: "15" });
      label.textContent = task.id + " · " + (LABELS[task.status] || task.status);
      var title = svg("text", { x: "8", y: "29" });
      title.textContent = task.title.length > 24 ? task.title.slice(0, 23) + "…" : task.title;
      node.appendChild(label);
      node.appendChild(title);
      picture.appendChild(node);
    });
    box.appendChild(picture);
  }

  function apply(snapshot) {
    skewMs = Date.parse(snapshot.now) - Date.now() || 0;
    $("project").textContent = snapshot.project || "";
    $("head").textContent = "event " + snapshot.head;
    if (snapshot.viewer) {
      var viewer = snapshot.viewer;
      $("who").textContent = viewer.actor ? viewer.actor + " (" + viewer.role + ")" : viewer.mode === "shared" ?
        "shared token" : "";
      $("logout").hidden = viewer.mode === "open";
    }
    $("empty").hidden = snapshot.tasks.length > 0;
    renderColumns(snapshot.tasks, snapshot.columns);
    renderClaims(snapshot.claims);
    renderReviews(snapshot.review_queue, snapshot.review_count);
    renderLandings(snapshot.landing_queue || []);
    renderEvents(snapshot.events);
    renderGraph(snapshot.tasks);
    $("failure").hidden = true;
    $("login").hidden = true;
    $("board").hidden = false;
  }

  // --- talking to the server -------------------------------------------------------------------

  function showLogin(message) {
    if (source) { source.close(); source = null; }
    setLive("connecting");
    $("board").hidden = true;
    $("logout").hidden = true;
    $("who").textContent = "";
    $("login").hidden = false;
    $("login-error").textContent = message || "";
    $("token").focus();
  }

  function showFailure(message) {
    $("failure").textContent = message;
    $("failure").hidden = false;
  }

  function connect() {
    if (source) { source.close(); }
    source = new EventSource("/board/api/events");
    source.addEventListener("open", function () { setLive("live"); });
    source.addEventListener("snapshot", function (event) { apply(JSON.parse(event.data)); setLive("live"); });
    source.addEventListener("logout", function () { showLogin("Your session ended; sign in again."); });
    source.addEventListener("failure", function () { showFailure("The server cannot read the project's state."); });
    source.addEventListener("error", function () {
      setLive("offline");
      if (source && source.readyState === EventSource.CLOSED) { source = null; setTimeout(load, 2000); }
    });
  }

  function load() {
    return fetch("/board/api/state", { credentials: "same-origin", cache: "no-store" }).then(function (response) {
      if (response.status === 401) { showLogin(""); return; }
      if (!response.ok) { showFailure("The board could not be loaded (HTTP " + response.status + ")."); return; }
      return response.json().then(function (snapshot) { apply(snapshot); connect(); });
    }).catch(function () { setLive("offline"); setTimeout(load, 3000); });
  }

  function signIn(event) {
    event.preventDefault();
    var input = $("token");
    var token = input.value.trim();
    if (!token) { return; }
    fetch("/board/session", { method: "POST", credentials: "same-origin", cache: "no-store",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token: token }) })
      .then(function (response) {
        input.value = "";
        if (response.ok) { $("login-error").textContent = ""; return load(); }
        $("login-error").textContent = response.status === 401 ? "That token is unknown, revoked or expired." :
          "Sign-in failed (HTTP " + response.status + ").";
      })
      .catch(function () { $("login-error").textContent = "The server could not be reached."; });
  }

  function signOut() {
    fetch("/board/logout", { method: "POST", credentials: "same-origin" }).then(function () { showLogin(""); });
  }

  $("login-form").addEventListener("submit", signIn);
  $("logout").addEventListener("click", signOut);
  setInterval(tick, 1000);
  load();
})();
