package secret

import (
	"slices"
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	for _, c := range []struct {
		in, want string
		had      bool
	}{
		{"postgres://u:pw@h:5432/d?sslmode=disable", "postgres://u@h:5432/d?sslmode=disable", true},
		{"postgres://h:5432/d?sslmode=disable&user=u&password=pw", "postgres://h:5432/d?sslmode=disable&user=u", true},
		{"postgres://h/d?PassWord=pw&sslmode=disable", "postgres://h/d?sslmode=disable", true},
		{"postgres://h/d?passfile=%2Fhome%2Fu%2F.pgpass", "postgres://h/d", true},
		{"postgres://u@h/d?sslpassword=k&application_name=x", "postgres://u@h/d?application_name=x", true},
		{"postgres://h/d?pass%77ord=pw", "postgres://h/d", true},
		{"postgres://u@h/d?user=u", "postgres://u@h/d?user=u", false},
		{"postgres://h/d", "postgres://h/d", false},
		{"http://AKIA:S3CR3T@127.0.0.1:9000/x", "http://AKIA@127.0.0.1:9000/x", true},
		{"sqlite:///a/b.db", "sqlite:///a/b.db", false},
		{"/a/b.db", "/a/b.db", false},
		{"%zz", "%zz", false},
		{"postgres://u:p%zz@h/d", "postgres" + hidden, true},
	} {
		got, had := URL(c.in)
		if got != c.want || had != c.had {
			t.Errorf("URL(%q) = %q, %v; want %q, %v", c.in, got, had, c.want, c.had)
		}
		if Has(got) {
			t.Errorf("URL(%q) = %q still has a credential", c.in, got)
		}
	}
}

func TestArgs(t *testing.T) {
	in := []string{"init", "--db", "postgres://u:pw1@h/d", "--db=postgres://h/d?password=pw2", "--store", "s3://b/p", "-C", "dir", "x"}
	got := Args(in)
	want := []string{"init", "--db", "postgres://u@h/d", "--db=postgres://h/d", "--store", "s3://b/p", "-C", "dir", "x"}
	if !slices.Equal(got, want) {
		t.Fatalf("Args = %q", got)
	}
	if in[2] != "postgres://u:pw1@h/d" {
		t.Fatal("Args changed its argument")
	}
	if g := Args([]string{"--db-postgres://u:pw@h/d"}); strings.Contains(g[0], "pw") {
		t.Fatalf("an argument that is no URL kept the secret: %q", g)
	}
}
