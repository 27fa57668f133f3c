package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultTimeout bounds a whole exchange with the daemon: long enough for
// a sync and a query on a loaded machine, short enough that a stopped
// daemon costs little before the caller answers from the files.
const DefaultTimeout = time.Second

// Call asks the daemon of the store at root to run op with args (any
// JSON value; nil for none) and returns the handler's info (a JSON value)
// and payload. Every error wraps ErrUnavailable: the caller answers from
// the files instead. timeout <= 0 means DefaultTimeout.
func Call(ctx context.Context, root, op string, args any, timeout time.Duration) (info json.RawMessage, payload []byte, err error) {
	h, payload, err := call(ctx, root, op, args, timeout)
	if err != nil {
		return nil, nil, err
	}
	return h.Info, payload, nil
}

// GetStatus asks the daemon of the store at root who it is.
func GetStatus(ctx context.Context, root string, timeout time.Duration) (*Status, error) {
	h, _, err := call(ctx, root, "status", nil, timeout)
	if err != nil {
		return nil, err
	}
	var st Status
	if err := json.Unmarshal(h.Info, &st); err != nil {
		return nil, &Error{Op: "status", Path: root, Err: fmt.Errorf("%w: %v", ErrUnavailable, err)}
	}
	return &st, nil
}

// Stop asks an explicit daemon (tavern daemon start) to stop serving and
// exit. A process that serves besides its own work (tavern watch) refuses.
func Stop(ctx context.Context, root string, timeout time.Duration) error {
	_, _, err := call(ctx, root, "stop", nil, timeout)
	return err
}

func call(ctx context.Context, root, op string, args any, timeout time.Duration) (*Header, []byte, error) {
	fail := func(stage string, err error) (*Header, []byte, error) {
		if !errors.Is(err, ErrUnavailable) {
			err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return nil, nil, &Error{Op: stage, Path: root, Err: err}
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	dev, ino, err := identity(root)
	if err != nil {
		return fail("connect", err)
	}
	req := Request{V: Version, Op: op, Dev: dev, Ino: ino}
	if args != nil {
		if req.Args, err = json.Marshal(args); err != nil {
			return fail("request", err)
		}
	}
	conn, err := dial(root, deadline)
	if err != nil {
		return fail("connect", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if err := conn.SetDeadline(deadline); err != nil {
		return fail("connect", err)
	}
	line, err := json.Marshal(req)
	if err != nil {
		return fail("request", err)
	}
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return fail("request", err)
	}
	r := bufio.NewReaderSize(conn, 64<<10)
	hl, err := r.ReadBytes('\n')
	if err != nil {
		return fail("answer", err)
	}
	var h Header
	if err := json.Unmarshal(hl, &h); err != nil {
		return fail("answer", err)
	}
	if h.V != Version {
		return fail("answer", fmt.Errorf("protocol version %d, want %d", h.V, Version))
	}
	if h.Error != "" {
		return fail(op, errors.New(h.Error))
	}
	if h.N < 0 || h.N > 1<<30 {
		return fail("answer", fmt.Errorf("bad payload size %d", h.N))
	}
	payload := make([]byte, h.N)
	if _, err := io.ReadFull(r, payload); err != nil {
		return fail("answer", err)
	}
	return &h, payload, nil
}
