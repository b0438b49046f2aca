// Package persistence stores plan's metadata through gorm, in a SQLite file (the default) or a
// PostgreSQL database that many workspaces share: checkpoints, the operation history, plans,
// decisions, attempts, artifacts and corrections. It holds metadata and references only (tree
// hashes); content lives in the object store. Open chooses the engine by its target (a file path,
// sqlite:///abs/path, or a postgres:// URL); the same code and the same numbered migrations
// (migrations.go) serve both. gorm row structs never leave this package.
//
// Its two invariants:
//   - every row belongs to one workspace, and a handle sees one: every read filters by it, every
//     write sets or names it;
//   - with a Ledger (as the application always opens it) the database is an index of the store's
//     records: before the outermost transaction commits, the complete rows of each aggregate it
//     touched are written durably as one record whose name the same transaction puts in the ledger
//     table (ledger.go), so Rebuild can make the database again from the records alone, and a
//     database behind its records is refused.
//
// The rest (migrations, SQLite and PostgreSQL locking, deadlines and error kinds, replaced files,
// replay) is in docs/design.md.
//
// Invariants and write order: docs/design.md#persistence; byte format: docs/format.md#records.
package persistence
