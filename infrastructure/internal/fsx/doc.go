// Package fsx holds plan's durable-write primitives, in one place, so that every adapter makes data
// durable the same way and platform differences live in one pair of files; and the one rule of
// which state files plan trusts (Distrust: the user's own, writable by nobody else).
//
// Invariants:
//   - CreateDurable and Replace(…, true) return only once the file's bytes are on stable storage
//     (fsync) and, for Replace, once the rename is too (the directory is fsync'd): after a crash the
//     path holds the old content or the new, never a mix or nothing;
//   - Replace(…, false) is atomic but not durable: for hints (the stat cache) whose loss costs only
//     time;
//   - SyncPaths and SyncTree make what they name durable: on Linux with one syncfs (what makes
//     restoring thousands of files cost one flush instead of one fsync each); elsewhere with an
//     fsync per path, which on macOS is F_FULLFSYNC (os.File.Sync), since sync(2) there need not
//     wait for the drive;
//   - a temporary file a failed write leaves is removed before the error is returned.
package fsx
