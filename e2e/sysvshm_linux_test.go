package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A PostgreSQL server holds a small System V shared memory segment as an
// interlock on its data directory; a postmaster killed with SIGKILL (the
// fault tests do that) leaves it behind, and a fresh data directory never
// reclaims it. Over many runs the machine runs out of segment ids
// (kernel.shmmni) and every initdb fails. The harness removes, at the end,
// the segments of the postgres user that no process has attached and that
// were not there when it started.

// pgSegments lists the System V segments owned by the postgres user:
// shmid -> number of attached processes. nil when there is no such user
// or no /proc/sysvipc/shm.
func pgSegments() map[int]int {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil
	}
	f, err := os.Open("/proc/sysvipc/shm")
	if err != nil {
		return nil
	}
	defer f.Close()
	segs := map[int]int{}
	sc := bufio.NewScanner(f)
	sc.Scan() // header: key shmid perms size cpid lpid nattch uid ...
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 || fs[7] != u.Uid {
			continue
		}
		id, err1 := strconv.Atoi(fs[1])
		nattch, err2 := strconv.Atoi(fs[6])
		if err1 == nil && err2 == nil {
			segs[id] = nattch
		}
	}
	return segs
}

// removeOrphanSegments removes the postgres user's segments with no
// process attached that are not in before.
func removeOrphanSegments(before map[int]int) {
	removed := 0
	for id, nattch := range pgSegments() {
		if _, had := before[id]; had || nattch != 0 {
			continue
		}
		if _, err := unix.SysvShmCtl(id, unix.IPC_RMID, nil); err == nil {
			removed++
		}
	}
	if removed > 0 {
		fmt.Fprintf(os.Stderr, "e2e: removed %d System V shared memory segments left by PostgreSQL servers the tests killed\n", removed)
	}
}
