module tandem-experiments/sockmap

go 1.26

require (
	github.com/cilium/ebpf v0.22.0
	golang.org/x/sys v0.43.0
)
