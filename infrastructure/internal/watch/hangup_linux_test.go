package watch

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"net"
	"testing"
	"time"

	"github.com/planhq/plan/domain/tree"
)

// A client that hangs up has stopped waiting (it walks instead, under the lock it holds): the
// snapshot it asked for stops and stores nothing, and the next one records the workspace as a
// walk does.
func TestSnapshotStopsWhenTheClientHangsUp(t *testing.T) {
	e := newEnv(t)
	e.start(Options{})
	big := make([]byte, 64<<20) // long enough to hash and compress that the hang-up comes first
	if _, err := rand.Read(big); err != nil {
		t.Fatal(err)
	}
	e.write("big.bin", string(big))
	h := tree.Hash(sha256.Sum256(big))
	before, err := Query(context.Background(), e.l)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", SocketPath(e.l))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte(`{"op":"snapshot","workspace":"` + e.l.Root + `"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(c).ReadBytes('\n'); err != nil { // the first keep-alive: it began
		t.Fatal(err)
	}
	_ = c.Close()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, err := Query(context.Background(), e.l)
		if err != nil {
			t.Fatal(err)
		}
		if st.Snapshots > before.Snapshots {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the abandoned snapshot did not end")
		}
	}
	if err := e.cstore.Refresh(); err != nil {
		t.Fatal(err)
	}
	if e.cstore.Has(h) {
		t.Fatal("a snapshot no one waited for went on and stored the file")
	}
	snap, err := e.client.Snapshot(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := e.walked(); snap.Root != want {
		t.Fatalf("after an abandoned snapshot the service records %s, a walk %s", snap.Root, want)
	}
}
