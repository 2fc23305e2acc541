package pgwire

import (
	"regexp"
	"strings"
)

// Settings is a session's run-time settings as tandem keeps them (SET,
// SHOW, RESET): a back end that does not keep settings itself (SQLite)
// reads and writes them through it for current_setting() and
// set_config().
type Settings interface {
	// Setting is a setting's value as SHOW answers it; false when no
	// setting has that name.
	Setting(name string) (string, bool)
	// SetSetting sets a session setting (set_config(name, value, false)).
	SetSetting(name, value string) error
}

// LocalSettings is Settings with set_config(name, value, true): the
// value lasts until the transaction block ends (outside one, nothing).
type LocalSettings interface {
	SetLocalSetting(name, value string) error
}

// SettingsUser is a BackendSession that reads the session's settings.
type SettingsUser interface {
	UseSettings(Settings)
}

// Discarder is a back-end session with state of its own that DISCARD
// resets (what: ALL, SEQUENCES, PLANS or TEMP).
type Discarder interface {
	Discard(what string)
}

// Setting implements Settings.
func (s *execSession) Setting(name string) (string, bool) {
	name = strings.ToLower(name)
	if name == "transaction_isolation" {
		// The level the open transaction asked for, else the default:
		// what PostgreSQL reports. (SQLite runs every transaction
		// serializable, which gives every level's guarantees.)
		if s.txIsolation != "" && s.bs.TxStatus() != 'I' {
			return s.txIsolation, true
		}
		name = "default_transaction_isolation"
	}
	if v, ok := s.showTandemSetting(name); ok {
		return v, true
	}
	if v, ok := s.setting(name); ok {
		return v, true // SET LOCAL (until the block ends), else SET
	}
	if v, ok := s.c.Params[name]; ok && name == "application_name" {
		return v, true // the startup packet's: the session's default
	}
	if name == "timezone" && s.startZone != "" {
		return s.startZone, true // the startup packet's (pgjdbc sends the JVM's)
	}
	if name == "statement_timeout" {
		return FormatTimeout(s.defTimeout), true
	}
	if v, ok := defaultSettings[name]; ok {
		return v, true
	}
	for _, kv := range s.params {
		if strings.EqualFold(kv[0], name) {
			return kv[1], true
		}
	}
	return "", false
}

// SetSetting implements Settings.
func (s *execSession) SetSetting(name, value string) error {
	name = strings.ToLower(name)
	v, err := normalizeSetting(name, value)
	if err != nil {
		return err
	}
	s.beforeSet()
	delete(s.tx.local, name)
	s.settings[name] = v
	if strings.HasPrefix(name, "tcp_keepalives_") {
		s.applyKeepalive()
	}
	return nil
}

var isolationRe = regexp.MustCompile(`(?i)\bISOLATION\s+LEVEL\s+(READ\s+COMMITTED|READ\s+UNCOMMITTED|REPEATABLE\s+READ|SERIALIZABLE)\b`)

// isolationLevel is the level a BEGIN / SET TRANSACTION names, in
// PostgreSQL's spelling, or "".
func isolationLevel(sql string) string {
	m := isolationRe.FindStringSubmatch(sql)
	if m == nil {
		return ""
	}
	return strings.ToLower(strings.Join(strings.Fields(m[1]), " "))
}

// noteIsolation records the isolation level a transaction block asked
// for with BEGIN ... ISOLATION LEVEL (SET TRANSACTION: special) and
// forgets it when the block ends.
func (s *execSession) noteIsolation(sql string) {
	if s.bs.TxStatus() == 'I' {
		s.txIsolation = ""
		return
	}
	switch FirstKeyword(sql) {
	case "BEGIN", "START":
		if l := isolationLevel(sql); l != "" {
			s.txIsolation = l
		}
	}
}
