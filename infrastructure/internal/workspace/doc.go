// Package workspace is the adapter between plan and the workspace directory: it lays out .plan/,
// scans the live tree into the object store (Scanner, which can also follow the workspace's changes
// between the snapshots of a run: track.go), restores stored trees (Restorer), keeps the operation
// journal (Journal) and the workspace lock (Locker), and reads the git HEAD (GitHead).
//
// Invariants:
//   - .plan/ and .git/ (at any depth) are never scanned, written or removed; paths matched by the
//     root .planignore are neither scanned nor touched by a restore;
//   - the scanner never opens a special file (FIFO, socket, device) and never follows a symlink: files
//     are opened O_NOFOLLOW|O_NONBLOCK and checked to be the regular file that was listed;
//   - a stat cache entry is trusted only while the file's size, mtime, ctime, inode, device and mode
//     are unchanged and the entry was not racy when recorded (its mtime or ctime within the timestamp
//     granularity of the moment it was recorded); everything else is read and hashed again;
//   - a restore fills the stat cache only from the stat taken right after it put each file in place,
//     and only when that stat shows the inode, size, mtime and mode the staged file had once
//     written (racy unless the content was a tick older than its placing); never from a stat taken
//     later, which could vouch for another process's write. Files whose content it did not write
//     (mode changes) are dropped from the cache and read again;
//   - a directory's recorded tree is reused without being encoded again only when its stat cache
//     record is exact (written whole by a snapshot, not patched by a restore), the live listing
//     (after the ignore rules) has exactly the recorded names and kinds, every file and symlink is
//     trusted by the rule above, every subdirectory's tree is itself reused with its recorded mode,
//     and, when storing, the store confirms the tree Present (Batch.Has, which also notes it for a
//     shared store's Confirm). Every object a snapshot references is checked that way, reused or not;
//   - a file whose inode has two or more names in the workspace is read again at every snapshot,
//     tracked or not: neither its stat cache entry nor the tracker's tree vouches for it;
//   - a tracked snapshot (Scanner.Track, while a run lives) records what a full walk would (but for
//     the two changes inotify never reports, named in track.go; PLAN_WATCH=0 turns tracking off):
//     it reads again every entry an event since the last snapshot names (a written file whatever
//     its stat key says) and every other name the tree holds of a linked file an event touched,
//     stats every file when a file made, changed and removed since, or a directory made since,
//     may have been or held a hard link, and at the first update after a walk (which races the
//     changes it does not watch yet),
//     walks new directories whole (a directory whose watch the kernel removed, because it was
//     deleted, is never taken for one found later under its name, whatever its inode number),
//     stats files with other hard links every time,
//     and walks the whole workspace again whenever the events cannot be trusted (queue overflow, a
//     directory that could not be watched, changed ignore rules, a directory not where the kept
//     tree says). Every directory is watched before it is listed. A restore's word (Vouch) lifts
//     only the doubt on a file it renamed in from .plan/staging, and only when, with every queued
//     event read, the name still holds the inode it placed, with no other name, and no event but
//     its arrival named it since the last snapshot; the file is still read again at the next one;
//   - the restorer writes only through an os.Root of the workspace (an exchange goes through
//     directories opened by it), checks with Lstat that every parent of a path it writes is a real
//     directory (never a symlink), and stages and verifies all new content inside .plan/ before it
//     changes the first workspace path;
//   - a file the restore replaces is exchanged with its staged successor (renameat2
//     RENAME_EXCHANGE, atomic as the rename it stands for; a rename where the file system has none),
//     so what it replaced lands in .plan/staging, never in the workspace; a directory found there
//     instead is swapped back and refused. Once the restore succeeded, staging moves to a directory
//     of its own under .plan/trash, removed by the watch service after it answered (or by the
//     restore when no service takes it); every restore clears what an earlier one left there;
//   - a failed restore puts the source tree back before returning; journal and stat cache files are
//     replaced atomically (write temp, fsync, rename, fsync directory).
package workspace
