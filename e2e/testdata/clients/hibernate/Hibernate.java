

import jakarta.persistence.*;
import org.hibernate.SessionFactory;
import org.hibernate.annotations.JdbcTypeCode;
import org.hibernate.cfg.Configuration;
import org.hibernate.type.SqlTypes;
import java.math.BigDecimal;
import java.time.*;
import java.util.*;

/**
 * Hibernate ORM 7 against tandem (e2e/clients_sqlite_test.go): the schema
 * tool's create (it drops and recreates tables, a sequence, an index and
 * foreign keys), validate and update (which read the schema back through
 * pgjdbc's DatabaseMetaData and Hibernate's own catalog queries: keywords,
 * columns and their types, indexes, foreign keys), then a unit of work with
 * batched inserts, a pooled sequence, an identity column, json, uuid,
 * bytea, numeric, timestamptz, interval-like durations, an element
 * collection, HQL with joins, grouping and paging, criteria with LIKE and
 * BETWEEN, a pessimistic lock, a bulk update, a native query, optimistic
 * locking and orphan removal. Prints "ok" last.
 *
 * java Hibernate jdbc:postgresql://host:port/db user password
 */
public class Hibernate {
  public enum Status { NEW, PAID, SHIPPED }

  @Entity(name = "Customer") @Table(name = "hb_customer")
  public static class Customer {
    @Id @GeneratedValue Long id;
    @Column(nullable = false, unique = true) String email;
    String name;
    @OneToMany(mappedBy = "customer", cascade = CascadeType.ALL, orphanRemoval = true)
    List<Order> orders = new ArrayList<>();
    @Version int version;
  }

  @Entity(name = "Order") @Table(name = "hb_orders", indexes = @Index(columnList = "placed_at"))
  public static class Order {
    @Id @GeneratedValue(strategy = GenerationType.IDENTITY) Long id;
    @ManyToOne(fetch = FetchType.LAZY, optional = false) Customer customer;
    @Enumerated(EnumType.STRING) Status status;
    @Column(precision = 12, scale = 2) BigDecimal total;
    @Column(name = "placed_at") OffsetDateTime placedAt;
    LocalDate due;
    UUID ref;
    boolean gift;
    byte[] blob;
    @JdbcTypeCode(SqlTypes.JSON) Map<String, Object> attrs;
    @ElementCollection @CollectionTable(name = "hb_order_tags") List<String> tags = new ArrayList<>();
    Duration eta;
    Instant createdAt;
  }

  public static void main(String[] a) throws Exception {
    java.util.logging.Logger quiet = java.util.logging.Logger.getLogger("org.hibernate");
    quiet.setLevel(java.util.logging.Level.SEVERE);
    String url = a[0];
    for (String mode : new String[] {"create-drop", "validate", "update"}) {
      Configuration cfg = new Configuration()
        .addAnnotatedClass(Customer.class).addAnnotatedClass(Order.class)
        .setProperty("hibernate.connection.url", url)
        .setProperty("hibernate.connection.username", a[1])
        .setProperty("hibernate.connection.password", a[2])
        .setProperty("hibernate.hbm2ddl.auto", mode.equals("create-drop") ? "create" : mode)
        .setProperty("hibernate.jdbc.batch_size", "20")
        .setProperty("hibernate.order_inserts", "true")
        .setProperty("hibernate.show_sql", System.getenv("SHOWSQL") != null ? "true" : "false");
      try (SessionFactory sf = cfg.buildSessionFactory()) {
        System.out.println("schema " + (mode.equals("create-drop") ? "create" : mode) + ": ok");
        if (!mode.equals("create-drop")) continue;
        run(sf);
      }
    }
    // update found every foreign key and index it made: none added twice.
    try (java.sql.Connection c = java.sql.DriverManager.getConnection(url, a[1], a[2]);
         java.sql.ResultSet r = c.createStatement().executeQuery(
           "select (select count(*) from pg_constraint where contype = 'f' and conrelid in ('hb_orders'::regclass, 'hb_order_tags'::regclass)),"
           + " (select count(*) from pg_indexes where tablename = 'hb_orders')")) {
      r.next();
      check(r.getInt(1) == 2 && r.getInt(2) == 2, "foreign keys " + r.getInt(1) + ", indexes " + r.getInt(2) + " after update");
    }
    System.out.println("ok");
  }

