# ActiveRecord (Debian's ruby-activerecord 6.1, on ruby-pg) against tandem:
# a schema with bigserial keys, a jsonb, a string array with a default, a
# numeric(8,2), timestamps, a unique index and a foreign key ON DELETE
# CASCADE (the adapter's type map needs pg_type's array_in; its primary
# key query reads generate_subscripts(pg_index.indkey, 1), 0-based); CRUD,
# associations, eager loading, a rolled-back transaction, RecordNotUnique,
# upsert_all / insert_all, the schema read back (columns, indexes,
# foreign keys, primary key) and changed (add, rename, default, NOT NULL,
# remove). Usage: ruby activerecord.rb DSN. Prints "ok", or "FAIL: ..."
# and exits non-zero.
require "active_record"

def check(what, got, want)
  return if got == want
  puts "FAIL: #{what}: #{got.inspect}, want #{want.inspect}"
  exit 1
end

ActiveRecord::Migration.verbose = false
ActiveRecord::Base.establish_connection(ARGV[0])
c = ActiveRecord::Base.connection
ActiveRecord::Schema.define do
  drop_table :ar_comments, if_exists: true
  drop_table :ar_posts, if_exists: true
  create_table :ar_posts do |t|
    t.string :title, null: false
    t.text :body
    t.jsonb :meta, default: {}
    t.string :tags, array: true, default: []
    t.decimal :price, precision: 8, scale: 2
    t.integer :views, default: 0
    t.boolean :published, default: false
    t.timestamps
  end
  add_index :ar_posts, :title, unique: true
  create_table :ar_comments do |t|
    t.references :ar_post, foreign_key: { on_delete: :cascade }
    t.string :author
    t.timestamps
  end
end

class ArPost < ActiveRecord::Base; has_many :ar_comments, dependent: :destroy; end
class ArComment < ActiveRecord::Base; belongs_to :ar_post; end

p1 = ArPost.create!(title: "hello", body: "x", meta: { "a" => 1 }, tags: %w[x y], price: "9.99", published: true)
p2 = ArPost.create!(title: "world", views: 5)
p1.ar_comments.create!(author: "ann")
p1.ar_comments.create!(author: "bob")
check("where", [ArPost.where(published: true).count, ArPost.where("meta->>'a' = ?", "1").count, ArPost.where("'x' = ANY(tags)").count], [1, 1, 1])
check("join + group", ArPost.joins(:ar_comments).group("ar_posts.title").count, { "hello" => 2 })
check("includes", ArPost.includes(:ar_comments).order(:id).map { |p| [p.title, p.ar_comments.size, p.price.to_s, p.tags] },
      [["hello", 2, "9.99", %w[x y]], ["world", 0, "", []]])
ArPost.transaction do
  p2.update!(views: 6)
  raise ActiveRecord::Rollback
end
check("rolled back", ArPost.find(p2.id).views, 5)
begin
  ArPost.create!(title: "hello")
  check("duplicate title", "accepted", "RecordNotUnique")
rescue ActiveRecord::RecordNotUnique
end
now = Time.now
ArPost.upsert_all([{ title: "hello", views: 42, created_at: now, updated_at: now }, { title: "new", views: 1, created_at: now, updated_at: now }], unique_by: :title)
check("upsert_all", ArPost.order(:title).pluck(:title, :views), [["hello", 42], ["new", 1], ["world", 5]])
ArPost.insert_all([{ title: "bulk1", created_at: now, updated_at: now }, { title: "bulk2", created_at: now, updated_at: now }])
check("insert_all", ArPost.count, 5)
check("columns", c.columns("ar_posts").map { |col| [col.name, col.sql_type, col.default, col.null] },
      [["id", "bigint", nil, false], ["title", "character varying", nil, false], ["body", "text", nil, true], ["meta", "jsonb", "{}", true],
       ["tags", "character varying", "{}", true], ["price", "numeric(8,2)", nil, true], ["views", "integer", "0", true],
       ["published", "boolean", "false", true], ["created_at", "timestamp(6) without time zone", nil, false],
       ["updated_at", "timestamp(6) without time zone", nil, false]])
check("indexes", c.indexes("ar_posts").map { |i| [i.name, i.columns, i.unique] }, [["index_ar_posts_on_title", ["title"], true]])
check("foreign keys", c.foreign_keys("ar_comments").map { |f| [f.to_table, f.column, f.on_delete] }, [["ar_posts", "ar_post_id", :cascade]])
check("primary key", c.primary_key("ar_posts"), "id")
ActiveRecord::Schema.define do
  add_column :ar_posts, :slug, :string
  rename_column :ar_posts, :slug, :permalink
  change_column_default :ar_posts, :views, 10
  change_column_null :ar_posts, :body, false, ""
  remove_column :ar_posts, :permalink
end
ArPost.reset_column_information
check("changed schema", [ArPost.column_names, ArPost.new.views, ArPost.where(body: "").count],
      [%w[id title body meta tags price views published created_at updated_at], 10, 4])
p1.destroy
check("dependent destroy", ArComment.count, 0)
c.drop_table :ar_comments
c.drop_table :ar_posts
puts "ok"
