package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gpumem/gpumem/internal/config"
)

// valuesByType are what TestFlagsTakeWhatTheFileTakes gives each key, by the type of
// its value: good ones, ones out of a key's range, and words no key of the type takes.
var valuesByType = map[string][]string{
	"duration": {"30s", "30", "0", "0s", "5ms", "10ms", "500ms", "1s", "1m30s", "1h", "3h", "24h", "25h", "168h", "721h", "87600h", "90000h",
		"-1s", "-5", "often", "", "1.5", "1d", " 2m "},
	"sizes":  {"5G,10G", "5,10", "1.5g,1gb", "20GiB", "1t", "512k", "0", "2t", "5x", "", "10G,,20G", "-1g", " 4g "},
	"int":    {"0", "1", "3", "100", "101", "-1", "x", "", "1.5"},
	"bool":   {"true", "false", "yes", "no", "on", "off", "1", "0", "t", "f", "TRUE", "No", "x", "", "2"},
	"ratio":  {"0", "0.5", "5%", "1", "1.5", "-1", "x", ""},
	"list":   {"", "48,79", "x", "a,b", "48,x", "0"},
	"string": {"", "x", "/abs/path", "record", "kill", "cancel", "drain", "127.0.0.1:9402", ":0", ":99999", "auto", "22.05.8", "mock:dgxh100", "a/b"},
}

// TestFlagsTakeWhatTheFileTakes: every key of [gpumemd] and [mig] that gpumemd has a
// flag for takes each value alike as the flag and in gpumem.conf — both accepted, with
// the same resulting settings, or both refused — since both go through one setter.
func TestFlagsTakeWhatTheFileTakes(t *testing.T) {
	dir := t.TempDir()
	checked := map[string]int{}
	try := func(section, name, flag, typ string) {
		values, ok := valuesByType[typ]
		if !ok {
			t.Errorf("%s: no test values for type %q", name, typ)
		}
		for _, v := range values {
			conf := filepath.Join(dir, "gpumem.conf")
			if err := os.WriteFile(conf, []byte("["+section+"]\n"+name+" = "+v+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			file, fileErr := settle(parseArgs([]string{"--config", conf}, io.Discard))
			byFlag, flagErr := settle(parseArgs([]string{"--config", os.DevNull, "--" + flag + "=" + v}, io.Discard))
			switch {
			case (fileErr == nil) != (flagErr == nil):
				t.Errorf("%s = %q: in gpumem.conf %v; --%s=%q: %v", name, v, fileErr, flag, v, flagErr)
			case fileErr == nil && (!reflect.DeepEqual(file.Gpumemd, byFlag.Gpumemd) || !reflect.DeepEqual(file.MIG, byFlag.MIG)):
				t.Errorf("%s = %q and --%s=%q set different values:\n%+v %+v\n%+v %+v", name, v, flag, v, file.Gpumemd, file.MIG, byFlag.Gpumemd, byFlag.MIG)
			}
			checked[typ]++
		}
	}
	for _, k := range config.GpumemdKeys() {
		try("gpumemd", k.Name, k.Flag, k.Type)
	}
	for _, k := range config.MIGKeys() {
		if k.Flag != "" {
			try("mig", k.Name, k.Flag, k.Type)
		}
	}
	if checked["duration"] < 10*len(valuesByType["duration"]) || checked["sizes"] == 0 {
		t.Errorf("too few keys checked: %v", checked)
	}
}

// settle is what gpumemd makes of a command line: the settings, or why it stops.
func settle(o options, err error) (options, error) {
	var w warning
	if errors.As(err, &w) {
		err = w.err
	}
	if err == nil {
		err = o.check()
	}
	return o, err
}
