package shim

import (
	"fmt"

	"github.com/gpumem/gpumem/internal/config"
	"github.com/gpumem/gpumem/internal/plugin"
)

// Open starts a plugin from Slurm's init(), logging to sink. usable is false when the program lacks a
// Slurm function the shim needs (missing names it); the plugin then stays nil and every
// job passes unchanged. Open never fails: a plugin that refused to load would stop
// slurmctld or every srun.
func Open(tag string, sink Sink, usable bool, missing string) (p *plugin.Plugin) {
	defer func() {
		if r := recover(); r != nil {
			Sink{}.Error(fmt.Sprintf("%s: init: %v; jobs pass unchanged", tag, r))
			p = nil
		}
	}()
	if !usable {
		Sink{}.Error(fmt.Sprintf("%s: this program exports no %s; jobs pass unchanged", tag, missing))
		return nil
	}
	if sink.Client {
		p = plugin.NewClient(confPath(), tag, sink, plugin.AdmitCore)
	} else {
		p = plugin.New(confPath(), tag, sink, plugin.AdmitCore)
	}
	p.UseReservations(Reservations)
	return p
}

// confPath lets a test lab point Slurm at its own file without touching /etc.
func confPath() string { return config.Path() }
