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
stdin. Direct messages go to the channel @AGENT. The channel must exist
(` + "`tavern channel create`" + `, or --create here); an unknown channel or agent is
refused (exit 3, with the nearest names). --create does not make a channel
whose name is near an existing one's (gneral beside general: exit 2, did
you mean; ` + "`tavern channel create`" + ` makes it on purpose). Sending to an archived
channel fails (exit 4).

Examples:
   tavern send research "Proposal: stateless context assembly" --as zealot-1
   make test 2>&1 | tavern send @lead --as ci`,
		Flags: []cli.Flag{asFlag(), jsonFlag(),
			&cli.BoolFlag{Name: "create", Usage: "create CHANNEL if it does not exist"}},
		Action: runSend,
	}
}

func runSend(c *cli.Context) error {
	if c.NArg() < 1 {
		return usageErr("send takes CHANNEL [TEXT...]")
	}
	s, err := openStore(c)
	if err != nil {
		return err
	}
	as, err := actorOf(c, s)
	if err != nil {
		return err
	}
	// The channel first: a typo is refused before stdin is read.
	if !c.Bool("create") {
		if err := messages.CheckChannel(s, c.Args().First()); err != nil {
			return err
		}
	}
	text, err := textArg(c, 1)
	if err != nil {
		return err
	}
	id, err := messages.Send(s, c.Args().First(), as.Name, text, messages.SendOptions{Create: c.Bool("create")})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return printJSON(c, map[string]string{"id": id, "channel": c.Args().First()})
	}
	outf(c, "%s\n", id)
	return nil
}
