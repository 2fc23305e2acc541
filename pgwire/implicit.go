package pgwire

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
)

// The extended protocol's implicit transaction: as in PostgreSQL, the
// statements executed between two Syncs outside a transaction block form
// one transaction, committed at Sync and rolled back whole by an error.
// A batch of one statement (the next buffered message after its Execute is
// Sync) runs as an autocommit statement, which costs no BEGIN or COMMIT of
// its own. The executor sees only what the client has already sent: a
// client that sends Execute, waits for its result and only then sends the
// next Execute of the same batch gets one transaction per statement there
// (drivers send a batch in one write: pgx, pgjdbc, psycopg).

// implicitTx opens the batch's implicit transaction before a statement
// when more statements follow before Sync. done: the statement was answered
// here (a BEGIN that turns the implicit transaction into a block).
func (s *execSession) implicitTx(ctx context.Context, sql string) (bool, error) {
	kw := Keywords(sql, 2)
	if len(kw) == 0 {
		return false, nil
	}
	if s.implicit {
		switch kw[0] {
		case "BEGIN", "START":
			// The batch's transaction becomes an explicit block.
			s.implicit = false
			s.c.Append(&pgproto3.CommandComplete{CommandTag: []byte("BEGIN")})
			return true, nil
		case "COMMIT", "END", "ABORT":
			s.implicit = false
		case "ROLLBACK":
			if len(kw) < 2 || kw[1] != "TO" {
				s.implicit = false
			}
		}
		return false, nil
	}
	// The transaction opens at the batch's first write: reads before it
	// have nothing to roll back, and a batch of reads (each statement its
	// own snapshot, as under READ COMMITTED) needs no transaction at all.
	// DDL does not open it: the replicated designs still run DDL as a step
	// of its own, outside transaction blocks (issue 19 item 1 lifts that).
	if s.bs.TxStatus() != 'I' || txControl[kw[0]] || ddlWords[kw[0]] || readOnlySQL(sql) || !s.c.ExecuteBeforeSync() {
		return false, nil
	}
	if err := s.runInternal(ctx, "BEGIN"); err != nil {
		// A node that refuses a read-write BEGIN (a standby) runs the
		// batch's statements one by one: its reads still work, and a
		// write fails with the node's own answer.
		return false, nil
	}
	s.implicit = true
	return false, nil
}

// endImplicit commits the batch's implicit transaction at Sync.
func (s *execSession) endImplicit(ctx context.Context) {
	if !s.implicit {
		return
	}
	s.implicit = false
	if s.bs.TxStatus() != 'T' {
		return
	}
	if err := s.runInternal(ctx, "COMMIT"); err != nil {
		s.c.Append(ToErrorResponse(err))
		if s.bs.TxStatus() == 'T' {
			_ = s.runInternal(ctx, "ROLLBACK")
		}
	}
}

var ddlWords = map[string]bool{"CREATE": true, "DROP": true, "ALTER": true, "TRUNCATE": true, "COMMENT": true, "GRANT": true, "REVOKE": true}

// readOnlySQL: a query that changes nothing (a conservative reading: any
// word that might write makes it a write).
func readOnlySQL(sql string) bool {
	switch FirstKeyword(sql) {
	case "SELECT", "VALUES", "TABLE", "SHOW", "WITH":
		return !hasWriteWord(sql)
	}
	return false
}

// hasWriteWord reports whether sql has, as a whole word (a run of letters,
// digits and underscores, in any case), INSERT, UPDATE, DELETE, MERGE,
// INTO, NEXTVAL or SETVAL, or SHARE after FOR or KEY (a locking clause).
// It runs for every statement of the extended protocol: a scan, where the
// regular expression it replaces cost 5 % of a multi-master node's CPU.
func hasWriteWord(sql string) bool {
	// prev, prev2: the words before, when only white space separates them
	// from the next (FOR KEY SHARE is three such words).
	prev, prev2 := "", ""
	for i := 0; i < len(sql); {
		if !isWordByte(sql[i]) {
			if !isSpace(sql[i]) {
				prev, prev2 = "", ""
			}
			i++
			continue
		}
		j := i
		for j < len(sql) && isWordByte(sql[j]) {
			j++
		}
		w := sql[i:j]
		switch len(w) {
		case 4:
			if strings.EqualFold(w, "INTO") {
				return true
			}
		case 5:
			if strings.EqualFold(w, "MERGE") {
				return true
			}
			if strings.EqualFold(w, "SHARE") && (strings.EqualFold(prev, "FOR") || strings.EqualFold(prev, "KEY") && strings.EqualFold(prev2, "FOR")) {
				return true
			}
		case 6:
			if strings.EqualFold(w, "INSERT") || strings.EqualFold(w, "UPDATE") || strings.EqualFold(w, "DELETE") || strings.EqualFold(w, "SETVAL") {
				return true
			}
		case 7:
			if strings.EqualFold(w, "NEXTVAL") {
				return true
			}
		}
		prev, prev2, i = w, prev, j
	}
	return false
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
