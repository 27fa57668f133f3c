// tavern serve: live updates without a framework. On every "change" (and
// "ages") event of /events, fetch the page's content again (X-Tavern-Fragment) and
// swap it in, keeping what the person is typing (and an edit's revision
// with its text: a save of text based on an older revision must conflict,
// not overwrite the change that came meanwhile). Forms that ask for a
// confirmation confirm() first. Everything works without this script,
// only without live updates.
(function () {
  "use strict";
  var app = document.getElementById("app");
  var busy = false, again = false;
  function setLive(on) {
    var el = document.getElementById("live");
    if (el) { el.textContent = on ? "live" : "reconnecting"; el.className = "live " + (on ? "on" : "off"); }
  }
  function gone(why) {
    var main = document.getElementById("main");
    if (!main) { return; }
    var note = document.getElementById("gone");
    if (!note) {
      note = document.createElement("div");
      note.id = "gone";
    }
    var h = document.createElement("h1"), p = document.createElement("p");
    h.textContent = "This page no longer exists";
    p.className = "empty";
    p.textContent = why.trim() + " (removed or renamed since the page was loaded)";
    note.replaceChildren(h, p);
    // What the person typed stays below the notice, to copy: replacing
    // the page lost an edit in progress when its document moved. A
    // refused save's text (data-kept) is the person's too.
    var typed = Array.prototype.some.call(main.querySelectorAll("textarea, input[type=text], input:not([type])"),
      function (el) { return el.value !== el.defaultValue || el.hasAttribute("data-kept"); });
    if (!typed) { main.replaceChildren(note); } else if (note.parentNode !== main) { main.prepend(note); }
  }
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch(location.href, { headers: { "X-Tavern-Fragment": "1" }, credentials: "same-origin", cache: "no-store" })
      .then(function (r) {
        // 404: the server is up and the page's document is gone; say so
        // rather than "reconnecting" over what it was.
        if (r.status === 404) { return r.text().then(function (t) { gone(t); return null; }); }
        if (!r.ok) { throw new Error(r.status); }
        return r.text();
      })
      .then(function (html) {
        if (html === null) { setLive(true); return; }
        var kept = {}, focus = document.activeElement, focusId = focus && focus.id, sel = null;
        if (focus && focus.id && "selectionStart" in focus) { sel = [focus.selectionStart, focus.selectionEnd]; }
        app.querySelectorAll("textarea[id], input[id]").forEach(function (el) { kept[el.id] = el.value; });
        app.innerHTML = html;
        Object.keys(kept).forEach(function (id) { var el = document.getElementById(id); if (el && kept[id] !== "") { el.value = kept[id]; } });
        if (focusId) {
          var f = document.getElementById(focusId);
          if (f) { f.focus(); if (sel && "setSelectionRange" in f) { try { f.setSelectionRange(sel[0], sel[1]); } catch (e) {} } }
        }
        setLive(true);
      })
      .catch(function () { setLive(false); })
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  document.addEventListener("submit", function (e) {
    var form = e.target, msg = form.getAttribute("data-confirm");
    if (!msg) { return; }
    if (!window.confirm(msg)) { e.preventDefault(); return; }
    var c = form.querySelector("input[name=confirmed]");
    if (c) { c.value = "1"; }
  });
  // A refused edit is the answer to the form's POST (/action): show it
  // at the document's address, which a reload and the refresh fetch.
  var main = document.getElementById("main");
  if (main && main.dataset.here && location.pathname === "/action" && window.history) {
    history.replaceState(null, "", main.dataset.here);
  }
  if (!window.EventSource || !app) { return; }
  var es = new EventSource("/events");
  es.addEventListener("hello", function () { setLive(true); refresh(); });
  es.addEventListener("change", refresh);
  es.addEventListener("ages", refresh); // nothing changed, but ages move on
  es.onerror = function () { setLive(false); };
})();
