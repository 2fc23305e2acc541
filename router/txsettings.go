package router

import "strings"

// Settings made inside a transaction block are tentative: PostgreSQL
// undoes a SET (or RESET) when its transaction rolls back, or when a
// ROLLBACK TO SAVEPOINT returns to before it, and so must the list a
// session replays on a new connection (at a failover, the new primary).
// So are the settings of a query of several statements outside a block,
// which PostgreSQL runs as one implicit transaction: an error in any
// statement undoes them all. SQL PREPARE and DEALLOCATE are not
// transactional (they stay whatever becomes of the block), and SET LOCAL
// is never kept (isSetting).
//
// The router learns the outcome from the node's answers: the last
// CommandComplete that ends a transaction (COMMIT, or ROLLBACK, which is
// also what a failed block's COMMIT answers) and whether an error came,
// since the first tentative entry (splitSession.endTag, errSeen; a lost
// transaction counts as rolled back). The tentative entries are settled
// once nothing is in flight and the session is out of any block
// (settleTentative), before the list is used again.

// tentativeSet is a setting kept while its transaction is undecided.
type tentativeSet struct {
	idx      int  // in splitSession.settings
	readOnly bool // splitSession.readOnly before it
}

// savepointMark is a SAVEPOINT of the open block: how many tentative
// settings were made before it.
type savepointMark struct {
	name string
	n    int
}

// txWord classifies a statement that opens or ends a transaction block
// or works on its savepoints: 'B' BEGIN / START TRANSACTION, 'C' COMMIT /
// END (not COMMIT PREPARED), 'R' ROLLBACK / ABORT (not ROLLBACK PREPARED
// nor TO), 'S' SAVEPOINT, 'L' RELEASE, 'T' ROLLBACK TO; with the
// savepoint's name as PostgreSQL keeps it. 0 for any other statement.
func txWord(st string) (kind byte, name string) {
	// The words alone, as every explicit transaction sends them: no
	// allocation.
	switch t := strings.TrimRight(strings.TrimLeft(st, " \t\r\n"), "; \t\r\n"); {
	case strings.EqualFold(t, "begin"):
		return 'B', ""
	case strings.EqualFold(t, "commit"), strings.EqualFold(t, "end"):
		return 'C', ""
	case strings.EqualFold(t, "rollback"), strings.EqualFold(t, "abort"):
		return 'R', ""
	}
	f := strings.Fields(strings.ToLower(strings.TrimRight(strings.TrimSpace(st), "; \t\r\n")))
	if len(f) == 0 {
		return 0, ""
	}
	rest := func(skip int) string {
		// The savepoint's name from the statement as written (a quoted
		// name keeps its case): after skip words.
		s := strings.TrimLeft(st, " \t\r\n")
		for i := 0; i < skip; i++ {
			s = strings.TrimLeft(s, " \t\r\n")
			j := strings.IndexAny(s, " \t\r\n")
			if j < 0 {
				return ""
			}
			s = s[j:]
		}
		n, _, _ := identifier(s)
		return n
	}
	switch f[0] {
	case "begin":
		return 'B', ""
	case "start":
		if len(f) > 1 && f[1] == "transaction" {
			return 'B', ""
		}
	case "commit", "end":
		if len(f) > 1 && f[1] == "prepared" {
			return 0, ""
		}
		return 'C', ""
	case "abort":
		return 'R', ""
	case "rollback":
		switch {
		case len(f) > 1 && f[1] == "prepared":
			return 0, ""
		case len(f) > 2 && f[1] == "to" && f[2] == "savepoint":
			return 'T', rest(3)
		case len(f) > 1 && f[1] == "to":
			return 'T', rest(2)
		}
		return 'R', ""
	case "savepoint":
		return 'S', rest(1)
	case "release":
		if len(f) > 2 && f[1] == "savepoint" {
			return 'L', rest(2)
		}
		return 'L', rest(1)
	}
	return 0, ""
}

// trackTx follows a statement sent that opens or ends a block or works on
// its savepoints (rememberSession; client side). A ROLLBACK TO drops the
// settings made since its savepoint at once.
func (s *splitSession) trackTx(kind byte, name string) {
	switch kind {
	case 'B':
		s.sentTx = true
	case 'C', 'R':
		s.sentTx = false
		s.savepoints = s.savepoints[:0]
	case 'S':
		s.savepoints = append(s.savepoints, savepointMark{name: name, n: len(s.tentative)})
	case 'L', 'T':
		for j := len(s.savepoints) - 1; j >= 0; j-- {
			if s.savepoints[j].name != name {
				continue
			}
			if kind == 'L' {
				s.savepoints = s.savepoints[:j]
			} else {
				s.dropTentative(s.savepoints[j].n)
				s.savepoints = s.savepoints[:j+1]
			}
			return
		}
	}
}

