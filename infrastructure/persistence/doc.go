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
//   - repositories join the caller's transaction when the context carries one (Transactor.Do).
package persistence
