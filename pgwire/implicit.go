package pgwire

import (
	"context"
	"regexp"

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

var writeWordsRe = regexp.MustCompile(`(?i)\b(INSERT|UPDATE|DELETE|MERGE|INTO|FOR\s+(NO\s+KEY\s+)?UPDATE|FOR\s+(KEY\s+)?SHARE|NEXTVAL|SETVAL)\b`)

// readOnlySQL: a query that changes nothing (a conservative reading: any
// word that might write makes it a write).
func readOnlySQL(sql string) bool {
	switch FirstKeyword(sql) {
	case "SELECT", "VALUES", "TABLE", "SHOW", "WITH":
		return !writeWordsRe.MatchString(sql)
	}
	return false
}
