package tm1

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/tandemdb/tandem/bench"
)

// Statements, exactly as the spec writes them (portable SQL, $n parameters).
const (
	stGetSubscriber = iota
	stGetNewDestination
	stGetAccess
	stUpdateSubscriberBit
	stUpdateSpecialFacility
	stUpdateLocation
	stSelectSID
	stSelectSFType
	stInsertCallForwarding
	stDeleteCallForwarding
	numStatements
)

var statements = [numStatements]struct{ name, sql string }{
	stGetSubscriber: {"tm1_get_subscriber_data", `SELECT s_id, sub_nbr, ` +
		`bit_1, bit_2, bit_3, bit_4, bit_5, bit_6, bit_7, bit_8, bit_9, bit_10, ` +
		`hex_1, hex_2, hex_3, hex_4, hex_5, hex_6, hex_7, hex_8, hex_9, hex_10, ` +
		`byte2_1, byte2_2, byte2_3, byte2_4, byte2_5, byte2_6, byte2_7, byte2_8, byte2_9, byte2_10, ` +
		`msc_location, vlr_location FROM subscriber WHERE s_id = $1`},
	stGetNewDestination: {"tm1_get_new_destination", `SELECT cf.numberx FROM special_facility AS sf, call_forwarding AS cf ` +
		`WHERE sf.s_id = $1 AND sf.sf_type = $2 AND sf.is_active = 1 ` +
		`AND cf.s_id = sf.s_id AND cf.sf_type = sf.sf_type ` +
		`AND cf.start_time <= $3 AND $4 < cf.end_time`},
	stGetAccess:             {"tm1_get_access_data", `SELECT data1, data2, data3, data4 FROM access_info WHERE s_id = $1 AND ai_type = $2`},
	stUpdateSubscriberBit:   {"tm1_update_subscriber_bit", `UPDATE subscriber SET bit_1 = $1 WHERE s_id = $2`},
	stUpdateSpecialFacility: {"tm1_update_special_facility", `UPDATE special_facility SET data_a = $1 WHERE s_id = $2 AND sf_type = $3`},
	stUpdateLocation:        {"tm1_update_location", `UPDATE subscriber SET vlr_location = $1 WHERE sub_nbr = $2`},
	stSelectSID:             {"tm1_select_s_id", `SELECT s_id FROM subscriber WHERE sub_nbr = $1`},
	stSelectSFType:          {"tm1_select_sf_type", `SELECT sf_type FROM special_facility WHERE s_id = $1`},
	stInsertCallForwarding:  {"tm1_insert_call_forwarding", `INSERT INTO call_forwarding VALUES ($1, $2, $3, $4, $5)`},
	stDeleteCallForwarding:  {"tm1_delete_call_forwarding", `DELETE FROM call_forwarding WHERE s_id = $1 AND sf_type = $2 AND start_time = $3`},
}

// Statement returns the SQL text of a TM1 statement by its prepared name
// (e.g. "tm1_update_location"), for documentation and tests.
func Statement(name string) (string, bool) {
	for _, s := range statements {
		if s.name == name {
			return s.sql, true
		}
	}
	return "", false
}

// client runs TM1 transactions on one connection. Argument slices and scan
// destinations are reused from one transaction to the next.
type client struct {
	conn *pgx.Conn
	keys *Keys
	rng  *rand.Rand
	q    [numStatements]string // prepared statement names, or SQL with the simple protocol

	a1 [1]any
	a2 [2]any
	a3 [3]any
	a4 [4]any
	a5 [5]any

	sub     subscriberRow
	subDest []any
	acc     accessRow
	accDest []any
	i32     int32
	i16     int16
	str     pgtype.Text
	nbr     [15]byte
}

// Rows are scanned into nullable types: the schema allows NULL in every
// non-key column, and reading one is not an error.
type subscriberRow struct {
	sid                 int32
	subNbr              string
	bits, hexes, bytes2 [10]pgtype.Int2
	msc, vlr            pgtype.Int4
}

type accessRow struct {
	data1, data2 pgtype.Int2
	data3, data4 pgtype.Text
}

