// Package proctree reads the process tree from Linux's /proc: a process's
// state letter and parent, and every process under a root. It owns nothing
// and signals nothing; the callers (a managed PostgreSQL's freeze, the
// lab's placement of a started server into an emulated host) decide what
// to do with the processes it names.
package proctree

import (
	"os"
	"strconv"
	"strings"
)

// Stat reads a process's state letter (R, S, D, T, Z, ...) and parent
// from /proc/PID/stat; ok is false when the process does not exist.
func Stat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	// The command name in parentheses may hold spaces and parentheses.
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return 0, 0, false
	}
	f := strings.Fields(s[i+2:])
	if len(f) < 2 {
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(f[1])
	return f[0][0], ppid, true
}

// State is a process's state letter, 0 when it does not exist.
func State(pid int) byte {
	st, _, ok := Stat(pid)
	if !ok {
		return 0
	}
	return st
}

// Descendants lists every process under root (not root itself), parents
// before their children.
func Descendants(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	kids := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, ppid, ok := Stat(pid); ok {
			kids[ppid] = append(kids[ppid], pid)
		}
	}
	var out []int
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range kids[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}
