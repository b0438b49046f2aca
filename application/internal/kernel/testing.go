package kernel

import "context"

// TestLocked returns ctx as Enter returns it, carrying the workspace lock, without taking it: for
// tests of the use cases that must run under the lock.
func TestLocked(ctx context.Context, purpose string) context.Context {
	return context.WithValue(ctx, lockKey{}, purpose)
}

// TestHoldsLock says whether ctx carries the workspace lock (tests of Enter).
func TestHoldsLock(ctx context.Context) bool { return ctx.Value(lockKey{}) != nil }
