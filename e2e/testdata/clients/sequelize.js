// Sequelize (6, on node-postgres) against tandem: sync() of models in
// Sequelize's own naming (mixed-case quoted tables "SqUsers", "SqPosts"
// with serial ids; an ENUM, which Sequelize creates in a DO block that
// ignores duplicate_object), then sync({alter: true}) over the same
// models, CRUD, eager loading, findAndCountAll with paging, a managed
// transaction that rolls back, upsert, a unique violation reported as
// Sequelize's UniqueConstraintError naming the constraint, findOrCreate
// (a pg_temp function of the session's own), and describeTable (which joins pg_statio_all_tables). Usage: node
// sequelize.js DSN. Prints "ok", or "FAIL: ..." and exits non-zero.
const { Sequelize, DataTypes, Op } = require("sequelize");

async function main() {
  const sq = new Sequelize(process.argv[2], { logging: false, dialectOptions: { ssl: false } });
  const User = sq.define("SqUser", {
    username: { type: DataTypes.STRING(50), allowNull: false, unique: true },
    role: { type: DataTypes.ENUM("admin", "editor", "viewer"), defaultValue: "viewer" },
    karma: { type: DataTypes.BIGINT, defaultValue: 0 },
    lastLogin: DataTypes.DATE,
  });
  const Post = sq.define("SqPost", { title: { type: DataTypes.STRING, allowNull: false }, views: { type: DataTypes.INTEGER, defaultValue: 0 } });
  User.hasMany(Post, { foreignKey: { name: "authorId", allowNull: false } });
  Post.belongsTo(User, { foreignKey: "authorId" });

  await sq.sync({ force: true });
  await sq.sync({ alter: true }); // reads the schema back, changes it in place
  const alice = await User.create({ username: "alice", role: "admin", lastLogin: new Date("2024-01-02T03:04:05+02:00") });
  const bob = await User.create({ username: "bob" });
  if (alice.id !== 1 || bob.id !== 2 || bob.role !== "viewer") throw new Error(`ids/defaults ${alice.id} ${bob.id} ${bob.role}`);
  for (let i = 1; i <= 5; i++) await Post.create({ title: `p${i}`, views: i * 10, authorId: i <= 3 ? alice.id : bob.id });

  const users = await User.findAll({ include: Post, order: [["username", "ASC"], [Post, "views", "DESC"]] });
  const shape = users.map((u) => `${u.username}:${u.SqPosts.map((p) => p.views).join(",")}`).join(" ");
  if (shape !== "alice:30,20,10 bob:50,40") throw new Error(`eager loading: ${shape}`);
  const page = await Post.findAndCountAll({ where: { views: { [Op.gte]: 20 } }, order: [["views", "ASC"]], offset: 1, limit: 2 });
  if (page.count !== 4 || page.rows.map((p) => p.views).join(",") !== "30,40") throw new Error(`findAndCountAll: ${page.count} ${page.rows.map((p) => p.views)}`);

  try {
    await sq.transaction(async (t) => {
      await User.update({ karma: 5 }, { where: { id: alice.id }, transaction: t });
      throw new Error("roll back");
    });
  } catch (e) {
    if (e.message !== "roll back") throw e;
  }
  if ((await User.findByPk(alice.id)).karma !== "0") throw new Error("the rolled-back update stayed");

  await User.upsert({ id: bob.id, username: "bob", karma: 7 });
  if ((await User.findByPk(bob.id)).karma !== "7") throw new Error("upsert");

  try {
    await User.create({ username: "alice" });
    throw new Error("duplicate username accepted");
  } catch (e) {
    if (e.name !== "SequelizeUniqueConstraintError" || e.parent.constraint !== "SqUsers_username_key") throw new Error(`unique violation: ${e.name} ${e.parent && e.parent.constraint}`);
  }

  // findOrCreate: Sequelize creates pg_temp.testfunc (a PL/pgSQL function
  // that INSERTs ... RETURNING * INTO an OUT parameter and catches
  // unique_violation), calls it and drops it, in a transaction.
  const [carol, made] = await User.findOrCreate({ where: { username: "carol" }, defaults: { karma: 3 } });
  if (!made || carol.username !== "carol" || carol.karma !== "3" || !(carol.id > 2)) throw new Error(`findOrCreate (create): ${made} ${JSON.stringify(carol)}`);
  const [again, made2] = await User.findOrCreate({ where: { username: "carol" } });
  if (made2 || again.id !== carol.id) throw new Error(`findOrCreate (find): ${made2} ${again.id} ${carol.id}`);
  if ((await User.count({ where: { username: "carol" } })) !== 1) throw new Error("findOrCreate made two rows");
  const [dup] = await User.findOrCreate({ where: { username: "bob" }, defaults: { karma: 99 } });
  if (dup.id !== bob.id || dup.karma !== "7") throw new Error(`findOrCreate (existing): ${JSON.stringify(dup)}`);

  const desc = await sq.getQueryInterface().describeTable("SqUsers");
  if (desc.username.type !== "CHARACTER VARYING(50)" || desc.username.allowNull !== false || !desc.id.primaryKey ||
      desc.role.type !== "USER-DEFINED" || desc.role.special.join(",") !== "admin,editor,viewer") {
    throw new Error(`describeTable: ${JSON.stringify(desc)}`);
  }
  await sq.drop({ cascade: true });
  await sq.close();
  console.log("ok");
}

main().catch((e) => { console.log("FAIL: " + (e.stack || e)); process.exit(1); });
