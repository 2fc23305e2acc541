package sqlite

/*
#include <stdlib.h>
// sqlite3_complete is SQLite's own statement-completeness check (it knows
// quotes, comments and CREATE TRIGGER ... BEGIN ... END), from the library
// go-sqlite3 links into this binary.
extern int sqlite3_complete(const char *sql);
*/
import "C"

import (
	"strings"
	"unsafe"
)

// scriptChunk is the size a script is cut to before it is executed.
const scriptChunk = 64 << 10

// complete reports whether sql ends at the end of a whole statement.
func complete(sql string) bool {
	cs := C.CString(sql)
	defer C.free(unsafe.Pointer(cs))
	return C.sqlite3_complete(cs) != 0
}

// execScript runs a script of many statements in chunks of whole statements
// (about scriptChunk bytes each). go-sqlite3 copies the rest of a script
// for every statement it runs, so a writeset's script of 20,000 row
// statements (a data migration in a block, 33 MB) took minutes to apply as
// one Exec; in chunks it is linear.
func (c *conn) execScript(script string) (failed string, err error) {
	if len(script) <= scriptChunk {
		return script, c.exec(script)
	}
	var chunk strings.Builder
	flush := func() (string, error) {
		s := chunk.String()
		chunk.Reset()
		if strings.TrimSpace(s) == "" {
			return "", nil
		}
		return s, c.exec(s)
	}
	for len(script) > 0 {
		piece, rest := cutStatement(script)
		chunk.WriteString(piece)
		script = rest
		if chunk.Len() >= scriptChunk && complete(chunk.String()) {
			if s, err := flush(); err != nil {
				return s, err
			}
		}
	}
	return flush()
}

// cutStatement returns the text up to and including the first semicolon
// outside quotes and comments, and the rest. It may cut inside a trigger's
// body; execScript only runs a chunk SQLite calls complete.
func cutStatement(s string) (string, string) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ';':
			return s[:i+1], s[i+1:]
		case '\'', '"', '`':
			q := s[i]
			for i++; i < len(s) && s[i] != q; i++ {
			}
		case '[':
			for i++; i < len(s) && s[i] != ']'; i++ {
			}
		case '-':
			if i+1 < len(s) && s[i+1] == '-' {
				for i += 2; i < len(s) && s[i] != '\n'; i++ {
				}
			}
		case '/':
			if i+1 < len(s) && s[i+1] == '*' {
				end := strings.Index(s[i+2:], "*/")
				if end < 0 {
					return s, ""
				}
				i += 2 + end + 1
			}
		}
	}
	return s, ""
}
