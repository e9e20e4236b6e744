module github.com/gpumem/gpumem

go 1.26.8

require (
	github.com/NVIDIA/go-nvml v0.13.4-1 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/mattn/go-sqlite3 v1.14.53 // indirect
	github.com/prometheus/client_golang v1.25.0 // indirect
	github.com/prometheus/exporter-toolkit v0.20.0 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.9 // indirect
	gopkg.in/ini.v1 v1.68.0 // indirect
)
