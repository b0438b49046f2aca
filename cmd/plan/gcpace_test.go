package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"
)

// The small-heap pace holds while the live heap is small and gives way to the default at the
// first collection that finds a large one; GOGC in the environment is left alone.
func TestPaceGCGivesTheDefaultBackToALargeHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "150")
	if paceGC() != nil {
		t.Fatal("GOGC in the environment was overridden")
	}
	if err := os.Unsetenv("GOGC"); err != nil {
		t.Fatal(err)
	}
	afterGC := paceGC()
	if afterGC == nil {
		t.Fatal("no pace without GOGC")
	}
	if got := debug.SetGCPercent(smallHeapGCPercent); got != smallHeapGCPercent {
		t.Fatalf("GOGC %d, want %d", got, smallHeapGCPercent)
	}
	runtime.GC()
	if !afterGC() {
		t.Fatal("a small heap lost its pace")
	}
	big := make([]byte, 2*smallHeapLive)
	runtime.GC()
	if afterGC() {
		t.Fatal("a large heap kept the small-heap pace")
	}
	runtime.KeepAlive(big)
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GOGC %d after a large heap, want 100", got)
	}
}

// The check runs after each collection for as long as it asks to.
func TestArmAfterGCRunsUntilTold(t *testing.T) {
	var calls atomic.Int32
	armAfterGC(func() bool { return calls.Add(1) < 3 })
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 3 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(time.Millisecond) // the finalizer goroutine runs the check
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d checks, want 3", n)
	}
	for range 5 {
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if n := calls.Load(); n != 3 {
		t.Fatalf("%d checks after it said stop, want 3", n)
	}
}
