package main

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// faultInjection runs tavern commands on a store in a small tmpfs: filled
// to ENOSPC (adds, takes, dones, sets until and after the disk is full),
// remounted read-only, and used by another user (EACCES). Commands may
// fail, but never leave a torn document or lose one they reported
// written; under the read-only mount and EACCES they change nothing.
// Mounting needs root (CAP_SYS_ADMIN): without it the row is skipped.
func faultInjection(e *env) row {
	mnt := filepath.Join(e.scratch, "fault")
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		fatal(err)
	}
	// Room for the binary (the other user must be able to run it; the
	// scratch directory is private) and 4 MiB of store.
	size := int64(4 << 20)
	if fi, err := os.Stat(e.bin); err == nil {
		size += fi.Size()
	}
	if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		return row{skipped: fmt.Sprintf("cannot mount a tmpfs at %s (%v): fault injection needs root with CAP_SYS_ADMIN", mnt, err)}
	}
	defer unix.Unmount(mnt, unix.MNT_DETACH)
	bin := filepath.Join(mnt, "tavern")
	if err := copyFile(e.bin, bin, 0o755); err != nil {
		return row{skipped: "cannot copy the binary into the tmpfs: " + err.Error()}
	}
	fe := &env{bin: bin, scratch: mnt, scale: e.scale}
	dir := filepath.Join(mnt, "proj")
	os.MkdirAll(dir, 0o755)
	if r := fe.tavern(dir, "init"); r.code != 0 {
		fatal(fmt.Errorf("init on tmpfs: %s", r.err))
	}
	fe.must(dir, "queue", "create", "q", "--lease", "1h")
	fe.must(dir, "new", "agent", "a")
	body := filepath.Join(mnt, "body")
	os.WriteFile(body, []byte(strings.Repeat("x", 40<<10)+"\n"), 0o644)

	r := row{}
	var items []string
	// ENOSPC: add until the disk is full, then keep going with every
	// kind of write.
	full := false
	for i := 0; i < 400 && !full; i++ {
		res := fe.tavern(dir, "queue", "add", "q", "--body", body)
		r.tried++
		if res.code == 0 {
			items = append(items, strings.TrimSpace(res.out))
		} else {
			full = true
		}
	}
	// Fill the last bytes too.
	filler, _ := os.Create(filepath.Join(mnt, "filler"))
	io.Copy(filler, zeroReader{})
	filler.Close()
	for i := 0; i < 20; i++ {
		for _, args := range [][]string{
			{"queue", "take", "q"}, {"set", "agents/a", fmt.Sprintf("n=%d", i)}, {"queue", "add", "q", "--body", body},
			{"send", "c", "hello"}, {"new", "agent", fmt.Sprintf("x%d", i)},
		} {
			res := fe.tavern(dir, args...)
			r.tried++
			if args[0] == "queue" && args[1] == "add" && res.code == 0 {
				items = append(items, strings.TrimSpace(res.out))
			}
		}
		claimed, _ := os.ReadDir(filepath.Join(dir, ".tavern/queues/q/claimed"))
		for j, c := range claimed {
			if j >= 3 {
				break
			}
			fe.tavern(dir, "item", "done", strings.TrimSuffix(c.Name(), ".md"))
			r.tried++
		}
	}
	tornFull, _ := torn(dir, nil)
	os.Remove(filepath.Join(mnt, "filler"))

	// Read-only: every write fails, nothing changes.
	before := snapshot(dir)
	if err := unix.Mount("", mnt, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err == nil {
		for _, args := range [][]string{{"queue", "take", "q"}, {"set", "agents/a", "n=ro"}, {"queue", "add", "q"}, {"send", "c", "ro"}} {
			r.tried++
			if res := fe.tavern(dir, args...); res.code == 0 {
				r.lost++ // a write "succeeded" on a read-only disk: a lie
			}
		}
		unix.Mount("", mnt, "", unix.MS_REMOUNT, "")
		if snapshot(dir) != before {
			r.torn++
		}
	} else {
		r.note = "read-only remount not possible: " + err.Error() + "; "
	}
	// EACCES: another user may read but not write.
	nobody := &syscall.Credential{Uid: 65534, Gid: 65534}
	before = snapshot(dir)
	for _, args := range [][]string{{"queue", "take", "q"}, {"set", "agents/a", "n=x"}, {"queue", "add", "q"}} {
		r.tried++
		if res := fe.tavernAs(dir, nobody, args...); res.code == 0 {
			r.lost++
		}
	}
	if snapshot(dir) != before {
		r.torn++
	}

	left, doctorOut := fe.leftAfterDoctor(dir)
	r.left = left
	if left > 0 {
		r.note += " doctor still finds: " + doctorOut
	}
	states := itemStates(dir, "q")
	for _, id := range items {
		if len(states[id]) != 1 {
			r.lost++
		}
	}
	tornAfter, first := torn(dir, nil)
	r.torn += max(tornFull, tornAfter)
	if first != "" {
		r.note += " first torn: " + first
	}
	r.note = strings.TrimSpace(fmt.Sprintf("%d items written before ENOSPC. %s", len(items), r.note))
	return r
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func copyFile(from, to string, mode fs.FileMode) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, data, mode)
}

// tavernAs runs the binary as another user.
func (e *env) tavernAs(dir string, cred *syscall.Credential, args ...string) result {
	cmd := execCommand(e.bin, args...)
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "HOME=/")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	return runCmd(cmd)
}

// snapshot is the content of every file of the store but the journal
// (an append of a refused write's event is not a change of a document).
func snapshot(dir string) string {
	var b strings.Builder
	filepath.WalkDir(filepath.Join(dir, ".tavern"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || strings.Contains(p, "/events/") || strings.Contains(p, "/.locks/") {
			return nil
		}
		data, _ := os.ReadFile(p)
		b.WriteString(p + "\x00" + string(data) + "\x00")
		return nil
	})
	return b.String()
}
