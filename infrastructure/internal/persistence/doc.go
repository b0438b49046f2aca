// Package persistence stores plan's metadata through gorm, in a SQLite file (the default) or a
// PostgreSQL database that many workspaces share: checkpoints, the operation history, plans,
// decisions, attempts, artifacts and corrections. It holds metadata and references only (tree
// hashes); content lives in the object store. Open chooses the engine by its target: a file path or
// sqlite:///abs/path, or a postgres:// (postgresql://) URL; the same code and the same numbered
// migrations serve both.
//
// Invariants:
//   - gorm row structs never leave this package; mappers convert to and from domain entities, and
//     gorm.ErrRecordNotFound becomes fault.ErrNotFound at the boundary;
//   - the schema changes only through the numbered steps in migrations.go, each applied once inside
//     a transaction and recorded in schema_migrations, the same steps on both engines (written for
//     SQLite, translated by pgDDL: BIGINT for every integer, an identity column for AUTOINCREMENT,
//     BOOLEAN for the flags); a database newer than this binary is refused. On PostgreSQL each step
//     holds the schema's advisory lock and reads the version again under it, so processes opening
//     one database at once apply it once. A step that replaces tables other tables reference runs
//     on SQLite with foreign keys off (dropping a parent with them on would delete its children's
//     rows) and checks them before it commits. Open runs the steps only when the version it read is
//     not this binary's: a database at the current schema is opened without a write transaction;
//   - every row belongs to one workspace (workspace_id; the workspaces table lists them), and a
//     handle sees one: every repository read filters by its workspace, every insert sets it, every
//     update and delete names it, and ID-prefix resolution is scoped to it. Uniqueness is per
//     workspace (plan names, checkpoint IDs, ledger numbers). A handle opened WithoutWorkspace
//     only lists the workspaces (every repository call is fault.ErrInvalid). Without an ID, Open
//     adopts a database's sole workspace, or makes one with a fresh ID under the write lock (so
//     processes opening at once agree); a PostgreSQL database always needs the ID;
//   - SQLite runs in WAL mode with synchronous=FULL (a committed row is the commit point of a
//     checkpoint), foreign keys on, a busy timeout, and BEGIN IMMEDIATE for every transaction so a
//     read-then-write transaction never fails with SQLITE_BUSY; on one connection;
//   - on PostgreSQL every write transaction (and reconcile, baseline, compaction, rebuild) first
//     takes pg_advisory_xact_lock of a stable 64-bit hash of "plan:"+workspace ID, held to its end,
//     so the writes of one workspace are serialised as BEGIN IMMEDIATE serialises them on SQLite,
//     while readers, and other workspaces' writers, never wait. Transactions run at READ COMMITTED,
//     so a statement after the lock sees every write committed before it was granted;
//   - a PostgreSQL server that cannot be reached at Open (refused, timed out, unknown host, no
//     such database) is fault.ErrUnavailable after a few bounded retries, and so is a statement
//     whose connection is lost; credentials or a permission the server refuses are
//     fault.ErrDenied, at once; what else the server refuses (a constraint) keeps its own kind.
//     No message holds a credential of the URL: it is shown as secret.URL parses it, and no
//     message is masked by searching its text;
//   - every wait on a PostgreSQL server has a deadline: a connection its connect_timeout, a
//     statement its statement_timeout (the DSN's, or DefaultConnectTimeout and
//     DefaultStatementTimeout), and a connection that receives nothing for the statement timeout
//     plus a grace fails as fault.ErrUnavailable naming the server (a frozen server or network
//     never cancels anything itself);
//   - a database holding another application's tables is fault.ErrInvalid, never adopted;
//   - repositories join the caller's transaction when the context carries one (Transactor.Do);
//   - with a Ledger (WithLedger, as the application always opens it), the database is an index of
//     the store's records of its workspace: every write names the aggregate it touches (a
//     checkpoint, a plan with its decisions and attempts, a correction, a history entry, a failure
//     count, the workspace itself), and before the outermost transaction commits, the complete rows
//     of each touched aggregate, or its deletion, are written durably as one record whose name the
//     same transaction puts in the ledger table, numbered per workspace. So the database names
//     exactly the records of committed transactions of this workspace; Open settles the records a
//     crash left pending by that list, and a rebuild replays the committed ones in order (from the
//     newest baseline) into rows equal to the ones lost: Rebuild into a new SQLite file,
//     RebuildWorkspace in place in one transaction that replaces this workspace's rows and leaves
//     every other workspace's alone, the records listed under the workspace's write lock (a
//     pending record the ledger table names is committed first);
//   - a database behind its records MUST NOT be used: Open with a Ledger compares the committed
//     records with the ledger table by name (Unseen; records before the oldest it names are a
//     baseline's redundant past) and refuses, fault.ErrIntegrity naming `plan doctor --rebuild`,
//     before it settles or writes anything. Never by count or newest number: a write after the
//     gap would hide it;
//   - a write transaction through a SQLite handle whose file was replaced (a rebuild renamed a new
//     one into place) MUST go to the file now at the path (followReplaced reopens it as Open
//     does), never to the old one, whose new record the database in place would lack;
//   - a SQLite file that fails to open or migrate is checked (integrity_check) before the
//     failure is believed: a damaged page can make the schema version read as anything, and
//     damage is fault.ErrIntegrity naming `plan doctor --rebuild`, never "upgrade plan";
//   - a record holds rows, not the operations that produced them, so replaying is idempotent and
//     order-safe: each aggregate ends as the newest record that touched it says. A plan is recorded
//     row by row (its own row, each decision, each attempt), and a save records only the rows it
//     changed or removed, so a plan of n decisions does not rewrite n rows after every attempt;
//     those rows are replayed by upsert, since deleting a plan or decision row cascades. A record
//     names its workspace, and its rows carry it (records from before workspaces do not); replay
//     gives every row the rebuilding database's workspace whatever the record holds, and flags are
//     recorded as 0 or 1 on both engines, so records replay on either.
package persistence
