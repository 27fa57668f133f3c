// Package daemon is Tavern's query daemon: a process that keeps a
// watching projection of a store (watcher.Projection) answers one-shot
// reads over a unix socket, the way git's fsmonitor spares `git status`
// a walk of the work tree. Any long-running Tavern process (`tavern
// watch`, `serve`, `ui`, a pool, the verifier) or an explicit `tavern
// daemon start` can serve; one at a time does.
//
// # Basics
//
//	srv, err := daemon.Start(p, daemon.Options{Who: "tavern watch", Handlers: hs})
//	defer srv.Close()
//
//	info, payload, err := daemon.Call(ctx, root, "ls", args, time.Second)
//	if errors.Is(err, daemon.ErrUnavailable) { /* answer from the files */ }
//
// The server takes an exclusive flock on .locks/daemon.lock (the kernel
// drops it when the process dies), then binds .daemon.sock in the store
// root: bound under a temporary name and renamed into place, so a client
// finds the old socket or the new one, never none while one serves. A
// process that finds the lock taken retries every Options.Retry, so one
// takes over when the serving process ends.
//
// Freshness. Before it runs a handler, the server syncs its projection
// (watcher.Projection.Sync): it creates a marker file in the store root
// and waits for the marker's inotify event. The kernel queues events in
// order, so by then every change completed before the request was sent
// (by this client, by any other process, by an editor) has been read and
// applied. The answer carries the number of that sync (Header.Gen). A
// projection that polls (network filesystems, no inotify) cannot sync
// this way and never serves.
//
// Identity. A request names the store root's device and inode as the
// client sees them; the server answers only if they are its own and its
// root path still leads to them (a store moved, replaced or copied with
// its socket is another store).
//
// # Caveats
//
//   - Call fails with an error wrapping ErrUnavailable whenever the
//     answer cannot be trusted or did not come in time: no socket, a
//     socket nobody listens on (a killed daemon), a stopped daemon (the
//     timeout), another store, another protocol version, a failed sync.
//     The caller then answers from the files: a daemon can make a read
//     faster, never wrong.
//   - A file that a writer still has open when the request comes (a
//     write in progress) is answered as it was before that write, as the
//     watcher settles it (watcher.FSOptions.Settle).
//   - Socket paths are limited to about 100 bytes; a longer store path is
//     reached through /proc/self/fd (Linux).
//   - Handlers run concurrently, one goroutine per connection.
package daemon
