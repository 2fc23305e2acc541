package postgres

import (
	"context"
	"strings"

	"github.com/tandemdb/tandem/pgwire"
	"github.com/tandemdb/tandem/writeset"
)

// Transactional DDL on the replicated PostgreSQL path (issue 19 item 1).
// A schema statement inside a transaction block runs in the block, on the
// server, like any other statement. Before it runs, the rows the block
// wrote so far are harvested (their after-images at that moment, read
// with _tandem.ws()) and rendered as SQL; then the statement's own text
// follows. The block's script (row segments and DDL, in statement order)
// is the writeset's DDL, and the rows written after the last DDL are its
// rows: the standby runs the script, then the rows, in one transaction.
// Statement order matters: a data migration followed by
// `ALTER ... SET NOT NULL` needs the rows fixed before the constraint.
// After each DDL the capture triggers and _tandem.img are brought up to
// date inside the block, so rows written to a table the block created are
// captured. A rollback, or a rollback to a savepoint, drops the script's
// part that the server undid.

// txMark is a savepoint with the script length when it was set.
type txMark struct {
	name string
	n    int
}

// blockDDL runs a replicated schema statement inside a transaction block.
func (s *Session) blockDDL(ctx context.Context, st *Statement, params [][]byte, paramFormats, resultFormats []int16) (pgwire.Result, error) {
	if s.pending == "" {
		// Something ran in the block already: harvest its rows.
		rows, err := s.capture(ctx)
		if err != nil {
			return nil, err
		}
		for i := range rows {
			sql, err := renderRow(&rows[i])
			if err != nil {
				return nil, err
			}
			s.txScript = append(s.txScript, sql)
		}
	}
	rr, mrr, err := s.run(ctx, st, params, paramFormats, resultFormats, false)
	if err != nil {
		return nil, err
	}
	tag, err := rr.Close()
	if mrr != nil {
		if cerr := mrr.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return nil, err
	}
	if err := installAll(ctx, s.c); err != nil {
		return nil, err
	}
	s.txScript = append(s.txScript, st.sql)
	s.txDDL = true
	return &cmdResult{tag: tag.String()}, nil
}

// trackSavepoint follows SAVEPOINT and ROLLBACK TO in a block, after the
// server accepted them.
func (s *Session) trackSavepoint(st *Statement) {
	switch {
	case st.kind == "SAVEPOINT" && len(st.words) > 1:
		s.txMarks = append(s.txMarks, txMark{name: strings.ToLower(st.words[1]), n: len(s.txScript)})
	case st.kind == "ROLLBACK" && len(st.words) > 1 && st.words[1] == "TO":
		name := strings.ToLower(st.words[len(st.words)-1])
		for i := len(s.txMarks) - 1; i >= 0; i-- {
			if s.txMarks[i].name == name {
				s.txScript = s.txScript[:s.txMarks[i].n]
				s.txMarks = s.txMarks[:i+1]
				break
			}
		}
	}
}

// takeScript returns the block's replicated script ("" without DDL) and
// forgets it.
func (s *Session) takeScript() string {
	script := ""
	if s.txDDL {
		script = strings.Join(s.txScript, ";\n")
	}
	s.txScript, s.txMarks, s.txDDL = nil, nil, false
	return script
}

// renderRow is a row's apply statement with its values written in as
// literals (PostgreSQL resolves an untyped literal from its column, as it
// does an untyped parameter).
func renderRow(r *writeset.Row) (string, error) {
	st, err := writeset.RowStatement(writeset.Postgres, r)
	if err != nil {
		return "", err
	}
	return writeset.Inline(writeset.Postgres, st)
}

// noTxDDL reports a schema statement PostgreSQL refuses inside a
// transaction block (CREATE / DROP INDEX CONCURRENTLY, REINDEX
// CONCURRENTLY), and returns the text a standby runs in its apply
// transaction (without CONCURRENTLY: a standby serves no writes).
func noTxDDL(st *Statement) (string, bool) {
	w := append(append([]string(nil), st.words...), "", "", "", "")
	switch {
	case st.kind == "CREATE" && w[1] == "INDEX" && w[2] == "CONCURRENTLY",
		st.kind == "CREATE" && w[1] == "UNIQUE" && w[2] == "INDEX" && w[3] == "CONCURRENTLY",
		st.kind == "DROP" && w[1] == "INDEX" && w[2] == "CONCURRENTLY",
		st.kind == "REINDEX" && w[2] == "CONCURRENTLY":
		return stripWord(st.sql, "CONCURRENTLY"), true
	}
	return "", false
}

// stripWord removes the first occurrence of a keyword (case-insensitive,
// as a whole word).
func stripWord(sql, word string) string {
	u := strings.ToUpper(sql)
	for i := 0; ; {
		j := strings.Index(u[i:], word)
		if j < 0 {
			return sql
		}
		j += i
		end := j + len(word)
		before := j == 0 || !isWordByte(u[j-1])
		after := end == len(u) || !isWordByte(u[end])
		if before && after {
			return sql[:j] + sql[end:]
		}
		i = end
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

// runNoTxDDL runs such a statement outside any transaction, as PostgreSQL
// requires, then replicates it as a DDL writeset of its own. A crash
// between the two leaves the primary with the index and the standby
// without it (the statement is not in the log).
func (s *Session) runNoTxDDL(ctx context.Context, st *Statement, standbyText string, params [][]byte, paramFormats, resultFormats []int16) (pgwire.Result, error) {
	rr := s.c.ExecPrepared(ctx, st.name, params, paramFormats, resultFormats)
	tag, err := rr.Close()
	if err != nil {
		return nil, err
	}
	if err := s.exec(ctx, "BEGIN"); err != nil {
		return nil, err
	}
	if err := s.replicatedCommit(ctx, standbyText, nil); err != nil {
		return nil, err
	}
	return &cmdResult{tag: tag.String()}, nil
}
