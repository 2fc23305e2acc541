package physical

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// ErrNotExpressible: a setting PostgreSQL's replication cannot express
// (the writeset engine offers it).
var ErrNotExpressible = errors.New("not expressible with PostgreSQL's streaming replication")

// SynchronousCommit maps a safeness level to PostgreSQL's
// synchronous_commit: 1-safe = local (the primary's WAL is flushed, no
// standby is waited for), 2-safe-received = remote_write (the standby's OS
// has the WAL), 2-safe-visible = remote_apply (the standby replayed it: a
// read there sees the commit), 2-safe-durable = on (the standby flushed it).
func SynchronousCommit(safeness string) (string, error) {
	switch safeness {
	case "1-safe":
		return "local", nil
	case "2-safe-received":
		return "remote_write", nil
	case "2-safe-visible":
		return "remote_apply", nil
	case "2-safe-durable":
		return "on", nil
	}
	return "", fmt.Errorf("%q is not a safeness level; use 1-safe, 2-safe-received, 2-safe-visible or 2-safe-durable", safeness)
}

// StandbyNames is synchronous_standby_names for a primary whose standbys
// are standbys (their node ids, which are their application_name), from
// replication.ack: one = FIRST 1 (...), majority = ANY k (...) with k a
// majority of the standbys, all = FIRST n (...).
func StandbyNames(ack string, standbys []string) (string, error) {
	if len(standbys) == 0 {
		return "", nil
	}
	s := append([]string(nil), standbys...)
	sort.Strings(s)
	quoted := make([]string, len(s))
	for i, id := range s {
		quoted[i] = `"` + strings.ReplaceAll(id, `"`, `""`) + `"`
	}
	list := "(" + strings.Join(quoted, ", ") + ")"
	switch ack {
	case "one":
		return "FIRST 1 " + list, nil
	case "majority":
		return fmt.Sprintf("ANY %d %s", len(s)/2+1, list), nil
	case "all":
		return fmt.Sprintf("FIRST %d %s", len(s), list), nil
	}
	return "", fmt.Errorf("%q: use one, majority or all", ack)
}

// AckCount is how many of n standbys a commit waits for under ack (the
// k of synchronous_standby_names, StandbyNames): one 1, majority n/2+1,
// all n.
func AckCount(ack string, n int) int {
	switch {
	case n == 0:
		return 0
	case ack == "majority":
		return n/2 + 1
	case ack == "all":
		return n
	}
	return 1
}

// CheckDurability refuses primary-log durabilities other than strict at
// run time: PostgreSQL flushes the primary's WAL before it waits for any
// standby, so a relaxed primary log under a 2-safe standby, and adaptive
// durability, cannot be expressed.
func CheckDurability(d string) error {
	switch d {
	case "", "strict":
		return nil
	case "relaxed", "adaptive":
		return fmt.Errorf("durability %q: %w (PostgreSQL always flushes the primary's WAL at commit, which is strict); use replication.engine = \"writeset\" for relaxed or adaptive durability", d, ErrNotExpressible)
	}
	return fmt.Errorf("%q is not a durability level; use strict, relaxed or adaptive", d)
}