// NewClient implements bench.Workload. Unless the connection uses the simple
// protocol, it prepares the ten statements once, by name.
func (*Workload) NewClient(ctx context.Context, conn *pgx.Conn, rng *rand.Rand, p bench.ClientParams) (bench.Client, error) {
	if p.Scale <= 0 {
		return nil, fmt.Errorf("tm1: %w: subscribers must be > 0 (got %d)", bench.ErrBadOption, p.Scale)
	}
	c := &client{conn: conn, rng: rng, keys: NewKeys(rng, p.Scale, p.Uniform)}
	for i, s := range statements {
		if p.Simple {
			c.q[i] = s.sql
			continue
		}
		if _, err := conn.Prepare(ctx, s.name, s.sql); err != nil {
			return nil, fmt.Errorf("tm1: prepare %s: %w", s.name, err)
		}
		c.q[i] = s.name
	}
	c.subDest = []any{&c.sub.sid, &c.sub.subNbr}
	for i := range 10 {
		c.subDest = append(c.subDest, &c.sub.bits[i])
	}
	for i := range 10 {
		c.subDest = append(c.subDest, &c.sub.hexes[i])
	}
	for i := range 10 {
		c.subDest = append(c.subDest, &c.sub.bytes2[i])
	}
	c.subDest = append(c.subDest, &c.sub.msc, &c.sub.vlr)
	c.accDest = []any{&c.acc.data1, &c.acc.data2, &c.acc.data3, &c.acc.data4}
	return c, nil
}

// Run implements bench.Client.
func (c *client) Run(ctx context.Context, t bench.TxType) (bench.Outcome, error) {
	switch t {
	case GetSubscriberData:
		return c.getSubscriberData(ctx)
	case GetNewDestination:
		return c.getNewDestination(ctx)
	case GetAccessData:
		return c.getAccessData(ctx)
	case UpdateSubscriberData:
		return c.updateSubscriberData(ctx)
	case UpdateLocation:
		return c.updateLocation(ctx)
	case InsertCallForwarding:
		return c.insertCallForwarding(ctx)
	case DeleteCallForwarding:
		return c.deleteCallForwarding(ctx)
	}
	return bench.Failed, fmt.Errorf("tm1: unknown transaction type %d", t)
}

func (c *client) subNbr(sid int) string {
	return string(appendSubNbr(c.nbr[:0], sid))
}

// Single-statement transactions run as one implicit (autocommit)
// transaction: the same database transaction as BEGIN; stmt; COMMIT, one
// round trip instead of three.

func (c *client) getSubscriberData(ctx context.Context) (bench.Outcome, error) {
	c.a1[0] = c.keys.SID()
	return readOutcome(c.conn.QueryRow(ctx, c.q[stGetSubscriber], c.a1[:]...).Scan(c.subDest...))
}

func (c *client) getNewDestination(ctx context.Context) (bench.Outcome, error) {
	c.a4[0], c.a4[1], c.a4[2], c.a4[3] = c.keys.SID(), c.keys.Type(), c.keys.StartTime(), c.keys.EndTimeArg()
	rows, err := c.conn.Query(ctx, c.q[stGetNewDestination], c.a4[:]...)
	if err != nil {
		return bench.Classify(err), err
	}
	n := 0
	for rows.Next() {
		if err := rows.Scan(&c.str); err != nil {
			rows.Close()
			return bench.Failed, err
		}
		n++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return bench.Classify(err), err
	}
	if n == 0 {
		return bench.CountedNoRows, nil
	}
	return bench.Counted, nil
}

func (c *client) getAccessData(ctx context.Context) (bench.Outcome, error) {
	c.a2[0], c.a2[1] = c.keys.SID(), c.keys.Type()
	return readOutcome(c.conn.QueryRow(ctx, c.q[stGetAccess], c.a2[:]...).Scan(c.accDest...))
}

func (c *client) updateLocation(ctx context.Context) (bench.Outcome, error) {
	c.a2[0], c.a2[1] = c.keys.Location(), c.subNbr(c.keys.SID())
	tag, err := c.conn.Exec(ctx, c.q[stUpdateLocation], c.a2[:]...)
	if err != nil {
		return bench.Classify(err), err
	}
	if tag.RowsAffected() == 0 {
		return bench.RolledBack, nil
	}
	return bench.Counted, nil
}

func (c *client) updateSubscriberData(ctx context.Context) (bench.Outcome, error) {
	sid, bit, dataA, sfType := c.keys.SID(), c.keys.Bit(), c.keys.Byte(), c.keys.Type()
	if err := c.exec(ctx, "BEGIN"); err != nil {
		return c.fail(ctx, err)
	}
	c.a2[0], c.a2[1] = bit, sid
	tag, err := c.conn.Exec(ctx, c.q[stUpdateSubscriberBit], c.a2[:]...)
	if err != nil {
		return c.fail(ctx, err)
	}
	if tag.RowsAffected() == 0 {
		return c.rollback(ctx)
	}
	c.a3[0], c.a3[1], c.a3[2] = dataA, sid, sfType
	if tag, err = c.conn.Exec(ctx, c.q[stUpdateSpecialFacility], c.a3[:]...); err != nil {
		return c.fail(ctx, err)
	}
	if tag.RowsAffected() == 0 {
		return c.rollback(ctx)
	}
	return c.commit(ctx)
}

