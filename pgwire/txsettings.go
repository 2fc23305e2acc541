package pgwire

import (
	"maps"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
)

// Settings and transactions, as PostgreSQL keeps them: a SET inside a
// transaction block is undone by its ROLLBACK (and by a ROLLBACK TO a
// savepoint taken before it), SET LOCAL and set_config(..., true) last
// until the block ends, and SET LOCAL outside a block is a WARNING that
// changes nothing.

// txSettings is what a session's open transaction block did to its
// settings.
type txSettings struct {
	open bool
	// saved: the session's settings when the block began, copied at its
	// first SET (nil: no SET yet).
	saved map[string]string
	// local: SET LOCAL values, read before the session's own.
	local map[string]string
	marks []settingsMark
	// ending: COMMIT, END, ROLLBACK or ABORT, the statement that ended
	// the block ("": an implicit one, committed).
	ending string
}

// settingsMark is the settings at a SAVEPOINT.
type settingsMark struct {
	name            string
	settings, local map[string]string
}

// inBlock reports whether the session is inside a transaction block
// (an explicit one, or the implicit one of several statements in one
// Query).
func (s *execSession) inBlock() bool { return s.bs.TxStatus() != 'I' }

// beforeSet is called before a SET, RESET or set_config changes the
// session's settings: inside a block, the settings as they were are kept
// for a ROLLBACK.
func (s *execSession) beforeSet() {
	if !s.inBlock() {
		return
	}
	if !s.tx.open {
		s.tx = txSettings{open: true} // an ending noted for an earlier block is not this one's
	}
	if s.tx.saved == nil {
		s.tx.saved = maps.Clone(s.settings)
	}
}

// setLocal sets name for the rest of the block; outside one it reports
// false (PostgreSQL's WARNING 25P01) and changes nothing.
func (s *execSession) setLocal(name, val string) bool {
	if !s.inBlock() {
		return false
	}
	s.beforeSet()
	if s.tx.local == nil {
		s.tx.local = map[string]string{}
	}
	s.tx.local[name] = val
	return true
}

// localWarning is SET LOCAL's warning outside a transaction block.
func localWarning() *pgproto3.NoticeResponse {
	return &pgproto3.NoticeResponse{Severity: "WARNING", SeverityUnlocalized: "WARNING", Code: "25P01", Message: "SET LOCAL can only be used in transaction blocks"}
}

// SetLocalSetting implements set_config(name, value, true): until the
// block ends (outside one, nothing).
func (s *execSession) SetLocalSetting(name, value string) error {
	name = strings.ToLower(name)
	v, err := normalizeSetting(name, value)
	if err != nil {
		return err
	}
	s.setLocal(name, v)
	return nil
}

// txWords are the first keywords of a statement about to run when it
// ends a block or moves a savepoint (nil otherwise; read before the
// statement runs, whose text may be let go while it runs). A block's end
// is noted here: the next sync (syncTx) undoes its SETs unless it was a
// COMMIT.
func (s *execSession) txWords(sql string) []string {
	switch FirstKeyword(sql) {
	case "COMMIT", "END", "ROLLBACK", "ABORT", "SAVEPOINT", "RELEASE":
	default:
		return nil
	}
	kw := Keywords(sql, 6)
	if len(kw) > 0 && savepointName(kw) == "" && kw[0] != "SAVEPOINT" && kw[0] != "RELEASE" {
		s.tx.ending = kw[0]
	}
	return kw
}

// syncTx ends the settings' block when the transaction block has ended
// (at the start of each statement and before ReadyForQuery).
func (s *execSession) syncTx() {
	if !s.tx.open || s.inBlock() {
		return
	}
	s.endBlock(s.tx.ending != "ROLLBACK" && s.tx.ending != "ABORT")
}

