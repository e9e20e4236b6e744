package plugin

import (
	"fmt"

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
// so a site can grep its slurmctld log for gpumem.
type logger struct {
	sink  Sink
	level config.Level
	tag   string
}

func (l *logger) errorf(format string, a ...any) {
	l.sink.Error(l.tag + ": " + fmt.Sprintf(format, a...))
}

func (l *logger) infof(format string, a ...any) {
	if l.level >= config.LevelInfo {
		l.sink.Info(l.tag + ": " + fmt.Sprintf(format, a...))
	}
}

func (l *logger) verbosef(format string, a ...any) {
	if l.level >= config.LevelVerbose {
		l.sink.Info(l.tag + ": " + fmt.Sprintf(format, a...))
	}
}

func (l *logger) debugf(format string, a ...any) {
	if l.level >= config.LevelDebug {
		l.sink.Debug(l.tag + ": " + fmt.Sprintf(format, a...))
	}
}