func (c *client) insertCallForwarding(ctx context.Context) (bench.Outcome, error) {
	nbr := c.subNbr(c.keys.SID())
	sfType, start := c.keys.Type(), c.keys.StartTime()
	end := start + 1 + c.rng.IntN(8)
	numberx := Digits(c.rng, 15)
	if err := c.exec(ctx, "BEGIN"); err != nil {
		return c.fail(ctx, err)
	}
	c.a1[0] = nbr
	err := c.conn.QueryRow(ctx, c.q[stSelectSID], c.a1[:]...).Scan(&c.i32)
	if errors.Is(err, pgx.ErrNoRows) {
		return c.rollback(ctx)
	} else if err != nil {
		return c.fail(ctx, err)
	}
	sid := int(c.i32)
	// The reference reads the subscriber's facility types but inserts the
	// drawn sf_type whatever they are: a missing facility is an allowed
	// foreign-key violation.
	c.a1[0] = sid
	rows, err := c.conn.Query(ctx, c.q[stSelectSFType], c.a1[:]...)
	if err != nil {
		return c.fail(ctx, err)
	}
	for rows.Next() {
		if err := rows.Scan(&c.i16); err != nil {
			rows.Close()
			return c.fail(ctx, err)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c.fail(ctx, err)
	}
	c.a5[0], c.a5[1], c.a5[2], c.a5[3], c.a5[4] = sid, sfType, start, end, numberx
	if _, err := c.conn.Exec(ctx, c.q[stInsertCallForwarding], c.a5[:]...); err != nil {
		if strings.HasPrefix(bench.SQLState(err), "23") {
			c.abandon(ctx)
			return bench.AllowedError, err
		}
		return c.fail(ctx, err)
	}
	return c.commit(ctx)
}

func (c *client) deleteCallForwarding(ctx context.Context) (bench.Outcome, error) {
	nbr := c.subNbr(c.keys.SID())
	sfType, start := c.keys.Type(), c.keys.StartTime()
	if err := c.exec(ctx, "BEGIN"); err != nil {
		return c.fail(ctx, err)
	}
	c.a1[0] = nbr
	err := c.conn.QueryRow(ctx, c.q[stSelectSID], c.a1[:]...).Scan(&c.i32)
	if errors.Is(err, pgx.ErrNoRows) {
		return c.rollback(ctx)
	} else if err != nil {
		return c.fail(ctx, err)
	}
	c.a3[0], c.a3[1], c.a3[2] = int(c.i32), sfType, start
	tag, err := c.conn.Exec(ctx, c.q[stDeleteCallForwarding], c.a3[:]...)
	if err != nil {
		return c.fail(ctx, err)
	}
	if tag.RowsAffected() == 0 {
		return c.rollback(ctx)
	}
	return c.commit(ctx)
}

func (c *client) exec(ctx context.Context, sql string) error {
	_, err := c.conn.Exec(ctx, sql)
	return err
}

// commit ends a transaction that did its work.
func (c *client) commit(ctx context.Context) (bench.Outcome, error) {
	tag, err := c.conn.Exec(ctx, "COMMIT")
	if err != nil {
		return c.fail(ctx, err)
	}
	if tag.String() == "ROLLBACK" {
		// The server rolled the transaction back at COMMIT (it had failed).
		return bench.Failed, errCommitRolledBack
	}
	return bench.Counted, nil
}

var errCommitRolledBack = errors.New("tm1: COMMIT answered ROLLBACK")

// rollback ends a transaction whose write changed no row: rolled back, not counted.
func (c *client) rollback(ctx context.Context) (bench.Outcome, error) {
	if err := c.exec(ctx, "ROLLBACK"); err != nil {
		return c.fail(ctx, err)
	}
	return bench.RolledBack, nil
}

// fail rolls back after an error and classifies it.
func (c *client) fail(ctx context.Context, err error) (bench.Outcome, error) {
	c.abandon(ctx)
	return bench.Classify(err), err
}

// abandon rolls back, ignoring errors: after a failed statement the
// transaction is dead anyway, and a broken connection is the driver's to
// replace.
func (c *client) abandon(ctx context.Context) {
	if !c.conn.IsClosed() {
		_, _ = c.conn.Exec(ctx, "ROLLBACK")
	}
}

func readOutcome(err error) (bench.Outcome, error) {
	switch {
	case err == nil:
		return bench.Counted, nil
	case errors.Is(err, pgx.ErrNoRows):
		return bench.CountedNoRows, nil
	default:
		return bench.Classify(err), err
	}
}
