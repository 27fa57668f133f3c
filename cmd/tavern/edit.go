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

	"github.com/tavernhq/tavern/agents/messages"
	"github.com/tavernhq/tavern/docstore"
)

func newEditCommand() *cli.Command {
	return &cli.Command{
		Name:      "edit",
		Usage:     "edit a document in $EDITOR; nothing is saved until it is valid",
		ArgsUsage: "REF",
		Description: `Opens a copy of the document in $VISUAL or $EDITOR (default vi). When the editor
exits the copy is validated; on errors they are shown and you are offered to
edit again. Nothing is saved until the document is valid and the write obeys
the store's rules (the agent state machine; an agent may not change its own
commitment's assertion or result): a refused write is shown the same way and
exits 4 if you do not edit again. A legal change of an agent's state is a
transition like ` + "`tavern agent state`" + `'s: applied_state and state_changed follow
it in the saved file and it is journaled as agent.state. If someone else changed the document
meanwhile, the save is refused (exit 4) and your copy is kept so you can
merge by hand. An editor that exits non-zero (vim's :cq) saves nothing
(exit 1); its copy is kept, and named, only if it holds an edit. With
--json nothing is asked: an invalid or refused edit is its JSON error
(exit 5 or 4) and a JSON warning names the kept copy.

Example:
   EDITOR=nano tavern edit agents/alice`,
		Action: runEdit,
	}
}

func runEdit(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageErr("edit takes one REF")
	}
	s, err := openStoreAnyConfig(c)
	if err != nil {
		return err
	}
	rel, err := resolveRef(s, c.Args().First())
	if err != nil {
		return err
	}
	if err := configFor(s, rel); err != nil {
		return err
	}
	if err := messages.CheckRead(s, "edit", envAgent(), rel); err != nil {
		return err
	}
	orig, err := s.Get(rel)
	if err != nil {
		return s.NotFound("edit", rel, err)
	}
	tmpName, err := editCopy(orig)
	if err != nil {
		return err
	}
	in := bufio.NewReader(c.App.Reader)
	for {
		if err := runEditor(c, tmpName); err != nil {
			// An editor that fails (vim's :cq, a crash) saves nothing.
			// Its copy is kept if it holds an edit, else removed.
			if data, rerr := os.ReadFile(tmpName); rerr == nil && !bytes.Equal(data, orig.Bytes()) {
				keptCopy(c, tmpName)
			} else {
				os.Remove(tmpName)
			}
			return err
		}
		data, err := os.ReadFile(tmpName)
		if err != nil {
			return err
		}
		if bytes.Equal(data, orig.Bytes()) {
			os.Remove(tmpName)
			if c.Bool("json") {
				return printJSON(c, map[string]any{"rel": rel, "saved": false, "rev": orig.Rev})
			}
			outf(c, "no changes\n")
			return nil
		}
		verr := docstore.CheckEdit(rel, data)
		if verr == nil {
			saved, err := s.SaveEdit(rel, orig.Rev, data)
			switch {
			case err == nil:
				os.Remove(tmpName)
				if c.Bool("json") {
					return printJSON(c, map[string]any{"rel": rel, "saved": true, "rev": saved.Rev})
				}
				outf(c, "saved %s\n", rel)
				return nil
			case errors.Is(err, docstore.ErrConflict):
				keptCopy(c, tmpName)
				return err
			case !errors.Is(err, docstore.ErrRefused):
				return err
			}
			verr = err // a rule refused it: edit again, as for an invalid edit
		}
		if c.Bool("json") {
			// No prompt under --json: the caller reads JSON, not a
			// question. The error is its JSON object; the copy is kept.
			keptCopy(c, tmpName)
			return verr
		}
		errf(c, "%v%s\n", verr, hint(verr))
		errf(c, "Edit again? [Y/n] ")
		answer, rerr := in.ReadString('\n')
		if rerr != nil || strings.HasPrefix(strings.ToLower(strings.TrimSpace(answer)), "n") {
			errf(c, "\nnothing saved; your edit is kept in %s\n", tmpName)
			return withCode(exitCode(verr), errSilent)
		}
	}
}

// keptCopy says where the unsaved copy is: text, or under --json a
// warning object on stderr.
func keptCopy(c *cli.Context, tmpName string) {
	if c.Bool("json") {
		warn(c, errors.New("your edit is kept in "+tmpName))
		return
	}
	errf(c, "tavern: your edit is kept in %s\n", tmpName)
}

// editCopy writes the document to a temporary file for the editor.
func editCopy(orig *docstore.Doc) (string, error) {
	tmp, err := os.CreateTemp("", "tavern-edit-*-"+filepath.Base(orig.Path))
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(orig.Bytes())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	return tmp.Name(), err
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
