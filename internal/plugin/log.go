package plugin

import (
	"fmt"
	"sync/atomic"

	"github.com/gpumem/gpumem/internal/clip"
	"github.com/gpumem/gpumem/internal/config"
)

// Sink is where messages go: slurmctld's log through the C shim, or a test's buffer.
// It takes finished strings so that the shim never formats with user data.
type Sink interface {
	Error(msg string)
	Info(msg string)
	Debug(msg string)
}

// logger filters by the configured level and tags every line with the plugin's name,
// so a site can grep its slurmctld log for gpumem. A line quotes a job's fields, which
// the user wrote: each is clipped to clip.Line. The level follows gpumem.conf as the
// loader reloads it, so it is atomic.
type logger struct {
	sink   Sink
	level  atomic.Int32
	tag    string
	client bool // the log is the user's terminal
}

func (l *logger) setLevel(v config.Level) { l.level.Store(int32(v)) }
func (l *logger) on(v config.Level) bool  { return config.Level(l.level.Load()) >= v }

// adminf is for what only an administrator can fix (gpumem.conf): an error in
// slurmctld's log, but in a client, whose log is the user's terminal, a debug line: a
// user of a job without GPUs must never read it, and one with gpu:mem gets it in a
// refusal only where OnError = closed.
func (l *logger) adminf(format string, a ...any) {
	if l.client {
		l.debugf(format, a...)
		return
	}
	l.errorf(format, a...)
}

func (l *logger) errorf(format string, a ...any) {
	l.sink.Error(l.line(format, a...))
}

func (l *logger) infof(format string, a ...any) {
	if l.on(config.LevelInfo) {
		l.sink.Info(l.line(format, a...))
	}
}

func (l *logger) verbosef(format string, a ...any) {
	if l.on(config.LevelVerbose) {
		l.sink.Info(l.line(format, a...))
	}
}

func (l *logger) debugf(format string, a ...any) {
	if l.on(config.LevelDebug) {
		l.sink.Debug(l.line(format, a...))
	}
}

// line is one log line: the tag, then the message, within clip.Line.
func (l *logger) line(format string, a ...any) string {
	return clip.String(l.tag+": "+fmt.Sprintf(format, a...), clip.Line)
}
