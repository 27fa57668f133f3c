package kit

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// However much waits on the person, their prime stays within PrimeTokens,
// keeps the commands, says how many more there are and where, and a long
// why never cuts off what to do.
func TestPersonPrimeBudget(t *testing.T) {
	e := newEnv(t)
	var needs []PersonNeed
	for i := range 40 {
		needs = append(needs, PersonNeed{Key: fmt.Sprint("gate:g", i), Kind: "gate",
			What: fmt.Sprintf("item %q waits for your approval", strings.Repeat("t", 60)),
			Why:  strings.Repeat("a very long reason ", 30),
			Do:   fmt.Sprintf("approve it (tavern approve gate-%02d)", i)})
	}
	p := BuildPersonPrime(e.Store, "pat", needs, PersonPrimeOptions{Now: time.Now()})
	text := p.Text()
	if n := tokens(text); n > PrimeTokens {
		t.Errorf("%d tokens, want at most %d:\n%s", n, PrimeTokens, text)
	}
	for _, want := range []string{"you are the person (pat)", "## Needs you", "tavern approve gate-00)", "more: `tavern ui --json --lens needs`", "## Commands", "tavern answer QUESTION"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if len(p.Needs) != 40 {
		t.Errorf("JSON has %d needs, want all 40", len(p.Needs))
	}
	empty := BuildPersonPrime(e.Store, "", nil, PersonPrimeOptions{})
	if got := empty.Text(); !strings.Contains(got, "Nothing waits on you") || !strings.Contains(got, "(user)") || empty.Needs == nil || empty.Next == nil {
		t.Errorf("nothing waiting: %+v\n%s", empty, got)
	}
}
