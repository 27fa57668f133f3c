package kit

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// readAll reads r to its end on another goroutine; the channel gets the
// error that ended it.
func readAll(r io.Reader) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(r)
		done <- err
	}()
	return done
}

func ended(tb testing.TB, done <-chan error) bool {
	tb.Helper()
	select {
	case err := <-done:
		if err != nil {
			tb.Fatalf("read: %v", err)
		}
		return true
	case <-time.After(100 * time.Millisecond):
		return false
	}
}

// TestStdioTransportHoldsEOF: the end of the input reaches the server only
// once every request read has been answered, or cancelled by the client,
// or once answers can no longer be written.
func TestStdioTransportHoldsEOF(t *testing.T) {
	const requests = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":"two","method":"tools/call","params":{"name":"prime"}}
`
	newPair := func(in string, out io.Writer) (*drainingReader, *answerWriter) {
		p := &pendingCalls{ids: map[string]bool{}}
		p.idle = newCond(p)
		return &drainingReader{r: strings.NewReader(in), p: p}, &answerWriter{w: out, p: p}
	}

	t.Run("answered", func(t *testing.T) {
		r, w := newPair(requests, io.Discard)
		done := readAll(r)
		if ended(t, done) {
			t.Fatal("input ended with two requests unanswered")
		}
		// Written in two pieces: an answer counts once its line is whole.
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":"tw`))
		if ended(t, done) {
			t.Fatal("input ended with request \"two\" unanswered")
		}
		w.Write([]byte(`o","result":{}}` + "\n"))
		if !ended(t, done) {
			t.Fatal("every request answered, and the input has not ended")
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		in := requests + `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"two"}}` + "\n"
		r, w := newPair(in, io.Discard)
		done := readAll(r)
		if ended(t, done) {
			t.Fatal("input ended with request 1 unanswered")
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
		if !ended(t, done) {
			t.Fatal("the unanswered request was cancelled, and the input has not ended")
		}
	})
	t.Run("nobody reads", func(t *testing.T) {
		r, w := newPair(requests, failingWriter{})
		done := readAll(r)
		if ended(t, done) {
			t.Fatal("input ended with two requests unanswered")
		}
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"))
		if !ended(t, done) {
			t.Fatal("answers cannot be written, and the input has not ended")
		}
	})
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }
