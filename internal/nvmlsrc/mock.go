package nvmlsrc

import (
	"fmt"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// mockServers are go-nvml's DGX mock servers (8 GPUs each), with the fake model key
// whose live defaults they get.
var mockServers = map[string]struct {
	model, uuidTag string
	New            func() *server.Server
}{
	"dgxa100": {"a100-40gb", "da10", dgxa100.New},
	"dgxh100": {"h100-80gb", "d100", dgxh100.New},
	"dgxh200": {"h200-141gb", "d200", dgxh200.New},
}

// A DGX has two sockets; GPUs 0-3 sit on the first, 4-7 on the second. The mock node
// has 64 cores per socket.
const mockCoresPerSocket = 64

func openMock(spec, name string) (*Source, error) {
	m, ok := mockServers[name]
	if !ok {
		return nil, fmt.Errorf("nvml %q: unknown mock %q; want %s", spec, name, Usage)
	}
	srv := m.New()
	n := &FakeNode{Driver: srv.DriverVersion, GPUs: make([]FakeGPU, len(srv.Devices))}
	for i := range n.GPUs {
		socket := i * 2 / len(n.GPUs)
		n.GPUs[i] = FakeGPU{
			Model:        m.model,
			Cores:        fmt.Sprintf("%d-%d", socket*mockCoresPerSocket, (socket+1)*mockCoresPerSocket-1),
			TemperatureC: 34,
			PowerMW:      72000,
		}
	}
	if err := Guard(func() error { return n.attach(srv, m.uuidTag) }); err != nil {
		return nil, fmt.Errorf("nvml %q: %w", spec, err)
	}
	return &Source{NVML: srv, Kind: KindMock, Spec: spec, CapsMinors: DriverMigMinors, Fake: n, shutdown: srv.Shutdown}, nil
}
