package router

import (
	"strings"
	"sync"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Statement classes for transaction routing (txroute.go). Only what is
// shown to change nothing may run on a replica; anything else, including
// what the parser cannot read, goes to the primary.
type stmtClass uint8

const (
	classWrite   stmtClass = iota // the primary
	classRead                     // a plain SELECT (or SHOW): a replica may run it
	classBeginRO                  // BEGIN / START TRANSACTION ... READ ONLY
	classNeutral                  // COMMIT, ROLLBACK, SAVEPOINT, SET, RESET, DISCARD: wherever the session is
)

// classification is what the router knows of a statement text.
type classification struct {
	class stmtClass
	// force: a leading /* tandem:primary */ or /* tandem:replica */.
	force route
	// readOnlyDefault: the text sets default_transaction_read_only (or
	// the session's characteristics): +1 on, -1 off (RESET, DISCARD).
	readOnlyDefault int8
	// plainBegin: the text is one BEGIN / START TRANSACTION without READ
	// ONLY; setTxRO: it starts with SET TRANSACTION ... READ ONLY.
	plainBegin, setTxRO bool
}

// route is where a session's transactions go (SET tandem.route).
type route uint8

const (
	routeAuto route = iota
	routePrimary
	routeReplica
)

func parseRoute(v string) (route, bool) {
	switch strings.ToLower(strings.Trim(strings.TrimSpace(v), `'"`)) {
	case "auto", "default":
		return routeAuto, true
	case "primary":
		return routePrimary, true
	case "replica":
		return routeReplica, true
	}
	return 0, false
}

func (r route) String() string {
	switch r {
	case routePrimary:
		return "primary"
	case routeReplica:
		return "replica"
	}
	return "auto"
}

// classifier classifies statement texts, caching what it parsed.
type classifier struct {
	userFuncs map[string]bool // router.read_only_functions, lower case
	mu        sync.Mutex
	cache     map[string]classification
}

const classCacheSize = 8192

func newClassifier(readOnlyFuncs []string) *classifier {
	c := &classifier{userFuncs: map[string]bool{}, cache: map[string]classification{}}
	for _, f := range readOnlyFuncs {
		c.userFuncs[strings.ToLower(strings.TrimSpace(f))] = true
	}
	return c
}

// classify classifies one Query or Parse text (it may hold several
// statements: the most demanding wins).
func (c *classifier) classify(sql string) classification {
	force := forcedRoute(sql)
	if fastRead(sql) {
		return classification{class: classRead, force: force}
	}
	c.mu.Lock()
	cl, ok := c.cache[sql]
	c.mu.Unlock()
	if ok {
		return cl
	}
	cl = c.parse(sql)
	cl.force = force
	c.mu.Lock()
	if len(c.cache) >= classCacheSize {
		clear(c.cache) // texts with literals would grow it without bound
	}
	c.cache[sql] = cl
	c.mu.Unlock()
	return cl
}

// forcedRoute reads a leading /* tandem:primary */ or /* tandem:replica */.
func forcedRoute(sql string) route {
	s := strings.TrimLeft(sql, " \t\r\n")
	if !strings.HasPrefix(s, "/*") {
		return routeAuto
	}
	end := strings.Index(s, "*/")
	if end < 0 {
		return routeAuto
	}
	body := strings.ToLower(strings.TrimSpace(s[2:end]))
	switch {
	case strings.HasPrefix(body, "tandem:primary"):
		return routePrimary
	case strings.HasPrefix(body, "tandem:replica"):
		return routeReplica
	}
	return routeAuto
}

// fastRead recognises, without the parser, the commonest read: SELECT
// with no parenthesis (so no function call, subquery or CTE), no comment,
// no second statement, and neither FOR (locking) nor INTO (a new table)
// anywhere, even inside a literal (which only sends it to the parser).
func fastRead(sql string) bool {
	s := strings.TrimLeft(sql, " \t\r\n")
	if len(s) < 7 || !strings.EqualFold(s[:6], "select") || !isSpace(s[6]) {
		return false
	}
	s = strings.TrimRight(s, " \t\r\n;")
	word := 0 // start of the current word
	for i := 0; i <= len(s); i++ {
		var ch byte = ' '
		if i < len(s) {
			ch = s[i]
		}
		switch ch {
		case '(', ';':
			return false
		case '-':
			if i+1 < len(s) && s[i+1] == '-' {
				return false
			}
		case '/':
			if i+1 < len(s) && s[i+1] == '*' {
				return false
			}
		}
		if isWordByte(ch) {
			continue
		}
		if n := i - word; n == 3 && strings.EqualFold(s[word:i], "for") || n == 4 && strings.EqualFold(s[word:i], "into") {
			return false
		}
		word = i + 1
	}
	return true
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

func isWordByte(b byte) bool {
	return b == '_' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b >= 0x80
}

// parse classifies with PostgreSQL's grammar.
func (c *classifier) parse(sql string) classification {
	tree, err := pg_query.Parse(sql)
	if err != nil || len(tree.Stmts) == 0 {
		return classification{class: classWrite} // the primary answers the error
	}
	out := classification{class: classNeutral}
	reads, begins := false, false
	for _, raw := range tree.Stmts {
		n := raw.GetStmt()
		switch {
		case n.GetSelectStmt() != nil:
			if !c.readOnlyTree(n.ProtoReflect()) {
				return classification{class: classWrite}
			}
			reads = true
		case n.GetExplainStmt() != nil:
			if !c.readOnlyTree(n.ProtoReflect()) {
				return classification{class: classWrite}
			}
			reads = true
		case n.GetVariableShowStmt() != nil:
			reads = true
		case n.GetTransactionStmt() != nil:
			ts := n.GetTransactionStmt()
			switch ts.Kind {
			case pg_query.TransactionStmtKind_TRANS_STMT_BEGIN, pg_query.TransactionStmtKind_TRANS_STMT_START:
				if !readOnlyOption(ts.Options) {
					return classification{class: classWrite, plainBegin: len(tree.Stmts) == 1 && !hasOption(ts.Options, "transaction_read_only")}
				}
				begins = true
			case pg_query.TransactionStmtKind_TRANS_STMT_PREPARE, pg_query.TransactionStmtKind_TRANS_STMT_COMMIT_PREPARED, pg_query.TransactionStmtKind_TRANS_STMT_ROLLBACK_PREPARED:
				return classification{class: classWrite}
			}
		case n.GetVariableSetStmt() != nil:
			vs := n.GetVariableSetStmt()
			switch strings.ToLower(vs.Name) {
			case "default_transaction_read_only":
				if vs.Kind == pg_query.VariableSetKind_VAR_SET_VALUE && len(vs.Args) == 1 {
					out.readOnlyDefault = boolSetting(vs.Args[0])
				} else {
					out.readOnlyDefault = -1 // DEFAULT, RESET
				}
			case "transaction":
				if readOnlyOption(vs.Args) && raw == tree.Stmts[0] {
					out.setTxRO = true
				}
			case "session characteristics":
				if readOnlyOption(vs.Args) {
					out.readOnlyDefault = 1
				} else if hasOption(vs.Args, "transaction_read_only") {
					out.readOnlyDefault = -1
				}
			case "":
				if vs.Kind == pg_query.VariableSetKind_VAR_RESET_ALL {
					out.readOnlyDefault = -1
				}
			}
		case n.GetDiscardStmt() != nil:
			out.readOnlyDefault = -1
		default:
			return classification{class: classWrite}
		}
	}
	switch {
	case begins:
		out.class = classBeginRO
	case reads:
		out.class = classRead
	}
	return out
}

// readOnlyOption reports whether transaction options say READ ONLY.
func readOnlyOption(opts []*pg_query.Node) bool {
	for _, o := range opts {
		if d := o.GetDefElem(); d != nil && d.Defname == "transaction_read_only" {
			return d.Arg.GetAConst().GetIval().GetIval() == 1
		}
	}
	return false
}

func hasOption(opts []*pg_query.Node, name string) bool {
	for _, o := range opts {
		if d := o.GetDefElem(); d != nil && d.Defname == name {
			return true
		}
	}
	return false
}

// boolSetting reads a SET value as PostgreSQL's booleans: +1 on, -1 off.
func boolSetting(n *pg_query.Node) int8 {
	a := n.GetAConst()
	if a == nil {
		return -1
	}
	if iv := a.GetIval(); iv != nil {
		if iv.Ival != 0 {
			return 1
		}
		return -1
	}
	if bv := a.GetBoolval(); bv != nil {
		if bv.Boolval {
			return 1
		}
		return -1
	}
	switch strings.ToLower(a.GetSval().GetSval()) {
	case "on", "true", "yes", "1", "t", "y":
		return 1
	}
	return -1
}

// readOnlyTree reports whether a statement's tree changes nothing: no
// locking clause, no SELECT INTO, no data-modifying CTE, and only
// functions known to be read-only.
func (c *classifier) readOnlyTree(m protoreflect.Message) bool {
	ok := true
	var walk func(m protoreflect.Message)
	walk = func(m protoreflect.Message) {
		if !ok {
			return
		}
		switch m.Descriptor().Name() {
		case "LockingClause", "IntoClause", "InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt":
			ok = false
			return
		case "FuncCall":
			if fc, isFC := m.Interface().(*pg_query.FuncCall); isFC && !c.readOnlyFunc(fc.Funcname) {
				ok = false
				return
			}
		}
		m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
			switch {
			case fd.IsList() && fd.Message() != nil:
				l := v.List()
				for i := 0; i < l.Len() && ok; i++ {
					walk(l.Get(i).Message())
				}
			case fd.Message() != nil && !fd.IsMap():
				walk(v.Message())
			}
			return ok
		})
	}
	walk(m)
	return ok
}

