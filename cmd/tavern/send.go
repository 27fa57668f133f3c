package main

import (
	"errors"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents"
	"github.com/tavernhq/tavern/agents/messages"
)

// asFlag names the acting agent; TAVERN_AGENT (set by `tavern spawn` in a
// child's environment) is the default.
var asFlag = &cli.StringFlag{Name: "as", Usage: "act as `AGENT` (default $TAVERN_AGENT)", EnvVars: []string{"TAVERN_AGENT"}}

func actingAgent(c *cli.Context) (string, error) {
	a := c.String("as")
	if a == "" {
		name := strings.TrimPrefix(c.Command.HelpName, c.App.Name+" ") // "memory add", not "add"
		if name == "" {
			name = c.Command.Name
		}
		return "", usageErr("%s needs --as AGENT (or TAVERN_AGENT)", name)
	}
	return a, nil
}

// textArg is the text from the remaining arguments, or stdin when there are
// none (or the one argument is "-").
func textArg(c *cli.Context, from int) (string, error) {
	args := c.Args().Slice()[from:]
	if len(args) == 0 || (len(args) == 1 && args[0] == "-") {
		if f, ok := c.App.Reader.(*os.File); ok {
			if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
				return "", usageErr("no text: give it as an argument or on stdin")
			}
		}
		b, err := io.ReadAll(c.App.Reader)
		return string(b), err
	}
	return strings.Join(args, " "), nil
}

func init() {
	mapExit(messages.ErrEmptyMessage, exitUsage)
	mapExit(messages.ErrMessageTooLarge, exitUsage)
	mapExit(messages.ErrBadMessage, exitUsage)
	mapExit(messages.ErrArchived, exitConflict)
	mapExit(agents.ErrNotEmpty, exitConflict)
	mapExit(messages.ErrBadChunk, exitInvalid)
	register(&cli.Command{
		Name:      "send",
		Usage:     "send a message to a channel",
		ArgsUsage: "CHANNEL [TEXT...]",
		Description: `Appends a message to messages/CHANNEL/. Without TEXT the message is read from
stdin. Direct messages go to the channel @AGENT. The channel is created on
first use; sending to an archived channel fails (exit 4).

Examples:
   tavern send research "Proposal: stateless context assembly" --as zealot-1
   make test 2>&1 | tavern send @lead --as ci`,
		Flags: []cli.Flag{asFlag, jsonFlag},
		Action: func(c *cli.Context) error {
			if c.NArg() < 1 {
				return usageErr("send takes CHANNEL [TEXT...]")
			}
			as, err := actingAgent(c)
			if err != nil {
				return err
			}
			text, err := textArg(c, 1)
			if err != nil {
				return err
			}
			s, err := openStore(c)
			if err != nil {
				return err
			}
			id, err := messages.SendMessage(s, c.Args().First(), as, text)
			if err != nil {
				if errors.Is(err, messages.ErrEmptyMessage) {
					return withCode(exitUsage, err)
				}
				return err
			}
			if c.Bool("json") {
				return printJSON(c, map[string]string{"id": id, "channel": c.Args().First()})
			}
			outf(c, "%s\n", id)
			return nil
		},
	})
}
