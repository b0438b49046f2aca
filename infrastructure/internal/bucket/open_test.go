package bucket

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/planhq/plan/domain/fault"
	"github.com/planhq/plan/tests/testkit"
)

// A store URL, bucket name or endpoint that can never work is invalid input, said before any
// request: not "the service does not answer", which would send the user to look at the network.
func TestOpenRefusesWhatCanNeverWork(t *testing.T) {
	env := map[string]string{"AWS_ENDPOINT_URL": "http://" + testkit.ClosedPort(t), "AWS_ACCESS_KEY_ID": "id", "AWS_SECRET_ACCESS_KEY": "secret"}
	getenv := func(k string) string { return env[k] }
	for _, raw := range []string{
		"file:///x",                       // not s3
		"s3://ab",                         // shorter than 3 characters
		"s3://-starts-dash",               // must start with a letter or digit
		"s3://a..b",                       // two dots
		"s3://192.168.10.20",              // an IP address
		"s3://bad*name",                   // a character S3 does not allow
		"s3://" + strings.Repeat("x", 64), // longer than 63 characters
		"s3://UPPERCASE",                  // upper case: S3 answers a bare 400
		"s3://has_underscore",             // an underscore, likewise
	} {
		_, err := Open(context.Background(), Config{URL: raw, CacheDir: t.TempDir(), Getenv: getenv})
		if !errors.Is(err, fault.ErrInvalid) || errors.Is(err, fault.ErrUnavailable) {
			t.Errorf("Open(%q): %v, want invalid input", raw, err)
		}
	}
	for _, endpoint := range []string{"ftp://minio:9000", "http://-minio:9000", "http://AKIA:S3CR3T@minio:9000/x", "http://AKIA:S3CR3T@minio:9000"} {
		env["AWS_ENDPOINT_URL"] = endpoint
		_, err := Open(context.Background(), Config{URL: "s3://plan-ok", CacheDir: t.TempDir(), Getenv: getenv})
		if !errors.Is(err, fault.ErrInvalid) || !strings.Contains(err.Error(), "minio") || strings.Contains(err.Error(), "S3CR3T") {
			t.Errorf("endpoint %q: %v, want invalid input naming it without its secret", endpoint, err)
		}
	}
}

// Open reads the AWS environment it is given: the process's, as the composition root passes it.
func TestOpenReadsTheProcessEnvironment(t *testing.T) {
	getenv := s3env(t)
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"} {
		t.Setenv(k, getenv(k))
	}
	t.Setenv("AWS_SESSION_TOKEN", "")
	made := freshBucket(t, getenv, "")
	b, err := Open(context.Background(), Config{URL: "s3://" + made.bucket, CacheDir: t.TempDir(), Getenv: os.Getenv})
	if err != nil {
		t.Fatalf("open with the process's environment: %v", err)
	}
	defer b.Close()
	if err := b.WriteFile("workspaces/w.json", []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := made.ReadFile("workspaces/w.json"); err != nil || string(got) != "{}" {
		t.Fatalf("what it wrote, read by another client: %q, %v", got, err)
	}
}