// inBlock reports whether a setting sent now is made inside a transaction
// block, explicit or (several is true: one statement of a query of
// several) implicit.
func (s *splitSession) inBlock(several bool) bool {
	if several || s.sentTx {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.txStatus != 'I'
}

// keepTentative records settings[idx] as tentative.
func (s *splitSession) keepTentative(idx int, readOnlyBefore bool) {
	if len(s.tentative) == 0 {
		s.mu.Lock()
		s.endTag, s.errSeen = "", false
		s.mu.Unlock()
	}
	s.tentative = append(s.tentative, tentativeSet{idx: idx, readOnly: readOnlyBefore})
}

// settleTentative decides the tentative settings once the transactions
// they were made in have ended: nothing in flight, the session outside a
// block. Kept if the last end was a COMMIT, or there was none and no
// error (an implicit block that ran through); dropped otherwise.
func (s *splitSession) settleTentative() {
	if len(s.tentative) == 0 {
		return
	}
	s.mu.Lock()
	quiet := s.pending == 0 && !s.unsynced && s.txStatus == 'I'
	tag, errSeen := s.endTag, s.errSeen
	s.mu.Unlock()
	if !quiet {
		return
	}
	s.sentTx = false
	s.savepoints = s.savepoints[:0]
	if tag == "COMMIT" || tag == "" && !errSeen {
		s.tentative = s.tentative[:0]
		return
	}
	s.dropTentative(0)
}

// dropTentative removes tentative[k:] from the settings; the connections
// that ran them had them undone by their server.
func (s *splitSession) dropTentative(k int) {
	if k >= len(s.tentative) {
		return
	}
	gone := s.tentative[k:]
	s.mu.Lock()
	for _, nc := range s.conns {
		if nc == nil {
			continue
		}
		n := 0
		for _, t := range gone {
			if t.idx < nc.setDone {
				n++
			}
		}
		nc.setDone -= n
	}
	s.mu.Unlock()
	out := s.settings[:gone[0].idx]
	j := 0
	for i := gone[0].idx; i < len(s.settings); i++ {
		if j < len(gone) && gone[j].idx == i {
			j++
			continue
		}
		out = append(out, s.settings[i])
	}
	clear(s.settings[len(out):])
	s.settings = out
	s.readOnly = gone[0].readOnly
	s.tentative = s.tentative[:k]
}

// setsConfig reports whether st is a SELECT of set_config(...) that reads
// no table, as pg_dump's output and some applications set
// search_path (SELECT pg_catalog.set_config('search_path', 'app', false)):
// replayed as it is, it makes the same setting (one with is_local true
// makes none outside a block, as on the first run). Not kept: one with
// FROM or INTO (it may run once per row, or not at all, or make a
// table), or with parameters ($1: the replay has no values for them).
// Every simple-protocol query without a first word the router knows
// passes here: the common answer costs two substring searches.
func setsConfig(st string) bool {
	if !strings.Contains(st, "set_config") && !strings.Contains(st, "SET_CONFIG") {
		return false
	}
	t := strings.TrimLeft(st, " \t\r\n(")
	if len(t) < 6 || !strings.EqualFold(t[:6], "select") || strings.ContainsRune(t, '$') {
		return false
	}
	l := strings.ToLower(t)
	for _, w := range []string{"from", "into"} {
		if strings.Contains(l, w) {
			return false
		}
	}
	return true
}

// listenTarget reads LISTEN channel, UNLISTEN channel and UNLISTEN *:
// the channel as PostgreSQL keeps it, and whether it is every channel.
func listenTarget(st string) (ch string, all, ok bool) {
	t := strings.TrimLeft(st, " \t\r\n")
	i := strings.IndexAny(t, " \t\r\n")
	if i < 0 {
		return "", false, false
	}
	rest := t[i:]
	if strings.EqualFold(t[:i], "unlisten") && strings.TrimRight(strings.TrimSpace(rest), "; \t\r\n") == "*" {
		return "", true, true
	}
	ch, after, ok := identifier(rest)
	if !ok || strings.TrimRight(after, "; \t\r\n") != "" {
		return "", false, false
	}
	return ch, false, true
}
