package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/usage"
	"github.com/tavernhq/tavern/agents/view"
	"github.com/tavernhq/tavern/agents/view/web"
	"github.com/tavernhq/tavern/docstore"
)

// DefaultListen is where `tavern serve` listens without --listen.
const defaultListen = "127.0.0.1:7878"

// personFlag names the person acting through a view: the sender of its
// messages, answered_by of its answers, the agent of its journal events.
// A new flag per command: urfave/cli keeps parse state in the flag. The
// default is said once: no EnvVars, or help would repeat it.
func personFlag() cli.Flag {
	return &cli.StringFlag{Name: "as", Usage: "act as `PERSON` (default: $TAVERN_USER, else the login name)"}
}

func pollFlag() cli.Flag {
	return &cli.DurationFlag{Name: "poll", Usage: "poll every `DUR` instead of using inotify (0: inotify; network filesystems are detected)", Action: notNegative("poll")}
}

func newServeCommand() *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the live views in a browser (127.0.0.1 by default)",
		Description: `Serves the views of the store as a local web app: Needs you (what waits on a
person, with the action that unblocks it), Agents, Queues (a board by state),
items with their history, Channels with an overseer composer, Reservations,
tokens and pools, and the Journal with filters. Pages update live (server-sent
events) without a reload. Actions (answer, retry, release, reap, respawn,
send, edit, approve, reject) go through the same rules as the commands and
are journaled as view.action with the acting person (--as). Approve and
reject are refused, as tavern approve is, when the request on loopback comes
from an agent's process (or one that cannot be identified).

It listens on ` + defaultListen + `. Another address only with --listen; an
address other than loopback then requires the token printed at start-up
(open the printed URL once; the browser keeps it in a cookie). The pages
are also at /api/snapshot as JSON (the same as tavern ui --json). The
first line on stdout is the URL to open; with --json it is one JSON object
(url, listen, root, person, and token when one is needed).

Examples:
   tavern serve
   tavern serve --listen 127.0.0.1:0 --as pat
   tavern serve --listen 0.0.0.0:7878`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "listen", Aliases: []string{"addr"}, Value: defaultListen, Usage: "listen on `ADDR` (host:port; port 0 picks a free one)"},
			personFlag(), pollFlag(),
		},
		Action: runServe,
	}
}

func runServe(c *cli.Context) error {
	if c.NArg() != 0 {
		return usageErr("serve takes no arguments")
	}
	addr := c.String("listen")
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErr("--listen %q: want host:port (%v)", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return usageErr("--listen %q: %v", addr, err)
	}
	longRunningStart()
	v, err := openView(c, true, "web")
	if err != nil {
		return err
	}
	defer v.Close()
	defer serveQueries(c, v.Store(), v.Projection(), "tavern serve")()
	longRunningMemory(viewTrimAfter)
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		// Most often a tavern serve already running.
		return fmt.Errorf("%w (another tavern serve? --listen 127.0.0.1:0 picks a free port)", err)
	}
	if err != nil {
		return err
	}
	// Other machines' changes arrive in the background when the store
	// syncs (sync.go), and the pages show them as they land.
	defer startBackgroundSync(c, v.Store(), nil)()
	opt := web.Options{}
	url := "http://" + ln.Addr().String() + "/"
	if web.IsLoopback(ln.Addr().String()) {
		opt.Hosts = web.LoopbackHosts(ln.Addr())
	} else {
		// Reachable from other machines: every request needs the token.
		opt.Token = web.RandomToken()
		host, port, _ := net.SplitHostPort(ln.Addr().String())
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			if h, err := os.Hostname(); err == nil {
				host = h
			}
		}
		url = "http://" + net.JoinHostPort(host, port) + "/?token=" + opt.Token
	}
	srv := &http.Server{Handler: web.New(v, opt), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return c.Context }}
	// The URL line is the ready signal: everything is set up, requests
	// are served from here on. Under --json it is one JSON object, for
	// a script to read the address (and token) from.
	if c.Bool("json") {
		ready := map[string]any{"url": url, "listen": ln.Addr().String(), "root": v.Store().Root(), "person": v.Person()}
		if opt.Token != "" {
			ready["token"] = opt.Token
		}
		jsonLine(c, ready)
	} else {
		outf(c, "%s\n", url)
	}
	if opt.Token != "" {
		errf(c, "tavern: serving %s on %s: not loopback, so every request needs the token %s\n", v.Store().Root(), ln.Addr(), opt.Token)
	} else {
		errf(c, "tavern: serving %s as %s; open %s (Ctrl-C stops)\n", v.Store().Root(), v.Person(), url)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-c.Context.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// openView opens the store's view as the person of --as. The store is
// opened without the CLI's journal observer: the view journals its own
// writes with the person as the acting agent.
func openView(c *cli.Context, watch bool, face string) (*view.View, error) {
	if err := emptyPerson(c, "as"); err != nil {
		return nil, err
	}
	dir, err := storeDir(c)
	if err != nil {
		return nil, err
	}
	s, err := docstore.Open(dir)
	if err != nil {
		return nil, err
	}
	return view.Open(s, view.Options{Person: c.String("as"), Face: face, Watch: watch, Poll: c.Duration("poll"),
		Needs: []view.NeedsSource{budgetNeeds(s)}})
}

// budgetNeeds lists the usage budgets spent today in Needs you, with the
// pools they paused (package view does not know the ledger).
func budgetNeeds(s *docstore.Store) view.NeedsSource {
	return func(snap *view.Snapshot) []view.Need {
		spent, _ := usage.Spent(s, snap.Time.Time) // a ledger it cannot read: the pools are not held either
		var out []view.Need
		for _, st := range spent {
			scope := "every pool and spawns of no pool"
			if st.Pool != "" {
				scope = "pool " + st.Pool
			}
			var paused []string
			for _, p := range snap.Pools {
				if p.State == "paused" && (st.Pool == "" || st.Pool == p.Name) {
					paused = append(paused, p.Name)
				}
			}
			why := fmt.Sprintf("spent today (UTC): %s; %s take no new items until tomorrow or until it is raised", strings.Join(st.Over, ", "), scope)
			if len(paused) > 0 {
				why += "; paused now: " + strings.Join(paused, ", ")
			}
			out = append(out, view.Need{Key: "budget:" + st.Name, Kind: view.NeedBudget, Severity: 2,
				What: fmt.Sprintf("budget %s is spent for %s", st.Name, st.Day), Why: why,
				Do:      "raise it, or wait for the next day (tavern budget set " + st.Name + " --cost N | --tokens N | --time DUR)",
				Path:    st.Path,
				Actions: []view.Action{{Name: view.ActEdit, Label: "Edit budget", Target: st.Path, Input: "document"}}})
		}
		return out
	}
}

// emptyPerson refuses a person flag given empty (--by "$ME" unset): the
// login name in its place would record a person nobody named.
func emptyPerson(c *cli.Context, flag string) error {
	if c.IsSet(flag) && strings.TrimSpace(c.String(flag)) == "" {
		return usageErr("--%s %q: empty; name the person (or leave --%s out for $TAVERN_USER, else the login name)", flag, c.String(flag), flag)
	}
	return nil
}
