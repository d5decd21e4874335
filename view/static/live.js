// Keeps a page live: the server names the page's event stream (from the
// sequence the page was rendered at) in <body data-events>; on each new
// fact the page fetches its content again and swaps it in, keeping open
// what the reader opened. EventSource reconnects by itself and sends the
// last event ID, so the server resumes where the page left off.
(function () {
  "use strict";
  var url = document.body.dataset.events;
  if (!url || !window.EventSource) return;
  var busy = false, again = false, timer = null;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    var open = Array.prototype.map.call(document.querySelectorAll("details[open][id]"), function (d) { return d.id; });
    var part = location.pathname + "?part=main";
    fetch(part, { headers: { Accept: "text/html" } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        document.getElementById("main").innerHTML = html;
        open.forEach(function (id) { var d = document.getElementById(id); if (d) d.open = true; });
        document.body.dataset.refreshed = String(Date.now());
      })
      .catch(function () {})
      .then(function () {
        busy = false;
        if (again) { again = false; refresh(); }
      });
  }
  var es = new EventSource(url);
  es.addEventListener("fact", function (e) {
    document.body.dataset.lastEvent = e.lastEventId;
    if (!timer) timer = setTimeout(function () { timer = null; refresh(); }, 200);
  });
  es.onopen = function () { document.body.classList.remove("offline"); };
  es.onerror = function () { document.body.classList.add("offline"); };
})();
