package plans_test

import (
	"strings"
	"testing"

	"github.com/tavernhq/tavern/queues/plans"
)

// FuzzParsePlan: Parse never panics, every task's Offset holds its box
// state in the input, parents come before their children, and keys are
// unique (a box's identity).
func FuzzParsePlan(f *testing.F) {
	for _, seed := range []string{
		"- [ ] a\n  - [x] b\n    * [-] c\n1. [ ] d (after: a)\n",
		"```\n- [ ] fenced\n```\n- [ ] real\r\n\ttext under\n",
		"- [ ] x\n- [ ] x\n- [X] ~~y~~\n",
		"- [ ] x\n- [ ] x\n- [ ] x (2)\n",
		"- [ ]\n-[ ] no\n  - [ ] (gate: human)\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		tasks, err := plans.Parse([]byte(body))
		if err != nil {
			return
		}
		keys := map[string]bool{}
		for i, tk := range tasks {
			if tk.Index != i || tk.Offset < 0 || tk.Offset >= len(body) {
				t.Fatalf("task %d: index %d offset %d", i, tk.Index, tk.Offset)
			}
			c := body[tk.Offset]
			if c == 'X' {
				c = 'x'
			}
			if c != tk.State {
				t.Fatalf("task %d: offset %d holds %q, state %q", i, tk.Offset, body[tk.Offset], tk.State)
			}
			if tk.Parent >= i {
				t.Fatalf("task %d: parent %d is not before it", i, tk.Parent)
			}
			if keys[tk.Key] {
				t.Fatalf("duplicate key %q", tk.Key)
			}
			keys[tk.Key] = true
			if strings.Contains(tk.Title, "\n") {
				t.Fatalf("title %q spans lines", tk.Title)
			}
		}
	})
}
