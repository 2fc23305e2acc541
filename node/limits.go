package node

import (
	"os"
	"strconv"
	"strings"
)

// FileLimit is the process's limit on open files (RLIMIT_NOFILE), as
// reported on /status and by `tandem status --json`.
type FileLimit struct {
	Soft uint64 `json:"soft"`
	Hard uint64 `json:"hard"`
}

// defaultMessageMemory sizes limits.message_memory when the cluster file
// does not: a quarter of the memory the node may use (the cgroup's limit,
// else the machine's), at most 1 GiB, and never less than one message of
// max_message_bytes.
func defaultMessageMemory(maxMessage int) int64 {
	total := physicalMemory()
	if cg := cgroupMemoryLimit(); cg > 0 && (total == 0 || cg < total) {
		total = cg
	}
	budget := int64(1 << 30)
	if total > 0 {
		budget = min(budget, total/4)
	}
	return max(budget, int64(maxMessage)+5)
}

// physicalMemory is MemTotal from /proc/meminfo (0: unknown).
func physicalMemory() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

// cgroupMemoryLimit is the cgroup v2 memory.max of this process (0: none
// or unknown).
func cgroupMemoryLimit() int64 {
	b, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0 // "max"
	}
	return n
}
