package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/planhq/plan/infrastructure/bootstrap"
	"github.com/planhq/plan/tests/testkit"
	"github.com/planhq/plan/tests/testkit/servertest"
)

func sha256Hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func decodeVerify(t *testing.T, o outcome) verifyView {
	t.Helper()
	var v verifyView
	if err := json.Unmarshal([]byte(o.stdout), &v); err != nil {
		t.Fatalf("verify --json: %v\n%v", err, o)
	}
	return v
}

// verify --read-data --repair stores a damaged object afresh from the copy still in the workspace;
// afterwards verify is clean and a rollback to the checkpoint restores the file exactly.
func TestVerifyRepairHealsFromTheWorkspace(t *testing.T) {
	dir := newWorkspace(t)
	big := string(testkit.Noise(1, 64<<10))
	writeFile(t, dir, "big.bin", big)
	id := createCheckpoint(t, dir)
	testkit.DamageStored(t, filepath.Join(stateOf(t, dir).Objects(), "packs"), []byte(big))

	if o := inWorkspace(dir, "verify", "--read-data"); o.code != ExitIntegrity || !strings.Contains(o.stdout, "  "+id+" big.bin: ") {
		t.Fatalf("verify --read-data of the damaged object: want exit 6 naming big.bin\n%v", o)
	}
	o := mustPlan(t, dir, "verify", "--read-data", "--repair")
	if !strings.HasPrefix(o.stdout, "Healed 1 damaged or missing object(s) from intact copies; 0 have none.\nChecked 1 checkpoints, ") ||
		!strings.HasSuffix(o.stdout, " objects (content re-hashed, read from "+stateOf(t, dir).Objects()+").\n") {
		t.Errorf("verify --repair: %v", o)
	}
	if v := decodeVerify(t, mustPlan(t, dir, "--json", "verify", "--read-data", "--repair")); !v.OK || len(v.Healed) != 0 || len(v.Unhealed) != 0 {
		t.Errorf("a second repair found something to heal: %+v", v)
	}
	writeFile(t, dir, "big.bin", "overwritten")
	mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", id)
	if got := readFile(t, dir, "big.bin"); got != big {
		t.Errorf("the healed checkpoint restored %d bytes that differ from the original", len(got))
	}
}

// An object whose only intact copy was in the workspace, now gone, cannot be healed: repair says
// which, verify still fails with exit 6, and nothing else is touched.
func TestVerifyRepairNamesWhatItCannotHeal(t *testing.T) {
	dir := newWorkspace(t)
	big := string(testkit.Noise(2, 64<<10))
	writeFile(t, dir, "big.bin", big)
	writeFile(t, dir, "small.txt", "small\n")
	id := createCheckpoint(t, dir)
	if err := os.Remove(filepath.Join(dir, "big.bin")); err != nil {
		t.Fatal(err)
	}
	testkit.DamageStored(t, filepath.Join(stateOf(t, dir).Objects(), "packs"), []byte(big))

	o := inWorkspace(dir, "verify", "--read-data", "--repair")
	if o.code != ExitIntegrity || !strings.Contains(o.stderr, "problems in 1 checkpoints") ||
		!strings.HasPrefix(o.stdout, "Healed 0 damaged or missing object(s) from intact copies; 1 have none.\n  no intact copy of "+sha256Hex(big)+"\n") ||
		!strings.Contains(o.stdout, "  "+id+" big.bin: ") {
		t.Errorf("verify --repair without an intact copy: %v", o)
	}
	o = inWorkspace(dir, "--json", "verify", "--read-data", "--repair")
	v := decodeVerify(t, o)
	if o.code != ExitIntegrity || v.OK || !slices.Equal(v.Unhealed, []string{sha256Hex(big)}) || len(v.Healed) != 0 || !v.ReadData {
		t.Errorf("verify --repair --json: %+v\n%v", v, o)
	}
	if got := readFile(t, dir, "small.txt"); got != "small\n" {
		t.Errorf("repair touched the workspace: small.txt = %q", got)
	}
}

// The wrong outputs a correction archived are an intact copy too: an object damaged after the
// correction heals from the archive, and undoing the correction brings the file back whole.
func TestVerifyRepairHealsFromACorrectionArchive(t *testing.T) {
	dir := newWorkspace(t)
	big := string(testkit.Noise(3, 64<<10))
	writeFile(t, dir, "seed.bin", big)
	mustPlan(t, dir, "exec", "--id", "copy", "--", "sh", "-c", "cp seed.bin big.bin && rm seed.bin")
	safety := jsonField(t, mustPlan(t, dir, "--json", "--yes", "correct", "--decision", "copy", "--reason", "wrong",
		"--no-reexecute"), "safety_checkpoint_id")
	if _, err := os.Stat(filepath.Join(dir, "big.bin")); err == nil {
		t.Fatal("the correction left big.bin in the workspace: the test needs it only in the archive")
	}
	if err := os.Remove(filepath.Join(dir, "seed.bin")); err != nil {
		t.Fatal(err)
	}
	testkit.DamageStored(t, filepath.Join(stateOf(t, dir).Objects(), "packs"), []byte(big))

	v := decodeVerify(t, mustPlan(t, dir, "--json", "verify", "--read-data", "--repair"))
	if !v.OK || !slices.Equal(v.Healed, []string{sha256Hex(big)}) || len(v.Unhealed) != 0 {
		t.Fatalf("verify --repair with the content archived: %+v", v)
	}
	mustPlan(t, dir, "--yes", "rollback", "--to-checkpoint", safety)
	if got := readFile(t, dir, "big.bin"); got != big {
		t.Errorf("undoing the correction restored %d bytes that differ from the original", len(got))
	}
}

