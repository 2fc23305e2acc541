import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;

// JdbcFailover: pgjdbc sessions across a failover of the primary (e2e
// sessionsSurvive). Its first session runs every statement, COMMIT and
// ROLLBACK among them, as a named prepared statement (prepareThreshold=1),
// its second as pgjdbc does by default. Each opens a transaction and says
// READY; after the test's GO (the failover is over) the first session's
// next statement must fail with 40001, its rollback() must work and a new
// transaction must commit; the second's commit() must fail with 40001 and
// leave no transaction, so its next one commits.
public class JdbcFailover {
    static void ins(Connection c, int id) throws SQLException {
        try (PreparedStatement p = c.prepareStatement("INSERT INTO t VALUES (?, ?)")) {
            p.setInt(1, id);
            p.setString(2, "jdbc");
            p.executeUpdate();
        }
    }

    static void expect40001(SQLException e, String what) throws Exception {
        if (!"40001".equals(e.getSQLState())) {
            throw new Exception(what + ": SQLSTATE " + e.getSQLState() + ", want 40001", e);
        }
        System.out.println(what + ": 40001: " + e.getMessage());
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        Connection c = DriverManager.getConnection(url + "&prepareThreshold=1");
        c.setAutoCommit(false);
        for (int i = 0; i < 3; i++) { // COMMIT and ROLLBACK now go by name
            ins(c, 200 + i);
            c.rollback();
            ins(c, 210 + i);
            c.commit();
        }
        ins(c, 100);
        Connection c2 = DriverManager.getConnection(url);
        c2.setAutoCommit(false);
        ins(c2, 103);
        System.out.println("READY");
        System.out.flush();
        String go = new BufferedReader(new InputStreamReader(System.in)).readLine();
        if (!"GO".equals(go)) {
            throw new Exception("no GO from the test: " + go);
        }
        try {
            ins(c, 101);
            throw new Exception("a statement of the transaction open at the failover succeeded");
        } catch (SQLException e) {
            expect40001(e, "statement of the lost transaction");
        }
        c.rollback();
        ins(c, 102);
        c.commit();
        try {
            c2.commit();
            throw new Exception("the COMMIT of the transaction open at the failover succeeded");
        } catch (SQLException e) {
            expect40001(e, "commit of the lost transaction");
        }
        ins(c2, 104);
        c2.commit();
        c.close();
        c2.close();
        System.out.println("JdbcFailover: ok");
    }
}
