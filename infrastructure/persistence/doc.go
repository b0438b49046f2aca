// Package persistence stores plan's metadata in SQLite through gorm: checkpoints, the operation
// history, plans, decisions, attempts, artifacts and corrections. It holds metadata and references
// only (tree hashes); content lives in the object store.
//
// Invariants:
//   - gorm row structs never leave this package; mappers convert to and from domain entities, and
//     gorm.ErrRecordNotFound becomes fault.ErrNotFound at the boundary;
//   - the schema changes only through the numbered steps in migrations.go, each applied once inside
//     a transaction and recorded in schema_migrations; a database newer than this binary is refused;
//   - the connection runs in WAL mode with synchronous=FULL (a committed row is the commit point of a
//     checkpoint), foreign keys on, a busy timeout, and BEGIN IMMEDIATE for every transaction so a
//     read-then-write transaction never fails with SQLITE_BUSY;
//   - repositories join the caller's transaction when the context carries one (Transactor.Do);
//   - with a Ledger (WithLedger, as the application always opens it), the database is an index of
//     the store's records: every write names the aggregate it touches (a checkpoint, a plan with its
//     decisions and attempts, a correction, a history entry, a failure count), and before the
//     outermost transaction commits, the complete rows of each touched aggregate, or its deletion,
//     are written durably as one record whose name the same transaction puts in the ledger table.
//     So the database names exactly the records of committed transactions; Open settles the
//     records a crash left pending by that list, and Rebuild replays the committed ones in order
//     (from the newest baseline) into a database equal, row for row, to the one lost;
//   - a record holds rows, not the operations that produced them, so replaying is idempotent and
//     order-safe: each aggregate ends as the newest record that touched it says. A plan is recorded
//     row by row (its own row, each decision, each attempt), and a save records only the rows it
//     changed or removed, so a plan of n decisions does not rewrite n rows after every attempt;
//     those rows are replayed by upsert, since deleting a plan or decision row cascades.
package persistence
