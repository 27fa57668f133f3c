// Package tui is the terminal face of the view model (package view): the
// Bubble Tea program `tavern ui` runs. It lives beside the model it
// renders rather than under cmd/ so that it is tested like a library
// (teatest drives Model directly); cmd/tavern only checks for a terminal
// and calls Run.
//
// # Basics
//
//	v, _ := view.Open(store, view.Options{Watch: true})
//	err := tui.Run(ctx, v, tui.Options{}, os.Stdin, os.Stdout)
//
// Tabs: Needs you, Agents, Queues (a board by state: each queue's pending,
// claimed, done and dead items), Messages, Journal, Resources
// (reservations, tokens, pools); a list on the left and the selected
// entry's detail on the right, markdown rendered by a small goldmark walker (markdown.go). Keys are
// vim and arrows (j/k, h/l, g/G), tab or 1-6 for tabs, / to filter.
// Actions (a answer, r retry, x release, R reap, s respawn, m message,
// e edit) ask for their input, then a y/N confirmation, then run
// view.View.Do: the library's rules, journaled with the person.
//
// Live: the model waits on View.Updates in a command and takes a new
// snapshot on each update; no polling of the store. The selection stays
// on the same entry (by key) across updates.
//
// Edit is `tavern edit`'s loop: the document is copied to a temp file,
// $VISUAL or $EDITOR (default vi) runs on it with the terminal handed
// over (tea.ExecProcess), the text is checked, and on a problem the person
// is asked "Edit again? [Y/n]"; nothing is saved until the document is
// valid, and a save over someone else's change is refused with the copy
// kept.
//
// # Caveats
//
//   - Bubble Tea v2 (charm.land). Linking it must cost the other commands
//     nothing: v1 asked the terminal for its background colour in a
//     package init, so every `tavern` command on a pty that does not
//     answer (CI, agent tools, editor shells) waited 5 s and left the
//     query on the screen. The UI asks for the background once it runs
//     (Init, tea.RequestBackgroundColor) and switches the markdown to
//     light colours if the answer is a light one; no answer, dark colours.
//   - Text input is one line (textinput): answers and messages with line
//     breaks go through `tavern answer` or `tavern send`.
//   - The detail pane re-reads the selected document (agent bodies, the
//     last messages of a channel) when the selection or the snapshot
//     changes.
package tui
