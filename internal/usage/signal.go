package usage

import (
	"errors"
	"fmt"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// signalConfirmed sends sig to those of pids that confirm still places in job, through
// pidfds opened before confirm is asked: a pidfd names one process for good, so a PID
// that ended and was reused after the check is never the one signalled (the signal to
// the ended process fails with ESRCH instead). It returns the PIDs signalled and the
// failures; a PID that confirm does not vouch for is skipped silently.
func signalConfirmed(job string, pids []int, confirm func(string, []int) (map[int]bool, error), sig syscall.Signal) (signalled []int, failed []string) {
	fds := map[int]int{}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	var open []int
	for _, pid := range pids {
		if _, dup := fds[pid]; dup {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			if !errors.Is(err, unix.ESRCH) {
				failed = append(failed, fmt.Sprintf("%d: %v", pid, err))
			}
			continue
		}
		fds[pid] = fd
		open = append(open, pid)
	}
	if len(open) == 0 {
		return nil, failed
	}
	ok, err := confirm(job, open)
	if err != nil {
		return nil, append(failed, fmt.Sprintf("%v: cannot confirm they are still job %s's: %v", open, job, err))
	}
	slices.Sort(open)
	for _, pid := range open {
		if !ok[pid] {
			continue
		}
		if err := unix.PidfdSendSignal(fds[pid], sig, nil, 0); err != nil {
			if !errors.Is(err, unix.ESRCH) {
				failed = append(failed, fmt.Sprintf("%d: %v", pid, err))
			}
			continue
		}
		signalled = append(signalled, pid)
	}
	return signalled, failed
}
