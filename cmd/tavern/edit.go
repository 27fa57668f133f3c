package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/docstore"
)

func init() {
	register(&cli.Command{
		Name:      "edit",
		Usage:     "edit a document in $EDITOR; nothing is saved until it is valid",
		ArgsUsage: "REF",
		Description: `Opens a copy of the document in $VISUAL or $EDITOR (default vi). When the editor
exits the copy is validated; on errors they are shown and you are offered to
edit again. Nothing is saved until the document is valid. If someone else
changed the document meanwhile, the save is refused (exit 4) and your copy is
kept so you can merge by hand.

Example:
   EDITOR=nano tavern edit agents/alice`,
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageErr("edit takes one REF")
			}
			s, err := openStore(c)
			if err != nil {
				return err
			}
			rel, err := resolveRef(s, c.Args().First())
			if err != nil {
				return err
			}
			orig, err := s.Get(rel)
			if err != nil {
				return err
			}
			tmp, err := os.CreateTemp("", "tavern-edit-*-"+filepath.Base(rel))
			if err != nil {
				return err
			}
			tmpName := tmp.Name()
			_, err = tmp.Write(orig.Bytes())
			tmp.Close()
			if err != nil {
				return err
			}
			in := bufio.NewReader(c.App.Reader)
			for {
				if err := runEditor(c, tmpName); err != nil {
					return err
				}
				data, err := os.ReadFile(tmpName)
				if err != nil {
					return err
				}
				if bytes.Equal(data, orig.Bytes()) {
					os.Remove(tmpName)
					outf(c, "no changes\n")
					return nil
				}
				verr := docstore.CheckEdit(rel, data)
				if verr == nil {
					if _, err := s.SaveEdit(rel, orig.Rev, data); err != nil {
						if errors.Is(err, docstore.ErrConflict) {
							errf(c, "tavern: your edit is kept in %s\n", tmpName)
						}
						return err
					}
					os.Remove(tmpName)
					outf(c, "saved %s\n", rel)
					return nil
				}
				errf(c, "%v\n", verr)
				errf(c, "Edit again? [Y/n] ")
				answer, rerr := in.ReadString('\n')
				if rerr != nil || strings.HasPrefix(strings.ToLower(strings.TrimSpace(answer)), "n") {
					errf(c, "\nnothing saved; your edit is kept in %s\n", tmpName)
					return withCode(exitInvalid, errSilent)
				}
			}
		},
	})
}

func runEditor(c *cli.Context, file string) error {
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	cmd := exec.CommandContext(c.Context, "sh", "-c", editor+` "$1"`, "editor", file)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.App.Reader, c.App.Writer, c.App.ErrWriter
	if f, ok := c.App.Reader.(*os.File); ok {
		cmd.Stdin = f
	}
	if err := cmd.Run(); err != nil {
		return errors.New("editor failed: " + err.Error())
	}
	return nil
}