  static void run(SessionFactory sf) {
    sf.inTransaction(s -> {
      for (int i = 0; i < 30; i++) {
        Customer c = new Customer(); c.email = "c" + i + "@x"; c.name = "C " + i;
        for (int j = 0; j < 3; j++) {
          Order o = new Order(); o.customer = c; o.status = Status.values()[j];
          o.total = new BigDecimal("12.50").multiply(BigDecimal.valueOf(i + j));
          o.placedAt = OffsetDateTime.of(2026, 1, 1 + j, 10, i, 0, 0, ZoneOffset.ofHours(2));
          o.due = LocalDate.of(2026, 2, 1 + j); o.ref = UUID.randomUUID(); o.gift = j == 1;
          o.blob = new byte[] {1, 2, (byte) j}; o.attrs = Map.of("k", i, "s", "v" + j);
          o.tags = List.of("t" + j, "u"); o.eta = Duration.ofMinutes(90 + j); o.createdAt = Instant.now();
          c.orders.add(o);
        }
        s.persist(c);
      }
    });
    sf.inTransaction(s -> {
      long n = s.createQuery("select count(o) from Order o where o.status = :st", Long.class)
        .setParameter("st", Status.PAID).getSingleResult();
      check(n == 30, "count PAID " + n);
      List<Object[]> rows = s.createQuery(
        "select c.name, sum(o.total), max(o.placedAt) from Customer c join c.orders o group by c.name having sum(o.total) > 100 order by sum(o.total) desc", Object[].class)
        .setFirstResult(2).setMaxResults(5).getResultList();
      check(rows.size() == 5, "page " + rows.size());
      check(((BigDecimal) rows.get(0)[1]).compareTo(new BigDecimal("1050.00")) == 0, "sum " + rows.get(0)[1]);
      Order o = s.createQuery("from Order o join fetch o.customer where o.customer.email = 'c7@x' and o.gift", Order.class).getSingleResult();
      check(o.total.compareTo(new BigDecimal("100.00")) == 0, "total " + o.total);
      check(o.attrs.get("s").equals("v1"), "json " + o.attrs);
      check(o.tags.contains("t1"), "tags " + o.tags);
      check(o.eta.equals(Duration.ofMinutes(91)), "eta " + o.eta);
      check(o.placedAt.toInstant().equals(OffsetDateTime.of(2026, 1, 2, 10, 7, 0, 0, ZoneOffset.ofHours(2)).toInstant()), "ts " + o.placedAt);
      check(Arrays.equals(o.blob, new byte[] {1, 2, 1}), "blob");
      Customer c = s.find(Customer.class, o.customer.id, LockModeType.PESSIMISTIC_WRITE);
      c.name = "renamed";
      var cb = s.getCriteriaBuilder(); var q = cb.createQuery(Order.class); var r = q.from(Order.class);
      q.where(cb.and(cb.like(r.get("customer").get("email"), "c1%"), cb.between(r.get("due"), LocalDate.of(2026, 2, 2), LocalDate.of(2026, 2, 3))));
      q.orderBy(cb.asc(r.get("id")));
      check(s.createQuery(q).getResultList().size() == 22, "criteria");
      int up = s.createMutationQuery("update Order o set o.status = :s where o.total > 300").setParameter("s", Status.SHIPPED).executeUpdate();
      check(up > 0, "bulk update");
      List<?> nat = s.createNativeQuery("select string_agg(email, ',' order by email) from hb_customer where email ~ '^c2[0-9]@'", String.class).getResultList();
      check(nat.get(0).toString().startsWith("c20@x,c21@x"), "native " + nat);
    });
    // optimistic locking: a stale version fails
    Customer stale = sf.fromTransaction(s -> s.createQuery("from Customer where email = 'c3@x'", Customer.class).getSingleResult());
    sf.inTransaction(s -> { Customer c = s.find(Customer.class, stale.id); c.name = "first"; });
    try {
      sf.inTransaction(s -> { stale.name = "second"; s.merge(stale); });
      check(false, "stale update succeeded");
    } catch (OptimisticLockException e) { System.out.println("optimistic lock: ok"); }
    sf.inTransaction(s -> {
      Customer c = s.createQuery("from Customer where email = 'c4@x'", Customer.class).getSingleResult();
      c.orders.remove(0); s.remove(s.createQuery("from Customer where email = 'c5@x'", Customer.class).getSingleResult());
    });
    long left = sf.fromTransaction(s -> s.createQuery("select count(*) from Order", Long.class).getSingleResult());
    check(left == 86, "orders left " + left);
    System.out.println("crud: ok");
  }

  static void check(boolean ok, String what) { if (!ok) throw new IllegalStateException("check failed: " + what); }
}
