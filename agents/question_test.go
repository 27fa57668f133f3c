package agents

import (
	"context"
	"testing"
	"time"
)

func TestAskAnswerStates(t *testing.T) {
	m := newManager(t)
	mustAgent(t, m, AgentSpec{Name: "boss"})
	mustAgent(t, m, AgentSpec{Name: "kid", Parent: "boss"})
	m.Transition("kid", Working, TransitionOptions{})

	q, err := m.Ask("kid", "parent", 1, "Which database?")
	if err != nil {
		t.Fatal(err)
	}
	if q.To != "boss" || q.From != "kid" || q.Status != QuestionOpen {
		t.Fatalf("question = %+v", q)
	}
	if a, _ := m.GetAgent("kid"); a.State != Waiting {
		t.Fatalf("asker state = %s, want waiting", a.State)
	}
	open, _ := m.Questions("boss", true)
	if len(open) != 1 || open[0].Text != "Which database?" {
		t.Fatalf("boss's questions = %v", open)
	}
	if user, _ := m.Questions(User, true); len(user) != 0 {
		t.Fatalf("user sees %v", user)
	}
	if _, err := m.Answer(q.ID, "Postgres", "boss"); err != nil {
		t.Fatal(err)
	}
	if a, _ := m.GetAgent("kid"); a.State != Working {
		t.Fatalf("asker state after answer = %s, want working", a.State)
	}
	_, err = m.Answer(q.ID, "again", "boss")
	wantErr(t, err, ErrAnswered)
	if n := len(events(t, m, "question.answered")); n != 1 {
		t.Errorf("%d answered events", n)
	}
	// No parent: straight to the user.
	q2, _ := m.Ask("boss", "", 0, "Ship it?")
	if q2.To != User {
		t.Errorf("parentless question went to %s", q2.To)
	}
}

func TestBubbleEscalates(t *testing.T) {
	m := newManager(t)
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m.Now = func() time.Time { return now }
	mustAgent(t, m, AgentSpec{Name: "root"})
	mustAgent(t, m, AgentSpec{Name: "mid", Parent: "root"})
	mustAgent(t, m, AgentSpec{Name: "leaf", Parent: "mid"})
	q, _ := m.Ask("leaf", "parent", 0, "help?")

	moved, due, err := m.Bubble(10 * time.Minute)
	if err != nil || len(moved) != 0 || !due.Equal(now.Add(10*time.Minute)) {
		t.Fatalf("early bubble: %v %v %v", moved, due, err)
	}
	for i, want := range []string{"root", User} {
		now = now.Add(10 * time.Minute)
		moved, _, err = m.Bubble(10 * time.Minute)
		if err != nil || len(moved) != 1 || moved[0].To != want || moved[0].Hops != i+1 {
			t.Fatalf("bubble %d: %v %v, want to %s", i+1, moved, err, want)
		}
	}
	now = now.Add(time.Hour)
	if moved, _, _ := m.Bubble(10 * time.Minute); len(moved) != 0 {
		t.Fatalf("bubbled past the user: %v", moved)
	}
	got, _ := m.GetQuestion(q.ID)
	if got.AskedTo != "mid" || got.To != User || got.Hops != 2 {
		t.Errorf("question = %+v", got)
	}
	if n := len(events(t, m, "question.bubbled")); n != 2 {
		t.Errorf("%d bubbled events", n)
	}
}

func TestWaitAnswerWokenByWatcher(t *testing.T) {
	m := newManager(t)
	q, _ := m.Ask("", "user", 0, "ok?")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan *Question, 1)
	errc := make(chan error, 1)
	go func() {
		a, err := m.WaitAnswer(ctx, q.ID)
		errc <- err
		got <- a
	}()
	if _, err := m.Answer(q.ID, "yes", ""); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if a := <-got; a.Answer != "yes" || a.AnsweredBy != User {
		t.Errorf("answer = %+v", a)
	}
	// Unanswered: the deadline ends the wait.
	q2, _ := m.Ask("", "user", 0, "still there?")
	short, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	_, err := m.WaitAnswer(short, q2.ID)
	wantErr(t, err, context.DeadlineExceeded)
}
