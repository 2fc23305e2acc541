import java.sql.*;
import java.nio.file.*;
import java.util.*;

// Multi: drivers (main.go) through pgjdbc: C threads, one connection each,
// one prepared single-row SELECT; calls per second and the backends' CPU
// per call, for rounds 1-3 after a warm-up round.
//   java -cp postgresql.jar:. Multi CALLS CONNS [JDBC-URL]
public class Multi {
    static double cpu(int pid) throws Exception {
        String s = new String(Files.readAllBytes(Paths.get("/proc/" + pid + "/stat")));
        String[] f = s.substring(s.lastIndexOf(")") + 2).split(" ");
        return (Double.parseDouble(f[11]) + Double.parseDouble(f[12])) / 100.0;
    }
    public static void main(String[] a) throws Exception {
        int n = Integer.parseInt(a[0]), k = Integer.parseInt(a[1]);
        Connection[] cs = new Connection[k]; int[] pids = new int[k];
        for (int i = 0; i < k; i++) {
            cs[i] = DriverManager.getConnection(a.length > 2 ? a[2] : "jdbc:postgresql://127.0.0.1:5499/postgres?user=postgres");
            ResultSet r0 = cs[i].createStatement().executeQuery("SELECT pg_backend_pid()"); r0.next(); pids[i] = r0.getInt(1);
        }
        for (int round = 0; round < 4; round++) {
            final int nn = round == 0 ? 5000 : n;
            Thread[] ts = new Thread[k];
            double c0 = 0; for (int p : pids) c0 += cpu(p);
            double self0 = cpu((int) ProcessHandle.current().pid());
            long t0 = System.nanoTime();
            for (int i = 0; i < k; i++) {
                final Connection c = cs[i]; final int seed = i + round * 100;
                ts[i] = new Thread(() -> {
                    try {
                        PreparedStatement ps = c.prepareStatement("SELECT i_price, i_name, i_data FROM item WHERE i_id = ?");
                        Random rng = new Random(seed);
                        for (int j = 0; j < nn; j++) {
                            ps.setInt(1, 1 + rng.nextInt(100000));
                            ResultSet rs = ps.executeQuery(); rs.next();
                            float p = rs.getFloat(1); String x = rs.getString(2); String y = rs.getString(3); rs.close();
                        }
                    } catch (Exception e) { throw new RuntimeException(e); }
                });
                ts[i].start();
            }
            for (Thread t : ts) t.join();
            double el = (System.nanoTime() - t0) / 1e9;
            double c1 = 0; for (int p : pids) c1 += cpu(p);
            double self = cpu((int) ProcessHandle.current().pid()) - self0;
            if (round > 0) System.out.printf("jdbc %d conns: %.0f calls/s, server %.2f us/call, driver %.2f us/call%n", k, nn * k / el, (c1 - c0) * 1e6 / (nn * k), self * 1e6 / (nn * k));
        }
    }
}
