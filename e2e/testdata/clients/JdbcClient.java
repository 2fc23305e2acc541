// pgjdbc against tandem: PreparedStatement (server-prepared after a few
// executions, binary transfer), batch, DatabaseMetaData.getTables,
// getColumns, getPrimaryKeys and getIndexInfo. Usage: java -cp postgresql.jar:. JdbcClient JDBC_URL USER PASSWORD
import java.math.BigDecimal;
import java.sql.*;
import java.util.*;

public class JdbcClient {
    static void fail(String msg) {
        System.out.println("FAIL: " + msg);
        System.exit(1);
    }

    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", args[1]);
        p.setProperty("password", args[2]);
        p.setProperty("prepareThreshold", "1"); // server-side prepared from the first execution
        try (Connection c = DriverManager.getConnection(args[0], p)) {
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS jd_acct");
                s.execute("CREATE TABLE jd_acct (id bigint PRIMARY KEY, owner varchar(30) NOT NULL, balance numeric(12,2) DEFAULT 0, opened date, active boolean, note text)");
            }
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jd_acct (id, owner, balance, opened, active, note) VALUES (?, ?, ?, ?, ?, ?)")) {
                for (int i = 1; i <= 5; i++) {
                    ps.setLong(1, i);
                    ps.setString(2, "owner" + i);
                    ps.setBigDecimal(3, new BigDecimal(i + ".50"));
                    ps.setDate(4, java.sql.Date.valueOf("2024-01-0" + i));
                    ps.setBoolean(5, i % 2 == 0);
                    if (i == 5) ps.setNull(6, Types.VARCHAR); else ps.setString(6, "n" + i);
                    if (ps.executeUpdate() != 1) fail("executeUpdate count");
                }
            }
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jd_acct (id, owner, balance) VALUES (?, ?, ?)")) {
                for (int i = 100; i < 110; i++) {
                    ps.setLong(1, i);
                    ps.setString(2, "batch" + i);
                    ps.setBigDecimal(3, BigDecimal.valueOf(i));
                    ps.addBatch();
                }
                int[] counts = ps.executeBatch();
                if (counts.length != 10) fail("batch counts " + Arrays.toString(counts));
                for (int n : counts) if (n != 1 && n != Statement.SUCCESS_NO_INFO) fail("batch counts " + Arrays.toString(counts));
            }
            c.commit();
            // A fetch-size cursor (a suspended portal) left open across
            // COMMIT: the commit holds, and the portal is gone with its
            // transaction (34000, as on PostgreSQL), not read on.
            try (PreparedStatement ps = c.prepareStatement("SELECT id FROM jd_acct ORDER BY id")) {
                ps.setFetchSize(2);
                ResultSet rs = ps.executeQuery();
                if (!rs.next()) fail("fetch-size cursor: no first row");
                try (Statement s = c.createStatement()) {
                    s.executeUpdate("INSERT INTO jd_acct (id, owner) VALUES (200, 'across-commit')");
                }
                c.commit();
                try {
                    int n = 1;
                    while (rs.next()) n++;
                    fail("the cursor read " + n + " rows after its transaction committed");
                } catch (SQLException e) {
                    if (!"34000".equals(e.getSQLState())) fail("cursor after COMMIT: SQLSTATE " + e.getSQLState() + ": " + e.getMessage());
                }
            }
            c.setAutoCommit(true);
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT owner FROM jd_acct WHERE id = 200")) {
                if (!rs.next() || !rs.getString(1).equals("across-commit")) fail("the insert committed with a cursor open is missing");
            }
            try (Statement s = c.createStatement()) {
                s.executeUpdate("DELETE FROM jd_acct WHERE id = 200");
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT id, owner, balance, opened, active, note FROM jd_acct WHERE id = ?")) {
                for (int round = 0; round < 3; round++) {
                    ps.setLong(1, 2);
                    try (ResultSet rs = ps.executeQuery()) {
                        if (!rs.next()) fail("no row for id 2");
                        if (rs.getLong(1) != 2 || !rs.getString(2).equals("owner2") || rs.getBigDecimal(3).compareTo(new BigDecimal("2.50")) != 0
                                || !rs.getDate(4).toString().equals("2024-01-02") || !rs.getBoolean(5) || !"n2".equals(rs.getString(6)))
                            fail("row 2: " + rs.getLong(1) + " " + rs.getString(2) + " " + rs.getBigDecimal(3) + " " + rs.getDate(4) + " " + rs.getBoolean(5) + " " + rs.getString(6));
                        ResultSetMetaData md = rs.getMetaData();
                        String[] want = {"int8", "varchar", "numeric", "date", "bool", "text"};
                        for (int i = 0; i < want.length; i++)
                            if (!md.getColumnTypeName(i + 1).equals(want[i])) fail("column " + (i + 1) + " type " + md.getColumnTypeName(i + 1) + ", want " + want[i]);
                    }
                }
                ps.setLong(1, 5);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getString(6) != null || !rs.wasNull()) fail("NULL note");
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*), sum(balance) FROM jd_acct WHERE owner LIKE ?")) {
                ps.setString(1, "batch%");
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (rs.getLong(1) != 10 || rs.getBigDecimal(2).compareTo(new BigDecimal("1045")) != 0) fail("batch rows: " + rs.getLong(1) + " " + rs.getBigDecimal(2));
                }
            }
            try (Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO jd_acct (id, owner) VALUES (1, 'dup')");
                fail("duplicate key accepted");
            } catch (SQLException e) {
                if (!"23505".equals(e.getSQLState())) fail("duplicate key SQLSTATE " + e.getSQLState() + ": " + e.getMessage());
            }
            DatabaseMetaData md = c.getMetaData();
            boolean found = false;
            try (ResultSet rs = md.getTables(null, "public", "jd_%", new String[] {"TABLE"})) {
                while (rs.next()) if (rs.getString("TABLE_NAME").equals("jd_acct")) found = "TABLE".equals(rs.getString("TABLE_TYPE"));
            }
            if (!found) fail("getTables did not list jd_acct as a TABLE");
            List<String> cols = new ArrayList<>();
            try (ResultSet rs = md.getColumns(null, "public", "jd_acct", null)) {
                while (rs.next()) {
                    String name = rs.getString("COLUMN_NAME");
                    cols.add(name + ":" + rs.getString("TYPE_NAME") + ":" + rs.getInt("DATA_TYPE") + ":" + rs.getInt("NULLABLE"));
                    if (name.equals("owner") && rs.getInt("COLUMN_SIZE") != 30) fail("owner COLUMN_SIZE " + rs.getInt("COLUMN_SIZE"));
                    if (name.equals("balance") && (rs.getInt("COLUMN_SIZE") != 12 || rs.getInt("DECIMAL_DIGITS") != 2)) fail("balance size " + rs.getInt("COLUMN_SIZE") + "," + rs.getInt("DECIMAL_DIGITS"));
                }
            }
            List<String> want = Arrays.asList("id:int8:" + Types.BIGINT + ":0", "owner:varchar:" + Types.VARCHAR + ":0", "balance:numeric:" + Types.NUMERIC + ":1",
                    "opened:date:" + Types.DATE + ":1", "active:bool:" + Types.BIT + ":1", "note:text:" + Types.VARCHAR + ":1");
            if (!cols.equals(want)) fail("getColumns: " + cols + ", want " + want);
            try (ResultSet rs = md.getPrimaryKeys(null, "public", "jd_acct")) {
                if (!rs.next() || !rs.getString("COLUMN_NAME").equals("id")) fail("getPrimaryKeys");
            }
            // getIndexInfo: each index column by name and 1-based position
            // ((_pg_expandarray(indkey)).n, then pg_get_indexdef(oid, n)).
            List<String> idx = new ArrayList<>();
            try (ResultSet rs = md.getIndexInfo(null, "public", "jd_acct", false, false)) {
                while (rs.next()) idx.add(rs.getString("INDEX_NAME") + ":" + rs.getString("COLUMN_NAME") + ":" + rs.getInt("ORDINAL_POSITION") + ":" + rs.getBoolean("NON_UNIQUE"));
            }
            if (!idx.contains("jd_acct_pkey:id:1:false")) fail("getIndexInfo: " + idx);
        }
        // pgjdbc's defaults (unnamed statements for the first five
        // executions): with autocommit off its BEGIN travels with the first
        // query; a block that reads first and then writes must commit
        // (behind a transaction router it must not go to a replica).
        Properties d = new Properties();
        d.setProperty("user", args[1]);
        d.setProperty("password", args[2]);
        try (Connection c = DriverManager.getConnection(args[0], d)) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("SELECT balance FROM jd_acct WHERE id = ?")) {
                ps.setLong(1, 1);
                try (ResultSet rs = ps.executeQuery()) {
                    if (!rs.next()) fail("read-then-write block: no row 1");
                }
            }
            try (Statement s = c.createStatement()) {
                if (s.executeUpdate("UPDATE jd_acct SET note = 'read-then-write' WHERE id = 1") != 1) fail("read-then-write block: update count");
            } catch (SQLException e) {
                fail("a block that read first could not write: " + e.getSQLState() + " " + e.getMessage());
            }
            c.commit();
            c.setAutoCommit(true);
            try (Statement s = c.createStatement()) {
                s.execute("DROP TABLE jd_acct");
            }
        }
        // pgjdbc sends the JVM's zone as the TimeZone startup parameter:
        // timestamptz values print in it, and text without an offset is
        // read in it; setTimestamp and getTimestamp keep the instant.
        TimeZone saved = TimeZone.getDefault();
        TimeZone.setDefault(TimeZone.getTimeZone("Europe/Berlin"));
        try (Connection c = DriverManager.getConnection(args[0], d)) {
            try (Statement s = c.createStatement();
                 ResultSet rs = s.executeQuery("SELECT current_setting('TimeZone'), '2024-01-05 10:00'::timestamptz::text, '2024-01-05 10:00'::timestamptz, extract(hour from '2024-07-01 12:00+00'::timestamptz)")) {
                rs.next();
                if (!rs.getString(1).equals("Europe/Berlin")) fail("TimeZone of a Europe/Berlin JVM: " + rs.getString(1));
                if (!rs.getString(2).equals("2024-01-05 10:00:00+01")) fail("a literal in the JVM's zone printed as " + rs.getString(2));
                if (!rs.getTimestamp(3).toInstant().toString().equals("2024-01-05T09:00:00Z")) fail("getTimestamp of 10:00 Berlin: " + rs.getTimestamp(3).toInstant());
                if (rs.getInt(4) != 14) fail("extract(hour) of 12:00 UTC in Berlin's summer: " + rs.getInt(4));
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT ?::timestamptz::text")) {
                ps.setTimestamp(1, Timestamp.from(java.time.Instant.parse("2024-07-01T12:00:00Z")));
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    if (!rs.getString(1).equals("2024-07-01 14:00:00+02")) fail("setTimestamp of 12:00Z read back as " + rs.getString(1));
                }
            }
        } finally {
            TimeZone.setDefault(saved);
        }
        System.out.println("ok");
    }
}
