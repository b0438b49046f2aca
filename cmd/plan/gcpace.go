package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// Most commands are short: a checkpoint list, a hook's checkpoint, a cat. With the collector's
// default pace (GOGC=100, a first collection at 4 MB of heap) such a command collected two or
// three times for a heap that never outgrew 20 MB: about 2-3 ms of CPU of a 15-25 ms command
// (measured on `checkpoint list` and `history --limit 10` of a 500-checkpoint history).
// paceGC lets a small heap grow 4 times its live size between collections (GOGC=400), and gives
// the default pace back at the first collection that finds more than smallHeapLive live: a large
// checkpoint's memory then grows as it did (softMemoryLimit still bounds it). GOGC in the
// environment overrides both.
const (
	smallHeapGCPercent = 400
	smallHeapLive      = 16 << 20
)

// paceGC sets the small-heap pace and arms the check that ends it; it returns the function that
// checks after a collection, for tests.
func paceGC() (afterGC func() bool) {
	if _, set := os.LookupEnv("GOGC"); set {
		return nil
	}
	debug.SetGCPercent(smallHeapGCPercent)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	afterGC = func() bool {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() <= smallHeapLive {
			return true // still small: keep the pace, and check after the next collection
		}
		debug.SetGCPercent(100)
		return false
	}
	armAfterGC(afterGC)
	return afterGC
}

// gcSentinel is garbage from birth: its finalizer runs after the collection that finds it. It is
// larger than 16 bytes, so the tiny allocator (whose blocks are freed together, late) never takes it.
type gcSentinel struct{ _ [32]byte }

// armAfterGC runs check after the next collection, and again after each following one for as long
// as check returns true.
func armAfterGC(check func() bool) {
	s := &gcSentinel{}
	runtime.SetFinalizer(s, func(*gcSentinel) {
		if check() {
			armAfterGC(check)
		}
	})
}
