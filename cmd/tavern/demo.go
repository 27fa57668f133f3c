package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
)

func init() {
	register(&cli.Command{
		Name:  "demo",
		Usage: "run an end-to-end demo in a temporary directory",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "keep", Usage: "keep the demo directory"}},
		Action: func(c *cli.Context) error {
			dir, err := os.MkdirTemp("", "tavern-demo-")
			if err != nil {
				return err
			}
			if !c.Bool("keep") {
				defer os.RemoveAll(dir)
			}
			store := filepath.Join(dir, docstore.DirName)
			step := func(args ...string) error {
				outf(c, "\n$ tavern %s\n", joinArgs(args))
				code := run(c.Context, append([]string{"tavern", "--dir", store}, args...), c.App.Reader, c.App.Writer, c.App.Writer)
				if code != 0 {
					outf(c, "(exit %d)\n", code)
				}
				return nil
			}
			for _, s := range [][]string{
				{"init", "--name", "demo"},
				{"new", "agent", "alice", "role=reviewer"},
				{"new", "agent", "bob", "role=coder", "state=working"},
				{"set", "agents/alice", "state=working", "spawns=1"},
				{"ls", "agents", "--where", "state=working", "--sort", "name"},
				{"show", "agents/alice"},
				{"check"},
			} {
				if err := step(s...); err != nil {
					return err
				}
			}
			outf(c, "\nDemo store in %s\n", store)
			return nil
		},
	})
}

func joinArgs(args []string) string {
	out := ""
	for i, a := range args {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%s", a)
	}
	return out
}
