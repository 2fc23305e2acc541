// drizzle-kit's schema for drizzle.js (e2e/clients_sqlite_test.go).
import { pgTable, serial, bigserial, integer, text, varchar, boolean, numeric, timestamp, index, unique, pgEnum } from "drizzle-orm/pg-core"

export const dztFmt = pgEnum("dzt_fmt", ["paper", "ebook"])

export const dztAuthor = pgTable("dzt_author", {
  id: serial().primaryKey().notNull(),
  name: varchar({ length: 50 }).notNull(),
  active: boolean().default(true),
}, (t) => [unique("dzt_author_name_key").on(t.name)])

export const dztBook = pgTable("dzt_book", {
  id: bigserial({ mode: "number" }).primaryKey().notNull(),
  authorId: integer("author_id").notNull().references(() => dztAuthor.id, { onDelete: "cascade" }),
  title: text().notNull(),
  price: numeric({ precision: 8, scale: 2 }),
  fmt: dztFmt().default("paper"),
  published: timestamp({ withTimezone: true, mode: "string" }).defaultNow(),
  tags: text().array(),
}, (t) => [
  index("dzt_book_title").using("btree", t.title.asc().nullsLast().op("text_ops")),
  index("dzt_book_price").on(t.price.desc()), // drizzle writes DESC NULLS LAST
])