func TestVerifyRefusals(t *testing.T) {
	dir := newWorkspace(t)
	createCheckpoint(t, dir)
	if o := inWorkspace(dir, "verify", "--repair"); o.code != ExitUsage || !strings.Contains(o.stderr, "--repair needs --read-data") {
		t.Errorf("--repair without --read-data: want exit 2\n%v", o)
	}
	if o := inWorkspace(dir, "verify", "0123456789abcdef01234567"); o.code != ExitNotFound {
		t.Errorf("verify of an unknown checkpoint: want exit 4\n%v", o)
	}

	// Healing writes to the store, so it waits for the workspace lock like any change, and gives
	// up naming the holder.
	unlock := bootstrap.TestLock(t, dir)
	o := inWorkspace(dir, "verify", "--read-data", "--repair")
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	if o.code != ExitConflict || !strings.Contains(o.stderr, "a test holding the lock") {
		t.Errorf("verify --repair on a busy workspace: want exit 5 naming the holder\n%v", o)
	}
	mustPlan(t, dir, "verify", "--read-data", "--repair")
}

// failingWriter is a stdout whose reader went away (a closed pipe).
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, os.ErrClosed }

// A JSON document that cannot be written is a failure, not a silent exit 0.
func TestJSONWriteFailureIsAnError(t *testing.T) {
	dir := newWorkspace(t)
	createCheckpoint(t, dir)
	for _, args := range [][]string{{"verify"}, {"doctor"}, {"stats"}, {"checkpoint", "list"}} {
		var errOut bytes.Buffer
		r := Runner{Stdout: failingWriter{}, Stderr: &errOut, Stdin: strings.NewReader("")}
		code := r.Run(context.Background(), append([]string{"plan", "-C", dir, "--json"}, args...))
		if code != ExitInternal || !strings.Contains(errOut.String(), "file already closed") {
			t.Errorf("%v with a closed stdout: exit %d, stderr %q", args, code, errOut.String())
		}
	}
}

// With the store's packs lost, listing a checkpoint's files fails with exit 6 naming what is
// missing; its metadata, kept in the database, can still be shown.
func TestCheckpointShowFilesWithLostPacks(t *testing.T) {
	dir := newWorkspace(t)
	writeFile(t, dir, "a.txt", "a\n")
	id := createCheckpoint(t, dir)
	packs, err := filepath.Glob(filepath.Join(stateOf(t, dir).Objects(), "packs", "*.pack"))
	if err != nil || len(packs) == 0 {
		t.Fatalf("no packs: %v", err)
	}
	for _, p := range packs {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	o := inWorkspace(dir, "checkpoint", "show", id, "--files")
	if o.code != ExitIntegrity || o.stdout != "" || !strings.Contains(o.stderr, "is missing") {
		t.Errorf("show --files with the packs gone: want exit 6 naming the missing pack\n%v", o)
	}
	if o := mustPlan(t, dir, "checkpoint", "show", id); !strings.HasPrefix(o.stdout, "checkpoint "+id+" (") {
		t.Errorf("show without --files: %v", o)
	}
}

// verify --read-data of a shared store in a bucket reads the bucket, not the local cache, and says
// so.
func TestVerifyReadDataOfABucketSaysWhatItRead(t *testing.T) {
	e := servertest.S3(t)
	for k, v := range map[string]string{"AWS_ENDPOINT_URL": e.Endpoint, "AWS_ACCESS_KEY_ID": e.AccessKey,
		"AWS_SECRET_ACCESS_KEY": e.SecretKey, "AWS_REGION": e.Region} {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	mustPlan(t, dir, "init", "--store", "s3://"+e.Bucket)
	writeFile(t, dir, "a.txt", "content")
	createCheckpoint(t, dir)
	if o := mustPlan(t, dir, "verify", "--read-data"); !strings.HasSuffix(o.stdout, " (content re-hashed, read from s3://"+e.Bucket+", not the local cache).\n") {
		t.Errorf("verify --read-data: %v", o)
	}
	if v := decodeVerify(t, mustPlan(t, dir, "--json", "verify", "--read-data")); !v.OK || v.ReadFrom != "s3://"+e.Bucket {
		t.Errorf("verify --read-data --json: %+v", v)
	}
}
