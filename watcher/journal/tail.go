package journal

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// sinceSlack is how far out of time order Tail expects appends to be.
const sinceSlack = time.Minute

// tailBlock is how much of a day file Tail reads at a time, from the end.
const tailBlock = 256 << 10

// Tail returns the last n events of the journal that match f, oldest
// first, and the cursor after the last complete line: Follow from it to
// get what comes next without a gap or a repeat. It reads day files from
// the newest backwards, in blocks from the end, so its cost is the size of
// the tail it returns, not of the history (Read scans every line). A line
// still being written is left out (it is Follow's). Malformed lines are
// skipped; Read reports them. n <= 0 returns no events, only the cursor.
// With f.Since, reading stops at the first event more than a minute older
// than Since (appends from several processes are in time order up to
// their clock skew), so a window costs its own size.
func Tail(root string, n int, f Filter) ([]Event, Cursor, error) {
	n = max(n, 0)
	dir := filepath.Join(root, Dir)
	days, err := journalDays(dir)
	if err != nil || len(days) == 0 {
		return nil, Cursor{}, err
	}
	var out []Event // newest first while collecting
	var cur Cursor
	for i := len(days) - 1; i >= 0; i-- {
		day := days[i]
		if !f.Since.IsZero() && day < f.Since.UTC().Format("2006-01-02") {
			break
		}
		end, last, err := tailDay(filepath.Join(dir, day+".jsonl"), n, f, &out)
		if err != nil {
			return nil, Cursor{}, err
		}
		if i == len(days)-1 {
			cur = Cursor{Day: day, Offset: end, last: last}
		}
		if len(out) >= n {
			break
		}
	}
	slices.Reverse(out)
	return out, cur, nil
}

// tailDay appends to out, newest first, matching events of one day file
// until out holds n, and returns the offset after the file's last complete
// line, and that line's mark.
func tailDay(path string, n int, f Filter, out *[]Event) (int64, lineMark, error) {
	fh, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return 0, lineMark{}, nil
		}
		return 0, lineMark{}, err
	}
	defer fh.Close()
	end, err := tailLines(fh, n, f, out)
	if err != nil {
		return 0, lineMark{}, err
	}
	last, err := markAt(fh, end)
	return end, last, err
}

func tailLines(fh *os.File, n int, f Filter, out *[]Event) (int64, error) {
	fi, err := fh.Stat()
	if err != nil {
		return 0, err
	}
	pos := fi.Size()
	var rest []byte // the start of a line whose beginning is in an earlier block
	end := int64(-1)
	for pos > 0 {
		start := max(pos-tailBlock, 0)
		buf := make([]byte, pos-start, int(pos-start)+len(rest))
		if _, err := fh.ReadAt(buf, start); err != nil && err != io.EOF {
			return 0, err
		}
		buf = append(buf, rest...)
		pos = start
		if end < 0 {
			// Everything after the last newline is a line being written.
			nl := bytes.LastIndexByte(buf, '\n')
			if nl < 0 {
				if start == 0 {
					return 0, nil
				}
				rest = buf
				continue
			}
			end = start + int64(nl) + 1
			buf = buf[:nl+1]
		}
		// Lines wholly inside buf, newest first; the first one may be
		// cut by the block start unless the block starts the file.
		lines := bytes.Split(bytes.TrimSuffix(buf, []byte("\n")), []byte("\n"))
		first := 0
		if start > 0 {
			rest, first = lines[0], 1
		} else {
			rest = nil
		}
		for j := len(lines) - 1; j >= first; j-- {
			if len(*out) >= n {
				return end, nil
			}
			body := bytes.TrimSpace(lines[j])
			if len(body) == 0 {
				continue
			}
			e, err := ParseEventLine(body)
			if err != nil {
				continue
			}
			if !f.Since.IsZero() && e.Time.Before(f.Since.Add(-sinceSlack)) {
				return end, nil
			}
			if !f.Match(e) {
				continue
			}
			*out = append(*out, e)
		}
		if len(*out) >= n {
			return end, nil
		}
	}
	if end < 0 {
		end = 0
	}
	return end, nil
}