// afterTx follows a statement that ran without error: kw from txWords.
// A SAVEPOINT keeps the settings, a ROLLBACK TO restores them, a RELEASE
// forgets the savepoints it releases.
func (s *execSession) afterTx(kw []string) {
	s.syncTx()
	if len(kw) == 0 || !s.tx.open || !s.inBlock() {
		return
	}
	switch kw[0] {
	case "SAVEPOINT":
		if len(kw) > 1 {
			s.tx.marks = append(s.tx.marks, settingsMark{name: strings.ToLower(kw[1]), settings: maps.Clone(s.settings), local: maps.Clone(s.tx.local)})
		}
	case "RELEASE":
		if name := savepointName(kw); name != "" {
			if i := s.tx.mark(name); i >= 0 {
				s.tx.marks = s.tx.marks[:i]
			}
		}
	case "ROLLBACK":
		name := savepointName(kw)
		if name == "" {
			return
		}
		before := s.reported()
		if i := s.tx.mark(name); i >= 0 {
			m := s.tx.marks[i]
			s.settings, s.tx.local = maps.Clone(m.settings), maps.Clone(m.local)
			s.tx.marks = s.tx.marks[:i+1]
		} else {
			// A savepoint older than the block's first SET: the
			// settings the block began with.
			s.settings, s.tx.local = maps.Clone(s.tx.saved), nil
		}
		s.reportChanged(before)
	}
}

// savepointName is the savepoint a RELEASE [SAVEPOINT] x or ROLLBACK
// [WORK | TRANSACTION] TO [SAVEPOINT] x names ("" for another statement).
func savepointName(kw []string) string {
	words := kw[1:]
	if kw[0] == "ROLLBACK" {
		i := 0
		for i < len(words) && words[i] != "TO" {
			i++
		}
		if i == len(words) {
			return ""
		}
		words = words[i+1:]
	}
	if len(words) > 0 && words[0] == "SAVEPOINT" {
		words = words[1:]
	}
	if len(words) == 0 {
		return ""
	}
	return strings.ToLower(words[0])
}

// mark is the index of the newest savepoint named name, -1 if none.
func (t *txSettings) mark(name string) int {
	for i := len(t.marks) - 1; i >= 0; i-- {
		if t.marks[i].name == name {
			return i
		}
	}
	return -1
}

// endBlock forgets the block: its SET LOCAL values always, its SETs
// unless it committed.
func (s *execSession) endBlock(commit bool) {
	before := s.reported()
	if !commit && s.tx.saved != nil {
		s.settings = s.tx.saved
	}
	s.tx = txSettings{}
	s.reportChanged(before)
}

// reportedSettings are the settings PostgreSQL reports with
// ParameterStatus when they change.
var reportedSettings = [...]struct{ key, name string }{{"timezone", "TimeZone"}, {"application_name", "application_name"}, {"datestyle", "DateStyle"}, {"intervalstyle", "IntervalStyle"}}

func (s *execSession) reported() [len(reportedSettings)]string {
	var out [len(reportedSettings)]string
	for i, r := range reportedSettings {
		out[i], _ = s.Setting(r.key)
	}
	return out
}

// reportChanged sends ParameterStatus for each reported setting that is
// not what it was.
func (s *execSession) reportChanged(before [len(reportedSettings)]string) {
	for i, r := range reportedSettings {
		if now, _ := s.Setting(r.key); now != before[i] {
			s.c.Append(&pgproto3.ParameterStatus{Name: r.name, Value: now})
		}
	}
}

// sessionValue is name's value as RESET would make it (SET LOCAL x TO
// DEFAULT): the startup or built-in default.
func (s *execSession) sessionValue(name string) string {
	local, set, had := s.tx.local, s.settings[name], false
	_, had = s.settings[name]
	s.tx.local = nil
	delete(s.settings, name)
	v, _ := s.Setting(name)
	s.tx.local = local
	if had {
		s.settings[name] = set
	}
	return v
}

// setting is name's value set in the session: the block's SET LOCAL,
// else its SET (false: neither; the caller has its default).
func (s *execSession) setting(name string) (string, bool) {
	if v, ok := s.tx.local[name]; ok {
		return v, true
	}
	v, ok := s.settings[name]
	return v, ok
}
