// Package web is the browser face of the view model (package view): the
// pages `tavern serve` serves and `tavern export` writes, as HTML or
// Markdown.
//
// # Basics
//
//	srv := web.New(v, web.Options{Hosts: web.LoopbackHosts(ln.Addr())})
//	http.Serve(ln, srv)
//	web.ExportHTML(v, "snapshot/")   // static pages, no server needed
//	web.WriteMarkdown(os.Stdout, snap)
//
// Pages: / (Needs you), /agents and /agents/NAME, /queues (a board by
// state), /items/ID (with its history), /channels and /channels/NAME (with
// an overseer composer), /resources (reservations, tokens, pools),
// /journal (?type= ?agent= ?kind= ?q=), /docs/PATH (a document and its
// edit form). /api/snapshot is the snapshot as JSON, /events the
// server-sent event stream ("change" with the view's version), POST
// /action the actions.
//
// Pages are standard library html/template; markdown bodies go through
// goldmark with raw HTML dropped. The only script is static/app.js
// (embedded): on each change event it fetches the page again with the
// X-Tavern-Fragment header (the server renders the header, nav and main
// only) and swaps it in, keeping what the person is typing, and it asks
// confirm() before actions that want a confirmation. Without script the
// pages work the same, without live updates, and a confirmation page is
// served instead.
//
// # Security
//
// The server is meant for 127.0.0.1: it refuses requests whose Host is not
// the loopback address it listens on (Options.Hosts; a DNS-rebinding page
// cannot reach it). On any other address Options.Token is required on
// every request (?token= once, then an HttpOnly SameSite=Strict cookie).
// Every POST carries the server's CSRF token, which only same-origin pages
// can read, and is refused when the browser marks it cross-site
// (Sec-Fetch-Site, Origin). Actions run through view.View.Do: the
// library's rules, journaled with the acting person. Responses carry a
// Content-Security-Policy that allows only the server's own script and
// style.
//
// # Caveats
//
//   - A live refresh re-renders the whole header, nav and main (the
//     server's cached snapshot makes that cheap); inputs keep their text by
//     element id.
//   - The export lists the items on the board (Options.Column per state),
//     not every item of a 100k-item queue.
package web
