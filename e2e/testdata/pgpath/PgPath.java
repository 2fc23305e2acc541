// pgjdbc against tandem (e2e/pgpath_test.go): server-prepared statements
// with binary parameters (prepareThreshold=-1 forces them from the first
// execution), a batch, untyped parameters, a fetch size (named portals read
// in chunks) and CopyManager in and out. Exits non-zero on the first
// mismatch; prints "PgPath: ok" at the end.
import java.io.StringReader;
import java.io.StringWriter;
import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.OffsetDateTime;
import java.time.ZoneOffset;
import java.util.Arrays;
import java.util.UUID;

import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

public class PgPath {
    static void check(String what, Object got, Object want) {
        if (!java.util.Objects.equals(got, want)) {
            System.err.println("PgPath: " + what + ": got " + got + ", want " + want);
            System.exit(1);
        }
    }

    public static void main(String[] args) throws Exception {
        String url = args[0] + "&prepareThreshold=-1&binaryTransfer=true";
        try (Connection c = DriverManager.getConnection(url)) {
            c.setAutoCommit(true);
            try (Statement st = c.createStatement()) {
                st.execute("CREATE TABLE j_types (id int PRIMARY KEY, i bigint, t text, n numeric, ts timestamptz, b bytea, f bool, u uuid)");
            }
            OffsetDateTime ts = OffsetDateTime.of(2026, 11, 25, 3, 4, 5, 123456000, ZoneOffset.UTC);
            UUID u = UUID.fromString("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11");
            byte[] bytes = new byte[] {0, 1, 2, (byte) 255};
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO j_types VALUES (?, ?, ?, ?, ?, ?, ?, ?)")) {
                for (int i = 1; i <= 6; i++) {
                    ps.setInt(1, i);
                    ps.setLong(2, (1L << 40) + i);
                    ps.setString(3, "tëxt " + i);
                    ps.setBigDecimal(4, new BigDecimal("12345.6789"));
                    ps.setObject(5, ts);
                    ps.setBytes(6, bytes);
                    ps.setBoolean(7, i % 2 == 0);
                    ps.setObject(8, u);
                    if (i <= 3) {
                        check("insert " + i, ps.executeUpdate(), 1);
                    } else {
                        ps.addBatch();
                    }
                }
                int[] n = ps.executeBatch();
                check("batch", Arrays.toString(n), "[1, 1, 1]");
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT id, i, t, n, ts, b, f, u FROM j_types WHERE id = ? AND f = ? AND u = ?")) {
                for (int round = 0; round < 3; round++) {
                    ps.setInt(1, 4);
                    ps.setBoolean(2, true);
                    ps.setObject(3, u);
                    try (ResultSet rs = ps.executeQuery()) {
                        check("row found", rs.next(), true);
                        check("id", rs.getInt(1), 4);
                        check("bigint", rs.getLong(2), (1L << 40) + 4);
                        check("text", rs.getString(3), "tëxt 4");
                        check("numeric", rs.getBigDecimal(4), new BigDecimal("12345.6789"));
                        check("timestamptz", rs.getObject(5, OffsetDateTime.class).toInstant(), ts.toInstant());
                        check("bytea", Arrays.toString(rs.getBytes(6)), Arrays.toString(bytes));
                        check("bool", rs.getBoolean(7), true);
                        check("uuid", rs.getObject(8), u);
                    }
                }
            }
            // Untyped parameters (setObject of a string as unspecified).
            try (PreparedStatement ps = c.prepareStatement("SELECT ?::int + 1")) {
                ps.setObject(1, "41", java.sql.Types.OTHER);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    check("untyped", rs.getInt(1), 42);
                }
            }
            // A fetch size: pgjdbc reads a named portal in chunks.
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("SELECT g FROM generate_series(1, 10) g WHERE g > ?")) {
                ps.setFetchSize(3);
                ps.setInt(1, 2);
                int sum = 0, rows = 0;
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        sum += rs.getInt(1);
                        rows++;
                        if (rows == 1) {
                            // The portal lives on the server while it is read
                            // (as on a direct connection), not in the node.
                            try (Statement st = c.createStatement(); ResultSet cr = st.executeQuery("SELECT count(*) FROM pg_cursors WHERE name <> '' AND NOT is_holdable")) {
                                cr.next();
                                check("open portals on the server", cr.getInt(1) >= 1, true);
                            }
                        }
                    }
                }
                check("fetch size rows", rows, 8);
                check("fetch size sum", sum, 52);
            }
            c.commit();
            c.setAutoCommit(true);
            // CopyManager in (text, csv with options) and out.
            try (Statement st = c.createStatement()) {
                st.execute("CREATE TABLE j_copy (id int PRIMARY KEY, v text)");
            }
            CopyManager cm = c.unwrap(PGConnection.class).getCopyAPI();
            check("copy in text", cm.copyIn("COPY j_copy FROM STDIN", new StringReader("1\tone\n2\t\\N\n")), 2L);
            check("copy in csv", cm.copyIn("COPY j_copy (v, id) FROM STDIN WITH (FORMAT csv, HEADER true, DELIMITER ';')", new StringReader("v;id\n\"th;ree\";3\nfour;4\n")), 2L);
            StringWriter w = new StringWriter();
            check("copy out", cm.copyOut("COPY (SELECT id, v FROM j_copy ORDER BY id) TO STDOUT WITH (FORMAT csv)", w), 4L);
            check("copy out data", w.toString(), "1,one\n2,\n3,th;ree\n4,four\n");
            w = new StringWriter();
            check("copy out table", cm.copyOut("COPY j_copy (id) TO STDOUT", w), 4L);
        }
        System.out.println("PgPath: ok");
    }
}
