package slurmcli_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/gpumem/gpumem/internal/slurmcli"
)

func TestScontrolNodeNodes(t *testing.T) {
	r, args := fakeSqueue(t, "NodeName=n1 Arch=x86_64 Weight=3 Owner=N/A\nNodeName=n2 Weight=1\n")
	nodes, err := slurmcli.ScontrolNode{Run: r}.Nodes(context.Background())
	if want := []slurmcli.Node{{Name: "n1", Weight: 3}, {Name: "n2", Weight: 1}}; err != nil || !reflect.DeepEqual(nodes, want) {
		t.Errorf("Nodes = %+v, %v; want %+v", nodes, err, want)
	}
	if a := argsOf(t, args); a != "-o show node" {
		t.Errorf("scontrol %s", a)
	}
}