// readOnlyFunc reports whether a called function is known to change
// nothing: a PostgreSQL built-in on the allow list (unqualified or in
// pg_catalog), or one router.read_only_functions names.
func (c *classifier) readOnlyFunc(name []*pg_query.Node) bool {
	parts := make([]string, 0, len(name))
	for _, n := range name {
		parts = append(parts, strings.ToLower(n.GetString_().GetSval()))
	}
	full := strings.Join(parts, ".")
	if c.userFuncs[full] {
		return true
	}
	last := parts[len(parts)-1]
	if len(parts) == 1 || len(parts) == 2 && parts[0] == "pg_catalog" {
		return readOnlyBuiltins[last]
	}
	return false
}

// readOnlyBuiltins are PostgreSQL built-in functions that change nothing
// and keep no session state a replica would lack. Not on it, by design:
// nextval, setval, currval, lastval (sequences: the primary's, and
// currval/lastval are session state), pg_advisory_* (locks), lo_*
// (large objects), txid_current and pg_current_xact_id (assign an xid),
// set_config, pg_notify, and every administrative function.
var readOnlyBuiltins = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Fields(`
count sum avg min max every bool_and bool_or bit_and bit_or array_agg string_agg json_agg jsonb_agg
json_object_agg jsonb_object_agg stddev stddev_pop stddev_samp variance var_pop var_samp corr covar_pop
covar_samp percentile_cont percentile_disc mode regr_slope regr_intercept
row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
coalesce nullif greatest least abs ceil ceiling floor round trunc sign sqrt cbrt exp ln log log10 power pow
mod div degrees radians pi random sin cos tan asin acos atan atan2 width_bucket gcd lcm factorial
lower upper initcap length char_length character_length octet_length bit_length substr substring
trim btrim ltrim rtrim lpad rpad replace translate reverse repeat left right position strpos split_part
concat concat_ws format md5 sha224 sha256 sha384 sha512 encode decode to_hex ascii chr quote_ident
quote_literal quote_nullable regexp_replace regexp_match regexp_matches regexp_split_to_array
regexp_split_to_table regexp_like regexp_count regexp_instr regexp_substr starts_with string_to_array
array_to_string unnest array_length array_lower array_upper array_dims array_position array_positions
array_cat array_append array_prepend array_remove array_replace cardinality generate_series
generate_subscripts now current_timestamp current_date current_time localtime localtimestamp
statement_timestamp transaction_timestamp clock_timestamp timeofday date_trunc date_part extract
date_bin age make_date make_time make_timestamp make_timestamptz make_interval justify_days
justify_hours justify_interval isfinite to_char to_date to_number to_timestamp timezone
json_build_object jsonb_build_object json_build_array jsonb_build_array to_json to_jsonb row_to_json
array_to_json json_object jsonb_object json_array_length jsonb_array_length json_extract_path
jsonb_extract_path json_extract_path_text jsonb_extract_path_text json_typeof jsonb_typeof
jsonb_set jsonb_insert jsonb_strip_nulls jsonb_pretty json_each jsonb_each json_each_text
jsonb_each_text json_array_elements jsonb_array_elements json_array_elements_text
jsonb_array_elements_text json_object_keys jsonb_object_keys jsonb_path_query jsonb_path_exists
jsonb_path_match jsonb_path_query_array jsonb_path_query_first
version current_database current_schema current_schemas current_user session_user user
current_setting pg_backend_pid inet_server_addr inet_server_port inet_client_addr inet_client_port
has_table_privilege has_schema_privilege has_database_privilege has_column_privilege
has_function_privilege pg_has_role pg_table_is_visible pg_type_is_visible pg_function_is_visible
format_type pg_get_expr pg_get_indexdef pg_get_constraintdef pg_get_viewdef pg_get_functiondef
pg_get_userbyid pg_get_serial_sequence pg_relation_size pg_total_relation_size pg_table_size
pg_indexes_size pg_database_size pg_size_pretty pg_typeof pg_column_size pg_encoding_to_char
obj_description col_description shobj_description pg_postmaster_start_time pg_is_in_recovery
gen_random_uuid uuid_generate_v4 bool int2 int4 int8 float4 float8 numeric text varchar
num_nulls num_nonnulls to_tsvector to_tsquery plainto_tsquery phraseto_tsquery websearch_to_tsquery
ts_rank ts_rank_cd ts_headline setweight
`) {
		m[f] = true
	}
	return m
}()
