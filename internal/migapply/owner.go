package migapply

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Owner is the apply a journal (and the lock) belongs to: one process, told apart from a
// later process that reuses its pid by the kernel's start time of the process.
type Owner struct {
	ID    string    `json:"id"`    // random, one per apply
	PID   int       `json:"pid"`   // the process running it
	Start uint64    `json:"start"` // /proc/PID/stat starttime (clock ticks since boot); 0: unknown
	Cmd   string    `json:"cmd"`   // what runs it, for messages: gpumemd, gpumemctl
	Since time.Time `json:"since"` // when it took the lock
}

func (o Owner) String() string {
	s := fmt.Sprintf("pid %d", o.PID)
	if o.Cmd != "" {
		s += " (" + o.Cmd + ")"
	}
	if !o.Since.IsZero() {
		s += ", started " + o.Since.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	if o.ID != "" {
		s += ", apply " + o.ID
	}
	return s
}

// ErrBusy means another apply holds this node's lock; the error names it.
var ErrBusy = errors.New("another MIG apply runs on this node")

// newOwner describes this process for an apply about to start.
func newOwner(cmd string, now time.Time) Owner {
	b := make([]byte, 6)
	rand.Read(b) // never fails on Linux; an all-zero id still names the pid
	if cmd == "" {
		cmd = filepath.Base(os.Args[0])
	}
	pid := os.Getpid()
	return Owner{ID: hex.EncodeToString(b), PID: pid, Start: procStart(pid), Cmd: cmd, Since: now}
}

// procStart is the kernel's start time of pid, 0 when it is not running (or /proc is
// not there to ask).
func procStart(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces or ')': the
	// fields after the last ')' are fixed; starttime is field 22, the 20th of them.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// alive says whether o's process still runs: same pid and same start time. An owner
// without a start time cannot be told from a process reusing its pid; the lock, which
// the caller holds, then says it is gone.
func (o Owner) alive() bool {
	if o.PID <= 0 || o.Start == 0 {
		return false
	}
	return procStart(o.PID) == o.Start
}

// lock takes this node's apply lock, a file beside the journal held with flock for the
// whole apply: the kernel releases it when the process dies, even by kill -9, so a
// later apply can recover the journal. The file names the holder, for the refusal.
func (a *Applier) lock() (release func(), err error) {
	path := a.Journal + ".lock"
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("MIG apply lock: %w", err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	if err == nil {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		holder := "an apply that has not yet recorded itself"
		var o Owner
		if b, rerr := io.ReadAll(io.LimitReader(f, 4096)); rerr == nil && json.Unmarshal(b, &o) == nil && o.PID > 0 {
			holder = o.String()
		}
		f.Close()
		return nil, fmt.Errorf("%w: node %s is being repartitioned by %s (lock %s); nothing was changed: wait for it to finish", ErrBusy, a.Node, holder, path)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("MIG apply lock %s: %w", path, err)
	}
	a.owner = newOwner(a.Cmd, a.now())
	b, _ := json.Marshal(a.owner)
	if err := f.Truncate(0); err == nil {
		f.WriteAt(append(b, '\n'), 0) // only for the refusal's message; the flock is the lock
	}
	return func() {
		f.Truncate(0)
		f.Close() // releases the flock
	}, nil
}
