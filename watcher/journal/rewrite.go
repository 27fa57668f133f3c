package journal

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
)

// lineMark identifies the journal line that ends at a cursor's offset:
// its length (with its newline) and a hash of its bytes. A line holds
// its event's id, unique, so the line at the offset being the same says
// the day file is still the one the cursor was read from, appended to
// since; anything else says it was rewritten (a sync adopting the
// remote's store, or renaming the machine, replaces a clone's day files
// with other content). The zero mark is "unknown" (a cursor made from a
// day and an offset): such a cursor is not checked.
type lineMark struct {
	n   int64
	sum uint64
}

// markOf hashes line with FNV-1a, inline: it runs for every line read,
// and hash/fnv's allocation would be one per line.
func markOf(line []byte) lineMark {
	sum := uint64(14695981039346656037)
	for _, c := range line {
		sum ^= uint64(c)
		sum *= 1099511628211
	}
	return lineMark{n: int64(len(line)), sum: sum}
}

// markAt returns the mark of the line of f that ends at off (zero at the
// start of the file), reading back from off to that line's start.
func markAt(f *os.File, off int64) (lineMark, error) {
	if off <= 0 {
		return lineMark{}, nil
	}
	var line []byte
	end := off - 1 // the line's own newline is not its start
	for end > 0 {
		start := max(end-4<<10, 0)
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil && err != io.EOF {
			return lineMark{}, err
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			line = append(buf[i+1:], line...)
			break
		}
		line = append(buf, line...)
		end = start
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, off-1); err != nil {
		return lineMark{}, err
	}
	return markOf(append(line, last...)), nil
}

// markDay is markAt for the day file of cursor c in the journal
// directory dir.
func markDay(dir string, c Cursor) (lineMark, error) {
	f, err := os.Open(filepath.Join(dir, c.Day+".jsonl"))
	if err != nil {
		return lineMark{}, err
	}
	defer f.Close()
	return markAt(f, c.Offset)
}

// resume returns where to go on reading f, whose line at off is not the
// one m marks: after that line if f holds it elsewhere (lines removed or
// added before it: the part before is not read again), and false if it
// holds it nowhere (read f again from its start).
func resume(f *os.File, m lineMark) (int64, bool, error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, false, err
	}
	br := bufio.NewReaderSize(f, 256<<10)
	off := int64(0)
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
		off += int64(len(line))
		if int64(len(line)) == m.n && markOf(line) == m {
			return off, true, nil
		}
	}
}

// ErrRewritten is matched by every *RewriteError.
var ErrRewritten = errors.New("day file rewritten under its reader")

// RewriteError is passed to a journal reader's callback (Follow, and the
// heads catching up) when the day file it was reading no longer holds
// the line it read up to: the file was replaced by other content (a
// sync adopting the remote's store, or taking a machine's journal over),
// not appended to. The reader goes on from the start of the file as it
// now is, so nothing in it is skipped or read from the middle of a line;
// what it read of the old content is not taken back.
type RewriteError struct {
	Op     string // "read"
	Path   string // the day file
	Offset int64  // the cursor's offset in the old content
}

func (e *RewriteError) Error() string {
	return e.Op + " " + e.Path + ": rewritten under the reader (it no longer holds the line read up to, at byte " +
		strconv.FormatInt(e.Offset, 10) + "): reading it again from its start"
}

func (e *RewriteError) Unwrap() error { return ErrRewritten }
