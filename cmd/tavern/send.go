package main

import (
	"github.com/urfave/cli/v2"

	"github.com/tavernhq/tavern/agents/messages"
)

func newSendCommand() *cli.Command {
	return &cli.Command{
		Name:      "send",
		Usage:     "send a message to a channel",
		ArgsUsage: "CHANNEL [TEXT...]",
		Description: `Appends a message to messages/CHANNEL/. Without TEXT the message is read from
stdin. Direct messages go to the channel @AGENT. The channel is created on
first use; sending to an archived channel fails (exit 4).

Examples:
   tavern send research "Proposal: stateless context assembly" --as zealot-1
   make test 2>&1 | tavern send @lead --as ci`,
		Flags:  []cli.Flag{asFlag(), jsonFlag()},
		Action: runSend,
	}
}

func runSend(c *cli.Context) error {
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
		return err
	}
	if c.Bool("json") {
		return printJSON(c, map[string]string{"id": id, "channel": c.Args().First()})
	}
	outf(c, "%s\n", id)
	return nil
}
