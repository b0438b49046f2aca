package bucket

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
)

// statsFile keeps the cache's counters across the short-lived processes that use it.
const statsFile = "stats.json"

type savedStats struct {
	Hits            int64 `json:"hits"`
	Misses          int64 `json:"misses"`
	DownloadedBytes int64 `json:"downloaded_bytes"`
	Adopted         int64 `json:"adopted"`
}

func (c *cache) loadStats() {
	b, err := os.ReadFile(filepath.Join(c.dir, statsFile))
	if err != nil {
		return
	}
	var s savedStats
	if json.Unmarshal(b, &s) == nil {
		c.base = CacheStats{Hits: s.Hits, Misses: s.Misses, DownloadedBytes: s.DownloadedBytes, UploadedToCached: s.Adopted}
	}
}

func (c *cache) stats() CacheStats {
	return CacheStats{
		Hits:             c.base.Hits + c.hits.Load(),
		Misses:           c.base.Misses + c.misses.Load(),
		DownloadedBytes:  c.base.DownloadedBytes + c.downloaded.Load(),
		UploadedToCached: c.base.UploadedToCached + c.adopted.Load(),
		CachedBytes:      c.cachedBytes(),
		CacheLimit:       c.max,
	}
}

// close adds this process's counters to the saved ones, under a lock so that processes closing
// at once do not lose each other's counts. Counters are statistics: a failure loses them, nothing
// else.
func (c *cache) close() error {
	d := savedStats{Hits: c.hits.Swap(0), Misses: c.misses.Swap(0), DownloadedBytes: c.downloaded.Swap(0), Adopted: c.adopted.Swap(0)}
	if d == (savedStats{}) {
		return nil
	}
	lock, err := os.OpenFile(filepath.Join(c.dir, "stats.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil { // #nosec G115 -- a file descriptor fits an int
		return nil
	}
	var s savedStats
	if b, err := os.ReadFile(filepath.Join(c.dir, statsFile)); err == nil {
		_ = json.Unmarshal(b, &s)
	}
	s.Hits += d.Hits
	s.Misses += d.Misses
	s.DownloadedBytes += d.DownloadedBytes
	s.Adopted += d.Adopted
	b, err := json.Marshal(s)
	if err != nil {
		return nil
	}
	tmp := filepath.Join(c.tmp, statsFile)
	if os.WriteFile(tmp, b, 0o600) == nil {
		_ = os.Rename(tmp, filepath.Join(c.dir, statsFile))
	}
	c.base = CacheStats{Hits: s.Hits, Misses: s.Misses, DownloadedBytes: s.DownloadedBytes, UploadedToCached: s.Adopted}
	return nil
}
